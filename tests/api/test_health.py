"""/healthz, /readyz, CORS."""

from service import create_app, migrate


def test_healthz(client):
    assert client.get("/healthz").json == {"status": "ok"}


def test_readyz_when_migrated(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json["revision"] == migrate.head_revision()


def test_readyz_before_migrations(empty_database):
    _backend, url = empty_database
    app = create_app({"database_url": url, "env": "testing"})
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.content_type == "application/problem+json"
    assert "run the migrations" in response.json["detail"]
    assert response.headers["Retry-After"]


def test_readyz_database_unreachable():
    app = create_app({"database_url": "postgresql://nobody@127.0.0.1:1/none", "env": "testing"})
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.json["detail"] == "The database is unreachable."


def test_cors_for_configured_origins_only(make_app):
    app = make_app(cors_origins=("https://learn.example.edu",))
    client = app.test_client()
    preflight = client.options("/api/v1/exercises/x/attempts", headers={
        "Origin": "https://learn.example.edu", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Content-Type, Idempotency-Key"})
    assert preflight.headers["Access-Control-Allow-Origin"] == "https://learn.example.edu"
    assert "idempotency-key" in preflight.headers["Access-Control-Allow-Headers"].lower()
    response = client.get("/api/v1/exercises", headers={"Origin": "https://learn.example.edu"})
    exposed = response.headers["Access-Control-Expose-Headers"].lower()
    assert "x-pagination" in exposed and "location" in exposed
    other = client.get("/api/v1/exercises", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers


def test_no_cors_by_default(client):
    response = client.get("/api/v1/exercises", headers={"Origin": "https://learn.example.edu"})
    assert "Access-Control-Allow-Origin" not in response.headers
