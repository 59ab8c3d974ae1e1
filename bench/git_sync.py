"""The 33 built-in exercises synced as a course's git repository (issue 34: "in at most 90 s on this
2-core machine").

Every exercise folder of exercises/ is committed to a bare repository served on loopback by
`git http-backend` (tests/git_server.py, asking for a deploy token as a private repository's host
does). The service runs as `make run` runs it: gunicorn with the deployed settings and `flask worker`
(two grading worker processes, whose supervisor runs the git syncs), on a fresh SQLite database
holding no catalog (the exercises' slugs would be taken). One course names the repository; "Sync
now"; then the time until every exercise is proven and published, read through the API.

Printed per run: the clone (a shallow fetch of the branch and the reading of its exercise folders,
timed alone in this process, as the syncer does it), the sync as recorded (queued -> finished:
waiting for the syncer, fetching, checking and saving the 33 drafts), the proofs (the sync's end ->
the last exercise published), the total ("Sync now" -> all published) and its ratio to 90 s.

    .venv/bin/python bench/git_sync.py [--runs 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

from http_grading import FLASK, free_port, remove_unless_failed, start_gunicorn, stop_processes, wait_ready

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.config import Settings  # noqa: E402
from service.gitsync.fetch import exercise_folders, fetched  # noqa: E402
from tests.git_server import GitServer  # noqa: E402

TARGET_SECONDS = 90.0
TOKEN = "bench-deploy-token-" + uuid.uuid4().hex
TIMEOUT_SECONDS = 600


def call(port: int, method: str, path: str, key: str, body: dict | None = None) -> tuple[int, object]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else None


def timed_clone(url: str) -> tuple[float, int]:
    """The fetch and the reading of the tree alone: seconds, exercise folders read."""
    settings = Settings.from_env({}, env="testing", secret_key="bench", git_allowed_hosts=("127.0.0.1",))
    start = time.perf_counter()
    with fetched(settings, url, "main", TOKEN) as (_commit, git_dir):
        folders = exercise_folders(git_dir, "exercises")
    return time.perf_counter() - start, len(folders)


def seconds_between(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def run(number: int) -> bool:
    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-git-bench-"))
    port = free_port()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}", "BIND": f"127.0.0.1:{port}",
           "SECRET_KEY": "git-sync-bench-" + uuid.uuid4().hex, "GIT_ALLOWED_HOSTS": "127.0.0.1"}
    subprocess.run(FLASK + ["db", "upgrade"], cwd=ROOT, env=env, check=True, capture_output=True)
    key = subprocess.run(FLASK + ["clients", "create", "bench", "--role", "instructor"], cwd=ROOT, env=env,
                         check=True, capture_output=True, text=True).stdout.split()[-1]
    slugs = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/exercise.toml"))
    succeeded = False
    with GitServer(tmp / "served", token=TOKEN) as server, open(tmp / "servers.log", "w") as logs:
        repository = server.repository("course", tmp / "work")
        for slug in slugs:
            repository.copy_exercise(ROOT / "exercises" / slug, "exercises")
        repository.push("the built-in exercises")
        clone_seconds, read = timed_clone(server.url("course"))
        assert read == len(slugs), (read, len(slugs))

        workers = subprocess.Popen(FLASK + ["worker"], cwd=ROOT, env=env, stdout=logs, stderr=logs)
        web = start_gunicorn(env, logs)
        try:
            wait_ready(port, "/readyz", tmp / "servers.log")
            status, course = call(port, "POST", "/api/v1/courses", key, {"external_id": f"git-{number}",
                                                                          "title": "Autograd from git"})
            assert status == 201, course
            base = f"/api/v1/courses/{course['id']}/git"  # type: ignore[index]
            status, repo = call(port, "PUT", base, key, {"url": server.url("course"), "path": "exercises",
                                                         "token": TOKEN})
            assert status == 200, repo
            # The workers warm up (their judge and zygote) before the clock starts, as a running service's have.
            time.sleep(3)
            start = time.perf_counter()
            status, queued = call(port, "POST", base + "/sync", key)
            assert status == 202, queued
            deadline = start + TIMEOUT_SECONDS
            while True:
                _status, syncs = call(port, "GET", base + "/syncs", key)
                sync = syncs[0]  # type: ignore[index]
                outcomes = [e["outcome"] for e in sync["exercises"]]
                if sync["status"] == "failed":
                    print(f"run {number}: the sync failed: {sync['error']}")
                    return False
                if sync["status"] == "done" and "proving" not in outcomes:
                    break
                if time.perf_counter() > deadline:
                    print(f"run {number}: not done after {TIMEOUT_SECONDS} s: {sorted(set(outcomes))}")
                    return False
                time.sleep(0.1)
            total = time.perf_counter() - start
            published = outcomes.count("published")
            recorded = seconds_between(sync["queued_at"], sync["finished_at"])
            print(f"run {number}: {len(slugs)} exercises, {published} published "
                  f"({', '.join(f'{o}: {outcomes.count(o)}' for o in sorted(set(outcomes)) if o != 'published') or 'no other'}); "
                  f"clone {clone_seconds:.2f} s; sync recorded {recorded:.2f} s; proofs {total - recorded:.1f} s; "
                  f"total {total:.1f} s = {total / TARGET_SECONDS:.2f} x the {TARGET_SECONDS:.0f} s target")
            succeeded = published == len(slugs)
        finally:
            stop_processes([web, workers])
    remove_unless_failed(tmp, succeeded)
    return succeeded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = [run(n) for n in range(1, args.runs + 1)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
