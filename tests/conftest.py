"""Fixtures: a migrated database per backend, a fresh app per test, API keys.

Every test that uses `app` runs once on SQLite and once on PostgreSQL. TEST_DATABASES picks the
backends (default "sqlite,postgresql"); TEST_POSTGRES_URL names the server (default: the local
one, database `test`). A PostgreSQL that does not answer fails the run: it is never skipped
silently.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from service import create_app, migrate
from service.auth import create_client
from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.models import Base, Role
from tests.helpers import node_tool

BACKENDS = [b.strip() for b in os.environ.get("TEST_DATABASES", "sqlite,postgresql").split(",") if b.strip()]
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
EXERCISES_DIR = PROJECT_ROOT / "exercises"


def _postgres_database() -> Iterator[str]:
    """A new, empty database on the PostgreSQL server, dropped afterwards."""
    admin_url = make_url(POSTGRES_URL)
    name = f"gradquiz_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # the suite must not pass without the real server
        pytest.fail(f"PostgreSQL at {admin_url.render_as_string(hide_password=True)} is not usable ({exc}); "
                    "start it (see .ci/run) or set TEST_DATABASES=sqlite", pytrace=False)
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        from service.database import _engines

        engine = _engines.pop(admin_url.set(database=name).render_as_string(hide_password=False), None)
        if engine is not None:
            engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _sqlite_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.sqlite3'}"


@pytest.fixture(scope="session")
def empty_database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(backend, url) of a new database with no tables: for migration tests."""
    backend = request.param
    source = _postgres_database() if backend == "postgresql" else _sqlite_database(tmp_path_factory)
    yield backend, next(source)
    next(source, None)


@pytest.fixture(scope="session")
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database migrated to head, shared by the tests of one backend."""
    backend = request.param
    source = _postgres_database() if backend == "postgresql" else _sqlite_database(tmp_path_factory)
    url = next(source)
    migrate.upgrade(url)
    yield url
    next(source, None)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # @pytest.mark.backends("postgresql"): a slow test whose subject does not depend on the
    # database runs on the production one only.
    marker = metafunc.definition.get_closest_marker("backends")
    backends = [b for b in BACKENDS if marker is None or b in marker.args]
    for name in ("database_url", "empty_database"):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, backends, indirect=True, scope="session")


def _clear(app) -> None:
    with app.app_context():
        session = db_session()
        for table in reversed(Base.metadata.sorted_tables):
            session.execute(table.delete())
        session.commit()


@pytest.fixture
def make_app(database_url: str):
    """Build apps on the test database; every row is deleted after the test."""
    apps = []

    def factory(**config):
        app = create_app({"database_url": database_url, "env": "testing", **config})
        apps.append(app)
        return app

    yield factory
    if apps:
        _clear(apps[0])


@pytest.fixture
def bare_app(make_app):
    """An app over an empty catalog."""
    return make_app()


@functools.cache
def repository_catalog() -> tuple[list, list]:
    """exercises/ as the catalog loads it: read once per session (it does not change while the tests
    run; ExerciseFile is frozen), not once per app (70 ms for the 52 exercises)."""
    return load_catalog(EXERCISES_DIR)


@pytest.fixture
def app(bare_app):
    """An app with the repository's exercises synced."""
    exercises, problems = repository_catalog()
    assert not problems, problems
    with bare_app.app_context():
        sync_catalog(db_session(), exercises)
        db_session().commit()
    return bare_app


@pytest.fixture
def client(app):
    return app.test_client()


def _key(app, name: str, role: Role) -> str:
    with app.app_context():
        _client, key = create_client(db_session(), name, role)
        db_session().commit()
    return key


@pytest.fixture
def client_key(app) -> str:
    return _key(app, "lms-one", Role.CLIENT)


@pytest.fixture
def other_client_key(app) -> str:
    return _key(app, "lms-two", Role.CLIENT)


@pytest.fixture
def admin_key(app) -> str:
    return _key(app, "admin", Role.ADMIN)


@pytest.fixture
def quiz_catalog() -> dict[str, dict]:
    """The repository's quiz exercises by slug: {kind, spec}."""
    exercises, _ = repository_catalog()
    return {e.slug: e.spec for e in exercises if e.spec["kind"] != "code"}


@pytest.fixture
def client_key_for():
    """Make a client key on a given app (for tests that build their own catalog)."""

    def make(app, name: str = "lms-one", role: Role = Role.CLIENT) -> str:
        with app.app_context():
            _client, key = create_client(db_session(), name, role)
            db_session().commit()
        return key

    return make


GRADING_SECRET = b"api-tests-grading-secret-0123456789"


@pytest.fixture(scope="session")
def grading_judge():
    """One warm judge (and zygote) for every API test that grades code."""
    from service.grading.judge import Judge

    with Judge(GRADING_SECRET, slots=1, timeout=10.0) as judge:
        yield judge


@pytest.fixture
def worker(app, database_url, grading_judge):
    """A grading worker claiming jobs from the test database, in a thread of this process."""
    import threading

    from service.config import Settings
    from service.jobs.worker import Worker

    settings = Settings.from_env({}, database_url=database_url, env="testing")
    grading_worker = Worker(settings, grading_judge, worker_id="test-worker")
    stop = threading.Event()
    thread = threading.Thread(target=grading_worker.serve, args=(stop,), daemon=True)
    thread.start()
    yield grading_worker
    stop.set()
    thread.join(timeout=30)


@pytest.fixture(scope="session")
def frontend_packages(tmp_path_factory) -> Path:
    """A copy of frontend/ (without its node_modules) with the lockfile's packages installed by
    `npm ci`, once per session: the bundle test builds in it, the TypeScript client test and the
    accessibility check take their tools from it. --prefer-offline: from npm's cache when it holds
    the locked tarballs (their hashes still checked)."""
    work = tmp_path_factory.mktemp("frontend") / "frontend"
    shutil.copytree(PROJECT_ROOT / "frontend", work, ignore=shutil.ignore_patterns("node_modules"))
    done = subprocess.run([node_tool("npm"), "ci", "--prefer-offline", "--include=dev", "--no-audit", "--no-fund"],
                          cwd=work, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"npm ci failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return work
