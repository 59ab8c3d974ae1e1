"""Section (4) of bench/grading.py: graded code attempts end to end, as `make run` serves them.

gunicorn (the make run settings) and `flask worker` (GRADING_WORKERS processes) on a fresh
embedded SQLite database; client threads POST the ClampFn reference, then GET the Location with
?wait= until it is graded. Latency is submit-to-graded; throughput is attempts graded per second
of wall time. Run alone: .venv/bin/python bench/http_grading.py [attempts] [concurrency]

Run alone, it also times section (1) of bench/grading.py (bare gradcheck in a warm process)
before and after the burst, and prints graded/s times bare gradcheck ms: the figure that travels
between machines (the target, 40/s where bare gradcheck took 3.2 ms, is 128). Every run prints
where the CPU went during the burst, per graded attempt and per process (from /proc: the web
workers, the judges, the zygotes, their children (reaped by the zygote), the supervisor, this
client, and the rest of the machine).

Class mode (issue 37), `--class N [--rounds R]`: a class at its deadline. Per round, N learners'
tokens are minted naming the exercise (as a frontend's server mints them when the learner opens
it: the grading workers prepare their variants meanwhile, and the time that takes is printed),
then all N submit at once (a barrier), then all N again; beside them N more learners whose tokens
named no exercise submit at once too (their first grades run the reference). Targets: the prepared
first submissions at least 40 graded/s and at least 0.9x the later ones of the same round.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
FLASK = [PYTHON, "-m", "flask", "--app", "wsgi"]
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


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int, reaped: bool = False) -> float:
    """CPU time (user + system, ms) of a process so far; with `reaped`, only that of its children
    it has waited for (cutime + cstime)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # after the name: state is fields[0]; utime, stime, cutime, cstime are stat fields 14-17
    ticks = int(fields[13]) + int(fields[14]) if reaped else int(fields[11]) + int(fields[12])
    return ticks * 1000 / CLK_TCK


def machine_busy_ms() -> float:
    """CPU time spent by every process of the machine so far (all cores, ms)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    busy = sum(values) - values[3] - values[4]  # all but idle and iowait
    return busy * 1000 / CLK_TCK


class CpuSample:
    """CPU per process role of the servers (and this client), at one moment."""

    def __init__(self, web: subprocess.Popen, workers: subprocess.Popen) -> None:
        web_workers = children(web.pid)
        judges = children(workers.pid)
        zygotes = [z for p in judges for z in children(p)]
        self.roles = {
            "web (gunicorn workers)": sum(cpu_ms(p) for p in [web.pid, *web_workers]),
            "judge (grading worker: claim, judge, store)": sum(cpu_ms(p) for p in judges),
            "zygote (forks)": sum(cpu_ms(p) for p in zygotes),
            "children (warm-up, layers, grade, exit)": sum(cpu_ms(p, reaped=True) for p in zygotes),
            "supervisor (flask worker)": cpu_ms(workers.pid),
            "bench client": (lambda t: (t.user + t.system) * 1000)(os.times()),
        }
        self.machine = machine_busy_ms()

    def per_attempt(self, before: CpuSample, attempts: int) -> dict:
        out = {role: round((ms - before.roles[role]) / attempts, 2) for role, ms in self.roles.items()}
        ours = sum(out.values())
        out["sum of the above"] = round(ours, 2)
        out["rest of the machine (other work)"] = round((self.machine - before.machine) / attempts - ours, 2)
        return out


def bare_gradcheck(n: int = 300) -> dict:
    """Section (1) of bench/grading.py: bare gradcheck of the same ClampFn case, warm, in a loop."""
    import grading  # bench/grading.py imports this module: imported here, when it is needed

    exercise = grading.load_exercise(grading.SLUG)
    ctx = {"code": exercise["files"]["reference.py"], "inputs": grading.gradcheck_inputs(exercise), "n_bare": n}
    return grading.section_bare(ctx)


def prepare_database(env: dict, client: str = "bench", root: Path = ROOT) -> str:
    """`flask db upgrade`, `flask exercises sync` and `flask clients create` on env's DATABASE_URL,
    with the code of the checkout at `root`: the key."""
    for args in (["db", "upgrade"], ["exercises", "sync"]):
        subprocess.run(FLASK + args, cwd=root, env=env, check=True, capture_output=True)
    return subprocess.run(FLASK + ["clients", "create", client], cwd=root, env=env, check=True,
                          capture_output=True, text=True).stdout.split()[-1]


def start_gunicorn(env: dict, log, app: str = "wsgi:app", root: Path = ROOT) -> subprocess.Popen:
    """gunicorn with the deployed settings (gunicorn.conf.py; BIND and WEB_* from env) serving `app`
    of the checkout at `root`."""
    return subprocess.Popen([str(Path(PYTHON).parent / "gunicorn"), "-c", "gunicorn.conf.py", app],
                            cwd=root, env=env, stdout=log, stderr=log)


def wait_ready(port: int, path: str, log_path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server did not come up; see {log_path}")
        time.sleep(0.2)


def stop_processes(procs: list[subprocess.Popen]) -> None:
    """Terminate them, then kill any still running 30 s later."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def remove_unless_failed(tmp: Path, succeeded: bool) -> None:
    """A run's directory and its logs are kept only when the run failed."""
    if succeeded:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"logs kept in {tmp}", file=sys.stderr)


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


