"""One learner's submissions all at once, against gunicorn as deployed (issue 33, finding 7).

A double-clicked Submit, a frontend's retries, an anonymous frontend using one learner id, a
script: N quiz answers of one learner sent together to gunicorn with the deployed settings
(gunicorn.conf.py: several worker processes, so the submissions race across processes, which the
in-process test, tests/api/test_simultaneous_attempts.py, cannot show), on a fresh SQLite or
PostgreSQL database. Prints the answers' statuses, how many were stored, and whether the stored
attempt numbers are exactly 1..stored. Exits 1 on a 5xx other than a 503 with Retry-After, or on a
gap or duplicate. Not a timing: a count of outcomes.

    .venv/bin/python bench/one_learner_burst.py [--database sqlite|postgresql] [--requests 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import uuid
from collections import Counter
from pathlib import Path

from sqlalchemy import create_engine, text

from http_grading import free_port, prepare_database, start_gunicorn, stop_processes, wait_ready

ROOT = Path(__file__).resolve().parents[1]
ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
QUIZ, RIGHT = "backward-none-for-bounds", "none-each"


def burst(port: int, key: str, learner: str, requests: int) -> list[tuple[int, str | None]]:
    """`requests` POSTs of one learner's answer, each on its own connection, released together."""
    start = threading.Barrier(requests)
    answers: list[tuple[int, str | None]] = [(0, None)] * requests
    body = json.dumps({"learner": learner, "answer": RIGHT})

    def post(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.connect()
        start.wait()
        conn.request("POST", f"/api/v1/exercises/{QUIZ}/attempts", body=body,
                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        answers[n] = (response.status, response.getheader("Retry-After"))
        conn.close()

    threads = [threading.Thread(target=post, args=(n,)) for n in range(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def stored_numbers(port: int, key: str, learner: str) -> list[int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    numbers: list[int] = []
    page = 1
    while True:
        conn.request("GET", f"/api/v1/learners/{learner}/attempts?page_size=100&page={page}",
                     headers={"Authorization": f"Bearer {key}"})
        answer = json.loads(conn.getresponse().read())
        numbers += [attempt["attempt_number"] for attempt in answer["attempts"]]
        if len(answer["attempts"]) < 100:
            return sorted(numbers)
        page += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-burst-"))
    database = None
    if args.database == "sqlite":
        url = f"sqlite:///{tmp / 'burst.sqlite3'}"
    else:
        database = f"gradquiz_burst_{uuid.uuid4().hex[:8]}"
        admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{database}"'))
        url = ADMIN_URL.rsplit("/", 1)[0] + f"/{database}"
    port = free_port()
    # The rate limit is the deployment's own answer to a flood; here the race is what is measured.
    env = {**os.environ, "DATABASE_URL": url, "BIND": f"127.0.0.1:{port}", "ATTEMPTS_RATE_LIMIT": "100000/minute",
           "SECRET_KEY": "one-learner-burst-" + uuid.uuid4().hex}
    failed = False
    log_path = tmp / "gunicorn.log"
    with open(log_path, "w") as log:
        key = prepare_database(env)
        web = start_gunicorn(env, log)
        try:
            wait_ready(port, "/healthz", log_path)
            for round_ in range(1, args.rounds + 1):
                learner = f"burst-{round_}"
                answers = burst(port, key, learner, args.requests)
                statuses = Counter(status for status, _ in answers)
                numbers = stored_numbers(port, key, learner)
                bad = [(s, r) for s, r in answers if s >= 500 and not (s == 503 and r)]
                in_order = numbers == list(range(1, len(numbers) + 1))
                stored_201 = statuses.get(201, 0) == len(numbers)
                failed |= bool(bad) or not in_order or not stored_201
                print(f"{args.database} round {round_}: {args.requests} POSTs of one learner at once: "
                      f"{dict(sorted(statuses.items()))}; stored {len(numbers)}, numbers 1..{len(numbers)} "
                      f"{'without' if in_order else 'WITH'} a gap or duplicate"
                      f"{'' if stored_201 else '; stored != 201s'}")
        finally:
            stop_processes([web])
    if database is not None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    if failed:
        print(f"logs kept in {tmp}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
