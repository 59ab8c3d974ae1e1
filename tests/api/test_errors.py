"""Every error is problem+json: unknown routes and methods, server errors, a lost database."""

import pytest
from sqlalchemy.exc import OperationalError

from service.extensions import db_session
from tests.helpers import bearer


def test_unknown_route(client):
    response = client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.content_type == "application/problem+json"
    assert response.json["title"] == "Not Found"


def test_unknown_method_keeps_the_allow_header(client):
    response = client.delete("/api/v1/exercises")
    assert response.status_code == 405
    assert response.content_type == "application/problem+json"
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "HEAD", "OPTIONS"}


def test_server_error_shows_no_traceback(make_app):
    app = make_app()

    @app.route("/boom")
    def boom():
        raise RuntimeError("secret internals at /srv/app.py line 3")

    app.config["PROPAGATE_EXCEPTIONS"] = False
    response = app.test_client().get("/boom")
    assert response.status_code == 500
    assert response.content_type == "application/problem+json"
    text = response.get_data(as_text=True)
    assert "Traceback" not in text and "secret internals" not in text


def test_database_outage_is_a_503_with_retry_after(app, client, client_key, monkeypatch):
    from service.resources import attempts

    def unavailable(*_args, **_kwargs):
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    monkeypatch.setattr(attempts, "wait_until_finished", unavailable)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    response = client.get("/api/v1/attempts/00000000-0000-4000-8000-000000000000", headers=bearer(client_key))
    assert response.status_code == 503
    assert response.content_type == "application/problem+json"
    assert response.headers["Retry-After"] == "2"


def test_database_lost_during_a_write_is_still_a_503(app, client, client_key, database_url):
    # The database going away at the attempt's write (bench/db_fault.py found it): the session
    # expires the client it loaded, and nothing after the error handler may query it again (a 500).
    from sqlalchemy import event, func, select

    from service.database import engine_for
    from service.models import Attempt

    def connection_lost(_conn, _cursor, statement, *_rest):
        if "INSERT INTO attempts" in statement:
            raise OperationalError("INSERT", {}, Exception("terminating connection due to administrator command"))

    engine = engine_for(database_url)
    event.listen(engine, "before_cursor_execute", connection_lost)
    try:
        app.config["PROPAGATE_EXCEPTIONS"] = False
        response = client.post("/api/v1/exercises/call-through-apply/attempts",
                               json={"learner": "ada", "answer": "apply"}, headers=bearer(client_key))
    finally:
        event.remove(engine, "before_cursor_execute", connection_lost)
    assert response.status_code == 503
    assert response.content_type == "application/problem+json"
    assert response.headers["Retry-After"] == "2"
    with app.app_context():
        assert db_session().scalar(select(func.count()).select_from(Attempt)) == 0


@pytest.mark.parametrize("path", ["/api/v1/openapi.json", "/api/docs"])
def test_docs_are_served(client, path):
    assert client.get(path).status_code == 200


def test_openapi_documents_problems_and_security(client):
    spec = client.get("/api/v1/openapi.json").json
    assert spec["openapi"].startswith("3.")
    post = spec["paths"]["/api/v1/exercises/{slug}/attempts"]["post"]
    assert post["security"] == [{"bearerAuth": []}]
    assert {"201", "404", "422"} <= set(post["responses"])
    assert "Idempotency-Key" in [p["name"] for p in post["parameters"] if p["in"] == "header"]
    assert "bearerAuth" in spec["components"]["securitySchemes"]
    # Public reads declare no security requirement.
    assert "security" not in spec["paths"]["/api/v1/exercises"]["get"]


def test_unknown_method_with_a_body_is_still_405(client):
    # A PUT with a form body must get 405 (method), not 415 (body type).
    response = client.put("/api/v1/exercises", data="x=1", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 405 and "Allow" in response.headers


def test_a_page_far_past_the_end_is_empty_not_an_error(client):
    response = client.get("/api/v1/exercises?page=77866980812692111360")
    assert response.status_code == 200 and response.json == []


def test_openapi_documents_errors_as_problem_json(client):
    spec = client.get("/api/v1/openapi.json").json
    post = spec["paths"]["/api/v1/exercises/{slug}/attempts"]["post"]["responses"]
    for status in ("401", "404", "413", "415"):
        assert "application/problem+json" in post[status]["content"], status
    responses = spec["components"]["responses"]
    assert "application/problem+json" in responses["UNPROCESSABLE_ENTITY"]["content"]
    assert [name for name, r in responses.items()
            if "content" in r and "application/problem+json" not in r["content"]] == []
    assert spec["components"]["headers"]["PAGINATION"]["schema"] == {"type": "string"}
    # An attempt's body is one of two components, each requiring its field.
    body = spec["paths"]["/api/v1/exercises/{slug}/attempts"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"oneOf": [{"$ref": "#/components/schemas/QuizAttemptCreate"},
                              {"$ref": "#/components/schemas/CodeAttemptCreate"}]}
    schemas = spec["components"]["schemas"]
    for name, field in (("QuizAttemptCreate", "answer"), ("CodeAttemptCreate", "code")):
        assert (schemas[name]["required"], schemas[name]["additionalProperties"]) == ([field], False), name
