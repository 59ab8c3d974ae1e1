"""Where the CPU of a quiz POST goes, in-process: N posts through the Flask test client on a fresh
PostgreSQL (or SQLite) database with the production caches on, timed by CPU (time.process_time,
so other work on the machine moves the figure less than it moves wall-clock ones), then the same
N under cProfile (with a CPU timer) for the functions that take it.

    .venv/bin/python bench/profile_post.py [--database postgresql|sqlite] [-n 1000] [--top 30]

Prints the CPU ms per request without the profiler, the statements one POST runs, and the
profile's top functions by cumulative CPU. No HTTP server, no gunicorn: the request's own cost.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, event, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service import create_app, migrate
from service.auth import create_client
from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.models import Role

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/"
QUIZ, RIGHT = "backward-none-for-bounds", "none-each"


def fresh_database(kind: str, folder: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'profile.sqlite3'}"
    name = f"profile_{uuid.uuid4().hex[:8]}"
    with create_engine(POSTGRES + "postgres", isolation_level="AUTOCOMMIT").connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    return POSTGRES + name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="cumulative")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = fresh_database(args.database, Path(folder))
        migrate.upgrade(url)
        # The caches a production process has (testing turns them off); no rate limit in the way.
        app = create_app({"database_url": url, "env": "testing", "exercise_cache_seconds": 5,
                          "api_key_cache_seconds": 5, "attempts_rate_limit": "100000000/minute"})
        with app.app_context():
            sync_catalog(db_session(), load_catalog(PROJECT_ROOT / "exercises")[0])
            _client, key = create_client(db_session(), "profile", Role.CLIENT)
            db_session().commit()
            engine = db_session().get_bind()
        http = app.test_client()
        headers = {"Authorization": f"Bearer {key}"}

        def post(i: int) -> None:
            # a new Idempotency-Key each time, as bench/api_load.py (and an LMS) sends them
            response = http.post(f"/api/v1/exercises/{QUIZ}/attempts",
                                 headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
                                 json={"learner": f"learner-{i % 500}", "answer": RIGHT})
            assert response.status_code == 201, response.get_json()

        for i in range(200):  # warm: caches, compiled statements, connections
            post(i)
        statements: list[str] = []

        def record(_conn, _cursor, statement, *_rest) -> None:
            statements.append(" ".join(statement.split())[:70])

        event.listen(engine, "before_cursor_execute", record)
        post(0)
        event.remove(engine, "before_cursor_execute", record)
        print(f"statements of one POST ({len(statements)}):")
        for statement in statements:
            print(f"  {statement}")
        started = time.process_time()
        for i in range(args.n):
            post(i)
        print(f"CPU ms per request ({args.database}, {args.n} posts): {(time.process_time() - started) * 1000 / args.n:.2f}")
        profile = cProfile.Profile(time.process_time)
        profile.enable()
        for i in range(args.n):
            post(i)
        profile.disable()
        pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
