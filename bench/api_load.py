"""The API under load, side by side in one run: a hello-world Flask app (the floor for this stack),
GET /api/v1/exercises/{slug}, and POST of a quiz answer on PostgreSQL.

    .venv/bin/python bench/api_load.py                      # 3 rounds of 10 s per target
    .venv/bin/python bench/api_load.py --duration 3 --rounds 1

Both apps run under gunicorn with the deployed settings (gunicorn.conf.py: gthread, the same
WEB_CONCURRENCY and WEB_THREADS, preload, max_requests; gunicorn's own access log off), at the
same time on two ports; wrk drives one target at a time with 32 connections (--connections) from
2 threads. gradquiz runs as deployed (ENV=production, LOG_FORMAT=json: it writes a JSON access
line per request, to a file here), so its logging is part of its cost; hello-world logs nothing.
gradquiz gets a fresh database on the local PostgreSQL (127.0.0.1:5432), set up as a deployment
is (`flask db upgrade`, `flask exercises sync`, `flask clients create`) and dropped afterwards.
ATTEMPTS_RATE_LIMIT is raised out of the way, per second, so that the limiter's moving window
holds about as many entries as a production limit's does.

Each POST is a different request of a class: one of 500 learners per wrk thread, two right
answers in three, and a new Idempotency-Key each time (as an LMS sends them), so every POST
grades and stores an attempt.

A fourth line, GET /healthz of gradquiz (every request hook, the access line and the metrics, but
no database), splits the gap to hello-world between the app's per-request layers and the database.

Rounds run hello, healthz, GET, POST, hello, ...; the table gives each target's median over
the rounds, and each ratio is the median of the rounds' ratios (each against the hello-world
round next to it), so drift of this shared machine biases neither side. Targets: GET at least
70% of hello-world's requests/s, POST at least 40%, p99 at most 50 ms. Also printed: the web
workers' CPU time per request (master and workers, /proc/<pid>/stat) and their RSS after the
run. wrk, gunicorn and PostgreSQL share this machine's cores. Exits 1 if any request failed
(non-2xx or socket error), not when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from backends import Deployment
from http_grading import (
    children,
    free_port,
    prepare_database,
    remove_unless_failed,
    rss_mb,
    start_gunicorn,
    stop_processes,
    wait_ready,
)

QUIZ_SLUG, RIGHT, WRONG = "call-through-apply", "apply", "call-class"
TARGETS = {"GET": 0.70, "POST": 0.40}  # share of hello-world's requests/s
P99_TARGET_MS = 50.0
LEARNERS_PER_THREAD = 500
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# Prints wrk's own figures as one JSON line (latency in microseconds).
RESULT_LUA = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_RESULT {"requests": %d, "duration_us": %d, "socket_errors": %d, "non_2xx": %d, '
    .. '"p50_us": %d, "p99_us": %d, "max_us": %d}\\n', summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status, latency:percentile(50), latency:percentile(99), latency.max))
end
"""
# args: path, API key, a tag unique to the round (Idempotency-Keys must not repeat across rounds).
POST_LUA = RESULT_LUA + f"""
local threads = 0
setup = function(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end
init = function(args)
  path, key, tag, sent = args[1], args[2], args[3], 0
end
request = function()
  sent = sent + 1
  local answer = (sent % 3 == 0) and "{WRONG}" or "{RIGHT}"
  local body = string.format('{{"learner": "learner-%d-%d", "answer": "%s"}}', thread_id, sent % {LEARNERS_PER_THREAD}, answer)
  return wrk.format("POST", path, {{["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = string.format("%s-%d-%d", tag, thread_id, sent)}}, body)
end
"""


@dataclass
class Round:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu_ms_per_request: float
    failed: int


def cpu_seconds(master: int) -> float:
    """CPU time of a gunicorn master, its reaped workers (cutime, cstime) and its live workers."""
    def ticks(pid: int, fields: slice) -> int:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:  # a worker recycled (max_requests) and reaped since listed
            return 0
        return sum(int(v) for v in stat.rsplit(")", 1)[1].split()[fields])

    # After the ")" of the command: state is field 0, utime 11, stime 12, cutime 13, cstime 14.
    return (ticks(master, slice(11, 15)) + sum(ticks(pid, slice(11, 13)) for pid in children(master))) / CLOCK_TICKS