@contextlib.contextmanager
def servers(grading_workers: int = 2, env_extra: dict | None = None) -> Iterator[Servers]:
    """`make run`'s servers on a fresh SQLite database: gunicorn and `flask worker`, warm (every
    worker's zygote started and its ClampFn reference computed for the learner "bench")."""
    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-bench-"))
    port = free_port()
    database = tmp / "bench.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "BIND": f"127.0.0.1:{port}",
           "GRADING_WORKERS": str(grading_workers), **(env_extra or {})}
    key = prepare_database(env)
    logs = open(tmp / "servers.log", "w")
    finished = False
    workers = subprocess.Popen(FLASK + ["worker"], cwd=ROOT, env=env, stdout=logs, stderr=logs)
    web = start_gunicorn(env, logs)
    try:
        wait_ready(port, "/readyz", tmp / "servers.log")
        for _ in range(4 * grading_workers):
            graded_attempt(port, key)
        yield Servers(port, key, web, workers, database)
        finished = True
    finally:
        stop_processes([web, workers])
        logs.close()
        remove_unless_failed(tmp, finished)


class Servers:
    def __init__(self, port: int, key: str, web: subprocess.Popen, workers: subprocess.Popen, database: Path) -> None:
        self.port, self.key, self.web, self.workers, self.database = port, key, web, workers, database


