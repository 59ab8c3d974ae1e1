"""Section (4) of bench/grading.py: graded code attempts end to end, as `make run` serves them.

gunicorn (the make run settings) and `flask worker` (GRADING_WORKERS processes) on a fresh
embedded SQLite database; client threads POST the ClampFn reference, then GET the Location with
?wait= until it is graded. Latency is submit-to-graded; throughput is attempts graded per second
of wall time. Run alone: .venv/bin/python bench/http_grading.py [attempts] [concurrency]
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CODE = (ROOT / "exercises" / "clamp-function" / "reference.py").read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    return [int(p) for p in out.split()]


def request(conn: http.client.HTTPConnection, method: str, path: str, key: str, body: dict | None = None):
    headers = {"Authorization": f"Bearer {key}"}
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=payload, headers=headers)
    response = conn.getresponse()
    return response.status, response.getheader("Location"), json.loads(response.read() or b"null")


def graded_attempt(port: int, key: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        start = time.perf_counter()
        status, location, _ = request(conn, "POST", "/api/v1/exercises/clamp-function/attempts", key,
                                      {"learner": "bench", "code": CODE})
        assert status == 202, status
        while True:
            status, _, body = request(conn, "GET", location + "?wait=30", key)
            if body["status"] in ("graded", "error"):
                break
        assert body["status"] == "graded" and body["score"] == 1.0, body
        return (time.perf_counter() - start) * 1000
    finally:
        conn.close()


def run(attempts: int = 400, concurrency: int = 16, grading_workers: int = 2) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-bench-"))
    port = free_port()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}", "BIND": f"127.0.0.1:{port}",
           "GRADING_WORKERS": str(grading_workers)}
    flask = [PYTHON, "-m", "flask", "--app", "wsgi"]
    for args in (["db", "upgrade"], ["exercises", "sync"]):
        subprocess.run(flask + args, cwd=ROOT, env=env, check=True, capture_output=True)
    key = subprocess.run(flask + ["clients", "create", "bench"], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout.split()[-1]
    logs = open(tmp / "servers.log", "w")
    finished = False
    workers = subprocess.Popen(flask + ["worker"], cwd=ROOT, env=env, stdout=logs, stderr=logs)
    web = subprocess.Popen([str(Path(PYTHON).parent / "gunicorn"), "-c", "gunicorn.conf.py", "wsgi:app"],
                           cwd=ROOT, env=env, stdout=logs, stderr=logs)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API did not come up; see {tmp / 'servers.log'}")
            time.sleep(0.2)
        # Warm-up: every worker's zygote started and its reference for ClampFn computed.
        for _ in range(4 * grading_workers):
            graded_attempt(port, key)

        latencies: list[float] = []
        lock = threading.Lock()
        remaining = iter(range(attempts))

        def client_loop() -> None:
            while True:
                with lock:
                    if next(remaining, None) is None:
                        return
                ms = graded_attempt(port, key)
                with lock:
                    latencies.append(ms)

        start = time.perf_counter()
        threads = [threading.Thread(target=client_loop) for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        latencies.sort()
        finished = True
        web_workers = children(web.pid)
        grading_procs = children(workers.pid)
        zygotes = [z for p in grading_procs for z in children(p)]
        return {
            "attempts": attempts,
            "concurrency": concurrency,
            "grading_workers": grading_workers,
            "throughput_per_s": round(attempts / wall, 1),
            "p50_ms": round(statistics.median(latencies), 1),
            "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 1),
            "web_worker_rss_mb": [round(rss_mb(p), 1) for p in web_workers],
            "grading_worker_rss_mb": [round(rss_mb(p) + sum(rss_mb(z) for z in children(p)), 1) for p in grading_procs],
            "zygotes": len(zygotes),
        }
    finally:
        for proc in (web, workers):
            proc.terminate()
        for proc in (web, workers):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        logs.close()
        if finished:  # kept, with servers.log, only when the run failed
            shutil.rmtree(tmp, ignore_errors=True)


def section_http(ctx: dict) -> dict:
    ctx["http"] = run()
    return ctx["http"]


if __name__ == "__main__":
    attempts = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    result = run(attempts, concurrency)
    print(json.dumps(result, indent=1))
    print(f"(4) end to end: {result['throughput_per_s']} graded code attempts/s (target >= 40), "
          f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms")
