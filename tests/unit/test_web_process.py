"""The web process never imports torch."""

import subprocess
import sys
import textwrap

from service.config import PROJECT_ROOT


def test_serving_requests_does_not_import_torch(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        from service import create_app, migrate
        url = "sqlite:///{tmp_path / 'web.sqlite3'}"
        migrate.upgrade(url)
        app = create_app({{"database_url": url, "env": "testing"}})
        runner = app.test_cli_runner()
        assert runner.invoke(args=["exercises", "sync"]).exit_code == 0
        client = app.test_client()
        for path in ["/api/v1/exercises?page_size=100", "/api/v1/exercises/backward-none-for-bounds", "/api/v1/openapi.json"]:
            assert client.get(path).status_code == 200, path
        for item in client.get("/api/v1/exercises?page_size=100").json:
            assert client.get("/api/v1/exercises/" + item["slug"]).status_code == 200
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in {{"torch", "numpy"}})
        print(heavy)
        sys.exit(1 if heavy else 0)
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