def run(attempts: int = 400, concurrency: int = 16, grading_workers: int = 2, bare: bool = False) -> dict:
    with servers(grading_workers) as up:
        port, key, web, workers = up.port, up.key, up.web, up.workers
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

        bare_before = bare_gradcheck() if bare else None
        cpu_before = CpuSample(web, workers)
        start = time.perf_counter()
        threads = [threading.Thread(target=client_loop) for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        cpu = CpuSample(web, workers).per_attempt(cpu_before, attempts)
        bare_after = bare_gradcheck() if bare else None
        latencies.sort()
        web_workers = children(web.pid)
        grading_procs = children(workers.pid)
        zygotes = [z for p in grading_procs for z in children(p)]
        result = {
            "attempts": attempts,
            "concurrency": concurrency,
            "grading_workers": grading_workers,
            "throughput_per_s": round(attempts / wall, 1),
            "p50_ms": round(statistics.median(latencies), 1),
            "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 1),
            "web_worker_rss_mb": [round(rss_mb(p), 1) for p in web_workers],
            "grading_worker_rss_mb": [round(rss_mb(p) + sum(rss_mb(z) for z in children(p)), 1) for p in grading_procs],
            "zygotes": len(zygotes),
            "cpu_ms_per_graded_attempt": cpu,
        }
        if bare_before and bare_after:
            # the floor of this run: bare gradcheck just before and just after the burst
            result["bare_gradcheck_p50_ms"] = [bare_before["p50_ms"], bare_after["p50_ms"]]
            bare_ms = statistics.fmean(result["bare_gradcheck_p50_ms"])
            result["graded_per_s_x_bare_ms"] = round(result["throughput_per_s"] * bare_ms, 1)
        return result


# --- class mode: a class at its deadline ------------------------------------------------------------


def learner_token(port: int, key: str, learner: str, exercises: list[str] | None) -> str:
    """The learner's token, as the frontend's server mints it when the learner opens the exercise
    (`exercises` named: their reference results are prepared before they submit)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        status, _, body = request(conn, "POST", "/api/v1/learner-tokens", key,
                                  {"learner": learner, "exercises": exercises})
        assert status == 200, body
        return body["token"]
    finally:
        conn.close()


def burst(port: int, tokens: list[str], up: Servers) -> dict:
    """Every learner submits one attempt at the same moment (a barrier), then waits for its grade:
    graded/s is the class over the wall time from the release to the last grade."""
    barrier = threading.Barrier(len(tokens) + 1)
    latencies: list[float] = []
    lock = threading.Lock()

    def learner(token: str) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            barrier.wait()
            start = time.perf_counter()
            status, location, body = request(conn, "POST", "/api/v1/exercises/clamp-function/attempts", token,
                                             {"code": CODE})
            assert status == 202, (status, body)
            while True:
                _, _, body = request(conn, "GET", location + "?wait=30", token)
                if body["status"] in ("graded", "error"):
                    break
            assert body["status"] == "graded" and body["score"] == 1.0, body
            with lock:
                latencies.append((time.perf_counter() - start) * 1000)
        finally:
            conn.close()

    threads = [threading.Thread(target=learner, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    cpu_before = CpuSample(up.web, up.workers)
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    assert len(latencies) == len(tokens), "a learner's attempt failed: see the log above"
    latencies.sort()
    cpu = CpuSample(up.web, up.workers).per_attempt(cpu_before, len(tokens))
    return {"graded_per_s": round(len(tokens) / wall, 1), "p50_ms": round(statistics.median(latencies), 1),
            "max_ms": round(latencies[-1], 1), "cpu_ms_per_attempt": cpu}


def wait_prepared(database: Path, learners: str, expected: int, timeout: float = 300) -> float:
    """Seconds until the workers have stored the preparations of the `expected` learners whose names
    start with `learners` (read from the database file, read-only, beside the servers)."""
    start = time.perf_counter()
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        while True:
            done = db.execute("SELECT count(*) FROM variant_preparations WHERE status = 'graded' AND learner LIKE ?",
                              (learners + "%",)).fetchone()[0]
            if done >= expected:
                return time.perf_counter() - start
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"only {done} of {expected} preparations done after {timeout} s")
            time.sleep(0.05)


def run_class(size: int = 200, rounds: int = 3, grading_workers: int = 2) -> dict:
    """Per round, three bursts of `size` learners side by side, each learner one attempt, all at once:
    - first, unprepared: new learners whose tokens name no exercise (each first grade runs the
      reference on the learner's variant, as before issue 37);
    - first, prepared: new learners whose tokens name the exercise, minted before the deadline
      (the workers prepare their variants meanwhile; the time that takes is reported);
    - later: the prepared learners again, each for the second time.
    Targets (issue 37): first prepared >= 40 graded/s and >= 0.9x later, in the same round."""
    out: dict = {"size": size, "grading_workers": grading_workers, "rounds": []}
    with servers(grading_workers) as up:
        for r in range(rounds):
            unprepared = [learner_token(up.port, up.key, f"r{r}-u{i}", None) for i in range(size)]
            first_unprepared = burst(up.port, unprepared, up)
            t0 = time.perf_counter()
            tokens = [learner_token(up.port, up.key, f"r{r}-p{i}", ["clamp-function"]) for i in range(size)]
            minted_s = time.perf_counter() - t0
            preparation_s = minted_s + wait_prepared(up.database, f"r{r}-p", size)
            first = burst(up.port, tokens, up)
            later = burst(up.port, tokens, up)
            out["rounds"].append({
                "first_unprepared": first_unprepared, "first_prepared": first, "later": later,
                "preparation_s": round(preparation_s, 2),
                "first_prepared_x_later": round(first["graded_per_s"] / later["graded_per_s"], 2),
                "first_unprepared_x_later": round(first_unprepared["graded_per_s"] / later["graded_per_s"], 2)})
        rss = [round(rss_mb(p) + sum(rss_mb(z) for z in children(p)), 1) for p in children(up.workers.pid)]
        out["grading_worker_rss_mb"] = rss
    for name in ("first_prepared_x_later", "first_unprepared_x_later"):
        out[f"median_{name}"] = statistics.median(r[name] for r in out["rounds"])
    out["median_first_prepared_per_s"] = statistics.median(r["first_prepared"]["graded_per_s"] for r in out["rounds"])
    return out


def section_http(ctx: dict) -> dict:
    ctx["http"] = run()
    return ctx["http"]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("attempts", nargs="?", type=int, default=400)
    parser.add_argument("concurrency", nargs="?", type=int, default=16)
    parser.add_argument("--class", dest="class_size", type=int, metavar="N",
                        help="class mode: N learners, one attempt each, all at once (first and later grades)")
    parser.add_argument("--rounds", type=int, default=3, help="class mode: rounds of new learners")
    args = parser.parse_args(argv)
    if args.class_size:
        result = run_class(args.class_size, args.rounds)
        print(json.dumps(result, indent=1))
        for i, r in enumerate(result["rounds"], 1):
            print(f"round {i}: first (prepared) {r['first_prepared']['graded_per_s']}/s, later "
                  f"{r['later']['graded_per_s']}/s: x{r['first_prepared_x_later']}; first (unprepared) "
                  f"{r['first_unprepared']['graded_per_s']}/s: x{r['first_unprepared_x_later']}; "
                  f"{args.class_size} preparations in {r['preparation_s']} s")
        print(f"class of {args.class_size}, medians of {args.rounds} rounds: first grades (prepared) "
              f"{result['median_first_prepared_per_s']}/s (target >= 40), x{result['median_first_prepared_x_later']} "
              f"later grades (target >= 0.9); unprepared first grades x{result['median_first_unprepared_x_later']}")
        return
    result = run(args.attempts, args.concurrency, bare=True)
    print(json.dumps(result, indent=1))
    bare_ms = statistics.fmean(result["bare_gradcheck_p50_ms"])
    print(f"(4) end to end: {result['throughput_per_s']} graded code attempts/s (target >= 40), "
          f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms; bare gradcheck (1) p50 {bare_ms:.2f} ms "
          f"in the same run; graded/s x bare ms = {result['graded_per_s_x_bare_ms']} (target >= 128: 40/s at 3.2 ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
