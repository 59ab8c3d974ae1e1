"""Where the CPU of a request goes, in-process: N requests (a quiz POST by default) through the
Flask test client on a fresh PostgreSQL (or SQLite) database with the production caches on, timed
by CPU (time.process_time, so other work on the machine moves the figure less than it moves
wall-clock ones), then the same N under cProfile (with a CPU timer) for the functions that take it.

    .venv/bin/python bench/profile_post.py [--database postgresql|sqlite] [-n 1000] [--top 30]
    .venv/bin/python bench/profile_post.py --request history     # GET a learner's 5 attempts
    .venv/bin/python bench/profile_post.py --request history --no-profile -n 3000   # the timing alone
    .venv/bin/python bench/profile_post.py --request page-history --learner-token   # as the learner page reads it

Requests (--request): `quiz` (a graded quiz POST with a new Idempotency-Key, as bench/api_load.py
sends), `history` (GET /api/v1/learners/{id}/attempts of a learner with 5 quiz attempts),
`page-history` (the same learner's attempts at the quiz, 50 a page, as the learner page reloads
them after each submission) and `exercise` (GET of the quiz exercise); and `event`, no request: the event a grading worker writes
beside a stored grade (`record_attempt_event` for an attempt it holds, and the commit). Prints
the CPU ms per request without the profiler, the statements one request runs, and the profile's
top functions. No HTTP server, no gunicorn: the request's own cost. The histories are read with the
API key, or with `--learner-token` with the learner's own token naming the quiz (the learner page's
credentials).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, event, text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_load import postgres_cpu_seconds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service import create_app, migrate
from service.auth import create_client
from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT
from service.database import dispose_engines
from service.extensions import db_session
from service.models import OVERRIDDEN_EVENT, Attempt, Role
from service.models.base import utcnow
from service.services.events import record_attempt_event

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/"
QUIZ, RIGHT = "backward-none-for-bounds", "none-each"


def fresh_database(kind: str, folder: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'profile.sqlite3'}"
    name = f"profile_{uuid.uuid4().hex[:8]}"
    with create_engine(POSTGRES + "postgres", isolation_level="AUTOCOMMIT").connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    return POSTGRES + name


def request_maker(app: Flask, http: FlaskClient, headers: dict[str, str], kind: str,
                  read_headers: dict[str, str] | None = None) -> Callable[[int], None]:
    """The request `kind` as a function of its number; seeds the learner whose history is read
    (read with `read_headers`, default `headers`)."""
    read_headers = read_headers or headers

    def post(i: int) -> None:
        # a new Idempotency-Key each time, as bench/api_load.py (and an LMS) sends them
        response = http.post(f"/api/v1/exercises/{QUIZ}/attempts",
                             headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
                             json={"learner": f"learner-{i % 500}", "answer": RIGHT})
        assert response.status_code == 201, response.get_json()

    def history(_i: int) -> None:
        response = http.get("/api/v1/learners/history-learner/attempts", headers=read_headers)
        assert response.status_code == 200 and len(response.get_json()["attempts"]) == 5, response.get_json()

    def page_history(_i: int) -> None:
        # what the learner page asks after each submission (frontend/src/learn/exercise.js)
        response = http.get(f"/api/v1/learners/history-learner/attempts?exercise={QUIZ}&page_size=50",
                            headers=read_headers)
        assert response.status_code == 200 and len(response.get_json()["attempts"]) == 5, response.get_json()

    def exercise(_i: int) -> None:
        assert http.get(f"/api/v1/exercises/{QUIZ}").status_code == 200

    for n in range(5):
        response = http.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=headers,
                             json={"learner": "history-learner", "answer": RIGHT if n % 2 else "omit"})
        assert response.status_code == 201, response.get_json()
    with app.app_context():  # the attempt as a worker holds it when it stores the grade
        attempt = db_session().get(Attempt, uuid.UUID(response.get_json()["id"]))
        assert attempt is not None
        db_session().expunge(attempt)

    def attempt_event(_i: int) -> None:
        # What a worker writes beside a stored grade (an override beside its score), and the commit.
        with app.app_context():
            session = db_session()
            record_attempt_event(session, attempt_id=attempt.id, client_id=attempt.client_id, lti_link_id=None,
                                 type=OVERRIDDEN_EVENT, at=utcnow(), attempt=attempt,
                                 data={"status": attempt.status, "score": 0.5, "correct": attempt.correct})
            session.commit()

    return {"quiz": post, "history": history, "page-history": page_history, "exercise": exercise,
            "event": attempt_event}[kind]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="cumulative")
    parser.add_argument("--request", choices=("quiz", "history", "page-history", "exercise", "event"), default="quiz")
    parser.add_argument("--learner-token", action="store_true",
                        help="read the histories with the learner's own token naming the quiz, not the API key")
    parser.add_argument("--no-profile", action="store_true", help="time the requests only, without cProfile")
    parser.add_argument("--dump", help="also write the profile to this file (pstats), to read its callers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = fresh_database(args.database, Path(folder))
        try:
            profile(url, args)
        finally:
            if args.database == "postgresql":
                dispose_engines()
                with create_engine(POSTGRES + "postgres", isolation_level="AUTOCOMMIT").connect() as conn:
                    conn.execute(text(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)'))


def profile(url: str, args: argparse.Namespace) -> None:
    """Make the app on `url`, then time and profile args.n requests of args.request."""
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

    read_headers = None
    if args.learner_token:
        minted = http.post("/api/v1/learner-tokens", headers=headers, json={"learner": "history-learner", "exercises": [QUIZ]})
        assert minted.status_code == 200, minted.get_json()
        read_headers = {"Authorization": f"Bearer {minted.get_json()['token']}"}
    run = request_maker(app, http, headers, args.request, read_headers)
    for i in range(200):  # warm: caches, compiled statements, connections
        run(i)
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_rest) -> None:
        statements.append(" ".join(statement.split())[:70])

    event.listen(engine, "before_cursor_execute", record)
    run(0)
    event.remove(engine, "before_cursor_execute", record)
    print(f"statements of one request ({len(statements)}):")
    for statement in statements:
        print(f"  {statement}")
    started, database_started = time.process_time(), postgres_cpu_seconds()
    for i in range(args.n):
        run(i)
    cpu, database_cpu = time.process_time() - started, postgres_cpu_seconds() - database_started
    print(f"CPU ms per request ({args.request}, {args.database}, {args.n} requests): {cpu * 1000 / args.n:.2f}"
          + (f"; the PostgreSQL server's: {database_cpu * 1000 / args.n:.2f}" if args.database == "postgresql" else ""))
    if args.no_profile:
        return
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for i in range(args.n):
        run(i)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats(args.sort).print_stats(args.top)
    if args.dump:
        stats.dump_stats(args.dump)


if __name__ == "__main__":
    main()
