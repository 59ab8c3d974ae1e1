"""The web process never imports torch, nor alembic (whose mako and pygments weigh about 10 MB of a
web worker's RSS: the readiness probe reads the schema's revision without it)."""

import subprocess
import sys
import textwrap

from service import migrate
from service.config import PROJECT_ROOT


def test_serving_requests_does_not_import_torch_nor_alembic(tmp_path):
    url = f"sqlite:///{tmp_path / 'web.sqlite3'}"
    migrate.upgrade(url)  # here, not in the serving process
    script = textwrap.dedent(f"""
        import sys
        from service import create_app
        url = "{url}"
        app = create_app({{"database_url": url, "env": "testing"}})
        runner = app.test_cli_runner()
        assert runner.invoke(args=["exercises", "sync"]).exit_code == 0
        client = app.test_client()
        assert client.get("/readyz").json["revision"] == "{migrate.head_revision()}"
        for path in ["/api/v1/exercises?page_size=100", "/api/v1/exercises/backward-none-for-bounds", "/api/v1/openapi.json"]:
            assert client.get(path).status_code == 200, path
        for item in client.get("/api/v1/exercises?page_size=100").json:
            assert client.get("/api/v1/exercises/" + item["slug"]).status_code == 200
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in {{"torch", "numpy", "alembic", "mako", "pygments"}})
        print(heavy)
        sys.exit(1 if heavy else 0)
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
