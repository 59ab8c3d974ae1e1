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


def test_ensure_dev_creates_one_admin_key_once(bare_app):
    first = run(bare_app, "clients", "ensure-dev").output
    key = first.strip().split()[-1]
    assert key.startswith("gq_")
    second = run(bare_app, "clients", "ensure-dev").output
    assert key not in second and "created earlier" in second
    with bare_app.app_context():
        admins = db_session().scalars(select(ApiClient).where(ApiClient.role == "admin")).all()
    assert len(admins) == 1


def test_revoke_stops_the_key_at_once(bare_app):
    key = run(bare_app, "clients", "create", "leaked").output.strip().splitlines()[-1]
    client = bare_app.test_client()
    assert client.get("/api/v1/learners/ada/attempts", headers=bearer(key)).status_code == 200
    assert run(bare_app, "clients", "revoke", "leaked").exit_code == 0
    assert client.get("/api/v1/learners/ada/attempts", headers=bearer(key)).status_code == 401
    assert "revoked" in run(bare_app, "clients", "list").output
    assert run(bare_app, "clients", "revoke", "nobody").exit_code != 0
