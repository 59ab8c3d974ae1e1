"""PostgreSQL stopped and started again under a load of quiz attempts: fail fast, recover, lose nothing.

    .venv/bin/python bench/db_fault.py
    .venv/bin/python bench/db_fault.py --before 3 --down 3 --after 3 --stop-mode fast

A private PostgreSQL 15 cluster is made for the run (initdb in a temporary directory, trust auth
on 127.0.0.1, a free port; run as the postgres user when this runs as root), so the shared server
on :5432 is never touched. gradquiz is set up on it as a deployment is (`flask db upgrade`,
`flask exercises sync`, `flask clients create`) and served by gunicorn with the deployed settings
(gunicorn.conf.py). Client threads (--clients) POST quiz answers, each with a new learner and
Idempotency-Key, and record every response. After --before seconds the cluster is stopped
(`pg_ctl stop -m immediate` by default: a crash, committed work must come back from the WAL),
kept down --down seconds, and started; the load goes on --after seconds past the first 201.
A client pauses 0.1 s after a 503 (far less than Retry-After, to see recovery to the tenth of a
second).

Checks (the exit status is 1 if any fails):
- every response is 201, or 503 application/problem+json with Retry-After: any other status,
  body or a socket error fails;
- the 503s of requests sent while PostgreSQL is down are fast: the slowest at most --fail-fast-ms
  (default 1000 ms), not a hang until a timeout (a request in flight at the stop is answered 503
  too, but its latency is mostly the work it had done before);
- the service recovers without a restart: a 201 within --recovery-limit seconds of PostgreSQL
  accepting connections again, and the same gunicorn workers before and after;
- every attempt answered 201 is in the database afterwards (looked up by id).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

from grading import stats
from http_grading import (
    children,
    free_port,
    prepare_database,
    remove_unless_failed,
    start_gunicorn,
    stop_processes,
    wait_ready,
)

PG_BIN = Path("/usr/lib/postgresql/15/bin")
QUIZ_SLUG, RIGHT = "call-through-apply", "apply"
PROBLEM_JSON = "application/problem+json"
PAUSE_AFTER_503 = 0.1
REQUEST_TIMEOUT = 30.0


class Cluster:
    """A throwaway PostgreSQL cluster: initdb, start, stop; postgres refuses to run as root."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port, self.data = root, port, root / "data"
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_postgres:
            shutil.chown(root, "postgres", "postgres")
        subprocess.run(self.as_postgres + [str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres",
                                           "--auth=trust", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True)
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(self.as_postgres + [str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", *args],
                       check=True, capture_output=True)

    def start(self) -> None:
        # Its socket in its own directory: nothing else in /var/run/postgresql is touched either.
        self._pg_ctl("-l", str(self.root / "postgres.log"), "-o",
                     f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1", "start")

    def stop(self, mode: str) -> None:
        self._pg_ctl("-m", mode, "stop")


@dataclass
class Outcome:
    started: float
    ended: float
    status: int | None  # None: no HTTP response (socket error or timeout)
    content_type: str
    retry_after: str | None
    body: dict | str

    @property
    def ms(self) -> float:
        return (self.ended - self.started) * 1000

    @property
    def answered(self) -> bool:
        return self.status in (201, 202)

    @property
    def problem_503(self) -> bool:
        return (self.status == 503 and self.content_type.startswith(PROBLEM_JSON) and bool(self.retry_after)
                and isinstance(self.body, dict) and self.body.get("status") == 503)


def post_attempt(conn: http.client.HTTPConnection, key: str, learner: str) -> Outcome:
    body = json.dumps({"learner": learner, "answer": RIGHT})
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
               "Idempotency-Key": uuid.uuid4().hex}
    started = time.monotonic()
    try:
        conn.request("POST", f"/api/v1/exercises/{QUIZ_SLUG}/attempts", body, headers)
        response = conn.getresponse()
        raw = response.read()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()  # the next request opens a new connection
        return Outcome(started, time.monotonic(), None, "", None, f"{type(exc).__name__}: {exc}")
    ended = time.monotonic()
    try:
        parsed: dict | str = json.loads(raw)
    except ValueError:
        parsed = raw[:200].decode(errors="replace")
    return Outcome(started, ended, response.status, response.getheader("Content-Type", ""),
                   response.getheader("Retry-After"), parsed)


def load(port: int, key: str, clients: int, stop: threading.Event) -> tuple[list[Outcome], list[threading.Thread]]:
    """Start `clients` threads POSTing until `stop` is set; their outcomes go into the returned list."""
    outcomes: list[Outcome] = []

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        sent = 0
        while not stop.is_set():
            sent += 1
            outcome = post_attempt(conn, key, f"fault-{n}-{sent}")
            outcomes.append(outcome)  # list.append is atomic
            if outcome.status == 503:
                time.sleep(PAUSE_AFTER_503)
        conn.close()

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for t in threads:
        t.start()
    return outcomes, threads


def wait_for_201_after(outcomes: list[Outcome], since: float, limit: float) -> Outcome | None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        first = next((o for o in list(outcomes) if o.answered and o.started >= since), None)
        if first is not None:
            return first
        time.sleep(0.02)
    return None


def stored_ids(url: str, ids: list[str]) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id::text FROM attempts WHERE id = ANY(%s::uuid[])", (ids,)).fetchall()
    return {r[0] for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16, help="client threads")
    parser.add_argument("--before", type=float, default=5, help="seconds of load before the stop")
    parser.add_argument("--down", type=float, default=5, help="seconds PostgreSQL stays down")
    parser.add_argument("--after", type=float, default=5, help="seconds of load after the first 201 once it is up")
    parser.add_argument("--stop-mode", choices=("immediate", "fast"), default="immediate",
                        help="pg_ctl stop mode: immediate is a crash (WAL recovery at start), fast a clean stop")
    parser.add_argument("--fail-fast-ms", type=float, default=1000, help="the slowest 503 allowed")
    parser.add_argument("--recovery-limit", type=float, default=10,
                        help="seconds from PostgreSQL up to the first 201 allowed")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-bench-fault-"))
    cluster = Cluster(tmp, free_port())
    api_port = free_port()
    env = {**os.environ, "ENV": "production", "SECRET_KEY": uuid.uuid4().hex * 2, "DATABASE_URL": cluster.url,
           "BIND": f"127.0.0.1:{api_port}", "ATTEMPTS_RATE_LIMIT": "100000/second", "METRICS_TOKEN": uuid.uuid4().hex}
    log_path = tmp / "gunicorn.log"
    web = None
    stop = threading.Event()
    ok = False
    try:
        cluster.start()
        key = prepare_database(env)
        with open(log_path, "w") as log:
            web = start_gunicorn(env, log)
        wait_ready(api_port, "/readyz", log_path)
        workers_before = sorted(children(web.pid))
        print(f"private PostgreSQL 15 at 127.0.0.1:{cluster.port} ({tmp}); gunicorn {len(workers_before)} workers "
              f"x {env.get('WEB_THREADS', '16')} threads (gunicorn.conf.py); {args.clients} client threads POST quiz "
              "answers, each a new learner and Idempotency-Key", flush=True)

        outcomes, threads = load(api_port, key, args.clients, stop)
        t0 = time.monotonic()
        time.sleep(args.before)
        stopping = time.monotonic()
        cluster.stop(args.stop_mode)
        stopped = time.monotonic()
        time.sleep(args.down)
        starting = time.monotonic()
        cluster.start()
        up = time.monotonic()
        first = wait_for_201_after(outcomes, up, args.recovery_limit)
        time.sleep(args.after)
        stop.set()
        for t in threads:
            t.join(REQUEST_TIMEOUT + 5)
        workers_after = sorted(children(web.pid))

        with open(tmp / "outcomes.jsonl", "w") as f:  # for a failed run's post-mortem
            f.writelines(json.dumps({"start_s": round(o.started - t0, 4), "ms": round(o.ms, 1), "status": o.status,
                                    "content_type": o.content_type, "retry_after": o.retry_after,
                                    "body": o.body}) + "\n" for o in outcomes)
        answered = [o for o in outcomes if o.answered]
        refused = [o for o in outcomes if o.problem_503]
        other = [o for o in outcomes if not o.answered and not o.problem_503]
        ids = [o.body["id"] for o in answered]
        found = stored_ids(cluster.url, ids)
        late_503 = [o for o in refused if first is not None and o.started > first.ended]
        # The 503s of requests sent while PostgreSQL was down: a request in flight when it stopped
        # had already spent its time (the stop only ended it), so it says nothing of failing fast.
        while_down = [o for o in refused if stopped <= o.started <= up]

        print(f"timeline, s from the first request: stop at {stopping - t0:.1f} (pg_ctl stop -m {args.stop_mode} took "
              f"{stopped - stopping:.2f} s), start at {starting - t0:.1f}, accepting connections at {up - t0:.1f} "
              f"(pg_ctl start took {up - starting:.2f} s), load stopped at {time.monotonic() - t0:.1f}")
        print(f"responses: {len(outcomes):,}; 201: {len(answered):,}; 503 problem+json with Retry-After: "
              f"{len(refused):,}; anything else: {len(other)}")
        for o in other[:5]:
            print(f"  other: status {o.status} {o.content_type!r} Retry-After {o.retry_after!r} after {o.ms:.0f} ms: "
                  f"{str(o.body)[:200]}")
        for name, group in (("201", answered), ("503, all", refused), ("503, sent while PostgreSQL was down", while_down)):
            if group:
                s = stats([o.ms for o in group])
                print(f"{name} latency: p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms, "
                      f"max {max(o.ms for o in group):.1f} ms (n={len(group):,})")
        slowest_503 = max((o.ms for o in while_down), default=0.0)
        recovery = None if first is None else first.ended - up
        print("recovery: " + (f"first 201 {recovery:.2f} s after PostgreSQL accepted connections again; "
                              f"{len(late_503)} 503s after it" if first is not None
                              else f"no 201 within {args.recovery_limit:.0f} s of PostgreSQL coming back"))
        print(f"durability: {len(found):,} of the {len(ids):,} attempts answered 201 are in the database")
        print(f"web workers before and after: {workers_before} {workers_after}")
        checks = {
            "every response 201 or 503 problem+json with Retry-After": not other,
            f"503s fast while down (slowest {slowest_503:.0f} ms <= {args.fail_fast_ms:.0f} ms)":
                bool(while_down) and slowest_503 <= args.fail_fast_ms,
            f"recovered without a restart (first 201 within {args.recovery_limit:.0f} s, same workers)":
                first is not None and workers_before == workers_after,
            "every attempt answered 201 stored": len(found) == len(ids),
        }
        for name, passed in checks.items():
            print(f"{'ok  ' if passed else 'FAIL'} {name}")
        if not while_down:
            print("(no request was sent while PostgreSQL was down: --down longer?)")
        ok = all(checks.values())
    finally:
        stop.set()
        stop_processes([web] if web else [])
        try:
            cluster.stop("immediate")
        except subprocess.CalledProcessError:
            pass  # not running
        remove_unless_failed(tmp, ok)  # the PostgreSQL and gunicorn logs, outcomes.jsonl
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