def wrk(url: str, script: Path, args: list[str], connections: int, seconds: int, master: int) -> Round:
    cpu_before = cpu_seconds(master)
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(script),
                          url, "--", *args], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(master) - cpu_before
    line = next((ln for ln in out.splitlines() if ln.startswith("WRK_RESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out}")
    r = json.loads(line.split(" ", 1)[1])
    return Round(r["requests"] / (r["duration_us"] / 1e6), r["p50_us"] / 1000, r["p99_us"] / 1000, r["max_us"] / 1000,
                 cpu * 1000 / max(1, r["requests"]), r["socket_errors"] + r["non_2xx"])


def quiz_answer_ok(port: int, key: str) -> None:
    """One POST before the load, so that a setup mistake fails loudly and not as 32 x N errors."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", f"/api/v1/exercises/{QUIZ_SLUG}/attempts", json.dumps({"learner": "check", "answer": RIGHT}),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 201:
        raise RuntimeError(f"a quiz answer got {response.status}: {body[:300]!r}")


def median_round(rounds: list[Round]) -> Round:
    return Round(*(statistics.median(getattr(r, f) for r in rounds) for f in Round.__dataclass_fields__))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-bench-load-"))
    deployment = Deployment()
    hello_port, api_port = free_port(), free_port()
    # Not the grading workers: a quiz answer is graded in the request.
    env = {**os.environ, "ENV": "production", "SECRET_KEY": uuid.uuid4().hex * 2, "DATABASE_URL": deployment.url,
           "ATTEMPTS_RATE_LIMIT": "100000/second", "METRICS_TOKEN": uuid.uuid4().hex, "LOG_FORMAT": "json"}
    servers: list[subprocess.Popen] = []
    log_path = tmp / "servers.log"
    ok = False
    try:
        key = prepare_database(env)
        with open(log_path, "w") as log:
            hello = start_gunicorn({**env, "BIND": f"127.0.0.1:{hello_port}"}, log, "bench.hello_app:app")
            servers.append(hello)
            api = start_gunicorn({**env, "BIND": f"127.0.0.1:{api_port}"}, log)
            servers.append(api)
        wait_ready(hello_port, "/", log_path)
        wait_ready(api_port, "/readyz", log_path)
        quiz_answer_ok(api_port, key)

        result_lua, post_lua = tmp / "result.lua", tmp / "post.lua"
        result_lua.write_text(RESULT_LUA)
        post_lua.write_text(POST_LUA)
        post_path = f"/api/v1/exercises/{QUIZ_SLUG}/attempts"
        targets = {
            "hello": (f"http://127.0.0.1:{hello_port}/", result_lua, lambda tag: [], hello.pid),
            "healthz": (f"http://127.0.0.1:{api_port}/healthz", result_lua, lambda tag: [], api.pid),
            "GET": (f"http://127.0.0.1:{api_port}/api/v1/exercises/{QUIZ_SLUG}", result_lua, lambda tag: [], api.pid),
            "POST": (f"http://127.0.0.1:{api_port}{post_path}", post_lua, lambda tag: [post_path, key, tag], api.pid),
        }
        labels = {"hello": "hello world (bench/hello_app.py)", "healthz": "GET /healthz (gradquiz, no database)",
                  "GET": f"GET /api/v1/exercises/{QUIZ_SLUG}",
                  "POST": f"POST /api/v1/exercises/{QUIZ_SLUG}/attempts"}

        workers, threads = env.get("WEB_CONCURRENCY", "2"), env.get("WEB_THREADS", "16")
        print(f"gunicorn gthread, {workers} workers x {threads} threads for both apps (gunicorn.conf.py); gradquiz "
              f"ENV=production LOG_FORMAT=json; wrk 2 threads, {args.connections} connections, {args.duration} s "
              f"per target per round, {args.rounds} rounds; PostgreSQL 127.0.0.1:5432; {os.cpu_count()} CPUs shared "
              "by wrk, gunicorn and PostgreSQL")
        for url, script, extra, master in targets.values():  # warm-up: pools, caches, first requests
            wrk(url, script, extra(f"warm-{uuid.uuid4().hex[:8]}"), args.connections, min(2, args.duration), master)
        results: dict[str, list[Round]] = {name: [] for name in targets}
        for n in range(args.rounds):
            line = []
            for name, (url, script, extra, master) in targets.items():
                r = wrk(url, script, extra(f"r{n}-{uuid.uuid4().hex[:8]}"), args.connections, args.duration, master)
                results[name].append(r)
                line.append(f"{name} {r.requests_per_s:,.0f}/s p50 {r.p50_ms:.1f} p99 {r.p99_ms:.1f} ms"
                            + (f" FAILED {r.failed}" if r.failed else ""))
            print(f"round {n + 1}: " + "; ".join(line), flush=True)

        print(f"\n{'target':<56}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'CPU ms/req':>11}"
              f"{'x hello':>9}{'target':>8}  ok")
        failed = 0
        for name in targets:
            m = median_round(results[name])
            failed += sum(r.failed for r in results[name])
            ratio = statistics.median(r.requests_per_s / h.requests_per_s for r, h in zip(results[name], results["hello"]))
            if name in TARGETS:
                ok_text = "yes" if ratio >= TARGETS[name] and m.p99_ms <= P99_TARGET_MS else "NO"
                ratio_text = f"{ratio:>9.2f}{TARGETS[name]:>8.2f}"
            else:
                ratio_text, ok_text = f"{ratio:>9.2f}{'':>8}", ""
            print(f"{labels[name]:<56}{m.requests_per_s:>8,.0f}{m.p50_ms:>8.1f}{m.p99_ms:>8.1f}{m.max_ms:>8.1f}"
                  f"{m.cpu_ms_per_request:>11.2f}{ratio_text}  {ok_text}")
        print(f"(medians of {args.rounds} rounds; x hello: median of the rounds' ratios; ok: ratio at least the target "
              f"and p99 at most {P99_TARGET_MS:.0f} ms)")
        for name, proc in (("hello world", hello), ("gradquiz", api)):
            rss = ", ".join(f"{rss_mb(pid):.0f}" for pid in sorted(children(proc.pid)))
            print(f"web worker RSS after the run, {name}: {rss} MB")
        print(f"failed requests (non-2xx or socket errors): {failed}")
        ok = failed == 0
    finally:
        stop_processes(servers)
        deployment.drop()
        remove_unless_failed(tmp, ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
