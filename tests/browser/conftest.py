"""The dashboard in a real headless Chromium: the app served on a loopback port, on SQLite.

The browser is Debian's `chromium` (/usr/bin/chromium, or $CHROMIUM), driven by Playwright's
Python package; `playwright install` (which downloads a browser build) is never used. .ci/run
installs the package when it is missing. A machine without it fails these tests, naming what to
install: they are never skipped silently.

One server, one grading worker and one browser serve the whole module; each test gets a fresh
browser context (its own sessionStorage) and fails on any uncaught JavaScript error, any
alert/confirm dialog and any Content-Security-Policy violation on the page.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from service import create_app, migrate
from service.auth import create_client
from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT, Settings
from service.extensions import db_session
from service.models import Role

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
EXERCISES_DIR = PROJECT_ROOT / "exercises"
SCREENSHOTS = PROJECT_ROOT / "build" / "screenshots"
FRONTEND = PROJECT_ROOT / "frontend"


@dataclass
class LiveServer:
    url: str
    database_url: str
    app: Any
    keys: dict[str, str] = field(default_factory=dict)

    def api(self):
        """A test client on the same app and database (for seeding and checking through the API)."""
        return self.app.test_client()

    def wait_for_counters(self, timeout: float = 20) -> None:
        """Until the worker's folder has taken in every grade made so far (statistics up to date)."""
        from service.services import progress

        deadline = time.monotonic() + timeout
        while True:
            with self.app.app_context():
                if progress.counters_as_of(db_session()) is None:
                    return
            assert time.monotonic() < deadline, "the counters' folder did not catch up"
            time.sleep(0.05)

    def sync(self, folder: Path) -> None:
        """Sync exercises from `folder` (a changed answer key makes a new version); others stay."""
        exercises, problems = load_catalog(folder)
        assert not problems, problems
        with self.app.app_context():
            sync_catalog(db_session(), exercises, unpublish_missing=False)
            db_session().commit()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    database_url = f"sqlite:///{tmp_path_factory.mktemp('browser-db') / 'dashboard.sqlite3'}"
    migrate.upgrade(database_url)
    app = create_app({"database_url": database_url, "env": "testing"})
    exercises, problems = load_catalog(EXERCISES_DIR)
    assert not problems, problems
    keys = {}
    with app.app_context():
        sync_catalog(db_session(), exercises)
        for name, role in (("admin", Role.ADMIN), ("teacher", Role.INSTRUCTOR), ("lms-one", Role.CLIENT)):
            _client, keys[name] = create_client(db_session(), name, role)
        db_session().commit()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="dashboard-server", daemon=True)
    thread.start()
    try:
        yield LiveServer(f"http://127.0.0.1:{server.server_port}", database_url, app, keys)
    finally:
        server.shutdown()
        thread.join(timeout=10)
        from service.database import _engines

        for url in [u for u in _engines if u.endswith("dashboard.sqlite3")]:
            _engines.pop(url).dispose()


@pytest.fixture(scope="module")
def live_worker(live_server: LiveServer, grading_judge) -> Iterator[Any]:
    """A grading worker on the live server's database (code attempts and regrade items), with the
    statistics counters' folder beside it, as `flask worker` runs them."""
    from service.jobs.counters import CounterFolder
    from service.jobs.worker import Worker

    settings = Settings.from_env({}, database_url=live_server.database_url, env="testing", counters_fold_seconds=0.05)
    worker = Worker(settings, grading_judge, worker_id="browser-test-worker")
    stop = threading.Event()
    thread = threading.Thread(target=worker.serve, args=(stop,), name="dashboard-worker", daemon=True)
    thread.start()
    folder = CounterFolder(settings).start_thread(stop)
    yield worker
    stop.set()
    thread.join(timeout=30)
    folder.join(timeout=30)



@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pinned in requirements-dev.txt
        pytest.fail("The browser tests need Playwright's Python package: pip install -r requirements-dev.txt",
                    pytrace=False)
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        pytest.fail(f"No Chromium at {CHROMIUM}: install Debian's `chromium` (apt-get install chromium; .ci/run "
                    "does) or point $CHROMIUM at one", pytrace=False)
    with sync_playwright() as playwright:
        # launch() gives every run a fresh, temporary user-data-dir (profile), deleted on close.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, live_server: LiveServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A new tab in a fresh context on the live server, failing the test on JavaScript errors,
    dialogs (an injected `alert(1)` would be one) and CSP violations. The page as the test left it
    is saved in build/screenshots/<test>.png, to look at after a change to the dashboard."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900},
                                  accept_downloads=True, service_workers="block")
    # Nothing outside this server: the dashboard must not depend on another origin.
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith(live_server.url) or r.request.url.startswith(("blob:", "data:")):
            return r.continue_()
        outside.append(r.request.url)
        return r.abort()

    context.route("**/*", route)
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"uncaught error: {error}"))
    tab.on("dialog", lambda dialog: (problems.append(f"dialog {dialog.type}: {dialog.message}"), dialog.dismiss()))
    tab.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
           if message.type == "error" and "Content Security Policy" in message.text else None)
    yield tab
    try:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=SCREENSHOTS / f"{request.node.name}.png", full_page=True)
    except Exception as exc:  # a screenshot is for people to look at: it never fails a test
        print(f"no screenshot of {request.node.name}: {exc}")
    context.close()
    assert not outside, f"the page requested other origins: {outside}"
    assert not problems, problems


@pytest.fixture(scope="module")
def axe_source(request: pytest.FixtureRequest) -> str:
    """axe-core's axe.min.js at the version frontend/package-lock.json pins: from frontend/node_modules
    when it holds that version (make static installs it), else from the session's npm ci of the lockfile."""
    version = json.loads((FRONTEND / "package-lock.json").read_text())["packages"]["node_modules/axe-core"]["version"]
    installed = FRONTEND / "node_modules" / "axe-core"
    if not (installed / "package.json").exists() or json.loads((installed / "package.json").read_text())["version"] != version:
        installed = request.getfixturevalue("frontend_packages") / "node_modules" / "axe-core"
    return (installed / "axe.min.js").read_text()


def axe_violations(page, axe_source: str) -> list[dict]:
    """The serious and critical accessibility violations axe-core finds in `page` (a page or a frame)."""
    # evaluate() runs through the DevTools protocol, not as a page script: the page's CSP stays on.
    page.evaluate(axe_source + "\n;undefined")
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
    }""")
    return [v for v in result if v["impact"] in ("serious", "critical")]
