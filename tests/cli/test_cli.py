"""`flask clients …` and `flask db …`."""

from sqlalchemy import select

from service.extensions import db_session
from service.models import ApiClient
from tests.helpers import bearer


def run(app, *args):
    return app.test_cli_runner().invoke(args=list(args))


def test_create_prints_the_key_once_and_stores_only_its_hash(bare_app):
    result = run(bare_app, "clients", "create", "canvas-prod", "--role", "client")
    assert result.exit_code == 0, result.output
    key = result.output.strip().splitlines()[-1]
    assert key.startswith("gq_") and len(key) > 40
    with bare_app.app_context():
        stored = db_session().scalar(select(ApiClient).where(ApiClient.name == "canvas-prod"))
        columns = [getattr(stored, c.key) for c in ApiClient.__table__.columns]
    assert key not in [str(v) for v in columns]
    assert stored.role == "client" and key.startswith(stored.key_prefix)
    assert bare_app.test_client().get("/api/v1/learners/ada/attempts", headers=bearer(key)).status_code == 200
    listed = run(bare_app, "clients", "list").output
    assert "canvas-prod" in listed and key not in listed


def test_duplicate_name_and_bad_role(bare_app):
    run(bare_app, "clients", "create", "moodle")
    again = run(bare_app, "clients", "create", "moodle")
    assert again.exit_code != 0 and "exists already" in again.output
    bad = run(bare_app, "clients", "create", "x", "--role", "root")
    assert bad.exit_code != 0


def _printed_keys(output: str) -> dict[str, str]:
    """{role: key} of the keys `ensure-dev` printed ("development <role> key (...): gq_...")."""
    return {line.split()[1]: line.split()[-1] for line in output.splitlines() if line.split()[-1].startswith("gq_")}


def test_ensure_dev_creates_a_client_key_for_the_api_and_an_admin_key_once(bare_app):
    first = run(bare_app, "clients", "ensure-dev").output
    keys = _printed_keys(first)
    assert set(keys) == {"client", "admin"}
    assert "for the API" in first and "for the dashboard" in first
    http = bare_app.test_client()
    # The client key tries the API; only the admin key reads the dashboard's API.
    assert http.get("/api/v1/learners/ada/attempts", headers=bearer(keys["client"])).status_code == 200
    assert http.get("/api/v1/admin/stats", headers=bearer(keys["client"])).status_code == 403
    assert http.get("/api/v1/admin/stats", headers=bearer(keys["admin"])).status_code == 200
    second = run(bare_app, "clients", "ensure-dev").output
    assert not _printed_keys(second) and second.count("created earlier") == 2
    assert not any(key in second for key in keys.values())
    with bare_app.app_context():
        roles = sorted(c.role for c in db_session().scalars(select(ApiClient)))
    assert roles == ["admin", "client"]


def test_ensure_dev_adds_the_client_key_to_a_checkout_that_has_the_admin_key(bare_app):
    run(bare_app, "clients", "create", "development", "--role", "admin")  # made by an older make run
    output = run(bare_app, "clients", "ensure-dev").output
    assert set(_printed_keys(output)) == {"client"} and "admin key (for the dashboard): created earlier" in output


def test_revoke_stops_the_key_at_once(bare_app):
    key = run(bare_app, "clients", "create", "leaked").output.strip().splitlines()[-1]
    client = bare_app.test_client()
    assert client.get("/api/v1/learners/ada/attempts", headers=bearer(key)).status_code == 200
    assert run(bare_app, "clients", "revoke", "leaked").exit_code == 0
    assert client.get("/api/v1/learners/ada/attempts", headers=bearer(key)).status_code == 401
    assert "revoked" in run(bare_app, "clients", "list").output
    assert run(bare_app, "clients", "revoke", "nobody").exit_code != 0


def _learner_link(output: str) -> tuple[str, str, str]:
    """(address, token, learner) of the link `clients dev-link` printed ("Learner: http://.../learn#token=...")."""
    from urllib.parse import parse_qs, urlsplit

    line = next(line for line in output.splitlines() if line.startswith("Learner:"))
    parts = urlsplit(line.split()[-1])
    fragment = parse_qs(parts.fragment)
    return f"{parts.scheme}://{parts.netloc}{parts.path}", fragment["token"][0], fragment["learner"][0]


def test_dev_link_signs_a_development_learner_in_at_once(app):
    assert run(app, "clients", "ensure-dev").exit_code == 0
    result = run(app, "clients", "dev-link", "--base-url", "http://127.0.0.1:8123/")
    assert result.exit_code == 0, result.output
    address, token, learner = _learner_link(result.output)
    assert address == "http://127.0.0.1:8123/learn" and learner == "developer"
    assert "gq_" not in result.output  # the client key was shown by ensure-dev, once
    http = app.test_client()
    run_made = http.post("/api/v1/runs", headers=bearer(token), json={"code": "print(1)", "wait": 0})
    assert run_made.status_code == 202, run_made.json
    progress = http.get("/api/v1/progress", headers=bearer(token)).json
    assert progress["learner"] == "developer"
    assert len(progress["exercises"]) == len(http.get("/api/v1/exercises?page_size=100").json)  # every exercise


def test_dev_link_is_refused_in_production(make_app):
    production = make_app(env="production", secret_key="s" * 32)
    result = run(production, "clients", "dev-link")
    assert result.exit_code != 0 and "refused with ENV=production" in result.output
    assert "Learner:" not in result.output and "token=" not in result.output
    with production.app_context():
        assert db_session().scalar(select(ApiClient)) is None  # nothing made either
