"""The API under load, side by side in one run, against two floors: a hello-world Flask app (the
floor for a request that reads) and an insert app (the floor for a request that must store a row).

    .venv/bin/python bench/api_load.py                         # PostgreSQL, 9 rounds of 3 s per target
    .venv/bin/python bench/api_load.py --database sqlite       # the embedded default
    .venv/bin/python bench/api_load.py --duration 3 --rounds 1
    .venv/bin/python bench/api_load.py --only "POST quiz" --perf  # one target (and its floor), and perf's split
    .venv/bin/python bench/api_load.py --only "POST quiz" --setup-sql what-if.sql   # e.g. DROP INDEX ...
    .venv/bin/python bench/api_load.py --only "POST quiz,history" --against main   # before and after, one run
    .venv/bin/python bench/api_load.py --only "POST code" --celery   # as deployed with Celery and Redis
    .venv/bin/python bench/api_load.py --only history --rounds 5   # the history's target (issue 37): 5 rounds

The three apps run under gunicorn with the deployed settings (gunicorn.conf.py: gthread, the same
WEB_CONCURRENCY and WEB_THREADS, preload, max_requests; gunicorn's own access log off), at the
same time on three ports; wrk drives one target at a time with 32 connections (--connections)
from 2 threads. gradquiz runs as deployed (ENV=production, LOG_FORMAT=json: it writes a JSON
access line per request, to a file here), so its logging is part of its cost; the floors log
nothing. gradquiz gets a fresh database (a new one on the local PostgreSQL, 127.0.0.1:5432, or a
new SQLite file), set up as a deployment is (`flask db upgrade`, `flask exercises sync`, `flask
clients create`) and dropped afterwards; the insert floor (bench/insert_app.py) writes to a table of
its own in the same database, with the same engine settings. ATTEMPTS_RATE_LIMIT is raised out of
the way, per second, so that the limiter's moving window holds about as many entries as a
production limit's does.

Each POST is a different request of a class: one of 500 learners per wrk thread and a new
Idempotency-Key each time (as an LMS sends them). A quiz POST grades and stores an attempt (two
right answers in three); a code POST stores an attempt queued for grading (no grading worker runs
here); the floor's POST stores a row. The learner history is GET /api/v1/learners/{id}/attempts of
a learner with a few attempts.

A third floor, the read floor (bench/insert_app.py's GET), reads a learner's rows by an index and
answers them as JSON: what any request that reads the database costs here. The learner history's
target is against it (issue 37: at least 0.7x, the median of five rounds, so its command is
`--only history --rounds 5`, which runs the read floor and hello-world beside it); its ratio to
hello-world, issue 19's target (0.5x), which no request that reads the database meets here, is
printed beside it.

A line for GET /healthz of gradquiz (every request hook, the access line and the metrics, but no
database) splits the gap to hello-world between the app's per-request layers and the database.

Rounds run every target in turn, each target beside its floor, in short slices (3 s): the table
gives each target's median over the rounds, and each ratio is the median of the rounds' ratios, each
against its floor's slice of the same round, seconds apart, so drift of this shared machine biases
neither side (with 10 s slices the same tree's ratios moved 30% between runs). Targets (issue 19):
the quiz POST at least 0.5x the insert floor's requests/s and its p99 at most 2x the floor's p99;
the code POST at least 0.5x the floor; GET of an exercise at least 0.7x hello-world; the learner
history at least 0.7x the read floor (issue 37). Also printed: the web workers' CPU time per request (master and
workers, /proc/<pid>/stat), the PostgreSQL server's (postmaster, its backends live and reaped: "db
ms/req", 0 on SQLite, whose work is the web process's), "CPU x" (the floor's CPU a request, web and
database, over the target's: the ratio of what each request costs, which requests/s follows when
the cores are full and which moves less between runs on a shared machine; the targets stay on
requests/s) and the workers' RSS after the run. With --perf, perf samples every CPU during every
slice and the run ends with a request's CPU split (medians of the rounds) between the web's user
and kernel time, PostgreSQL's, the idle CPU and the rest (wrk, the machine's other work). wrk,
gunicorn and the database share this machine's cores. Exits 1 if any request failed (non-2xx or
socket error), not when a target is missed.

With --against REV, the API of another commit (checked out beside with `git worktree`, on a fresh
database of its own, migrated by its own code) runs too, and each of gradquiz's targets runs twice
in every round, this checkout's slice and REV's, each first in every other round: the run ends
with this checkout's ratios to REV (requests/s, p99, CPU a request), medians of the rounds'
ratios. A change's effect measured this way is not lost in the drift between runs minutes apart,
which on this machine is larger than most changes.

With --celery, gradquiz runs with GRADING_BACKEND=celery and the local Redis as its broker
(database 12, emptied before and after the run; no worker takes the tasks): a code POST then also
sends its task to the broker and records that it went, as a deployment with Celery does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine

from backends import Deployment
from http_grading import (
    ROOT,
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
CODE_SLUG = "clamp-function"
CODE = (Path(__file__).resolve().parents[1] / "exercises" / CODE_SLUG / "reference.py").read_text()
HISTORY_LEARNER = "history-learner"


@dataclass(frozen=True)
class Target:
    """A target's share of its floor's requests/s (and, if set, the most its p99 may be of the floor's).
    `also_against`: other floors run beside it, whose ratios are printed but judge nothing."""

    floor: str
    min_ratio: float
    max_p99_ratio: float | None = None
    also_against: tuple[str, ...] = ()

    def met(self, ratio: float, p99_ratio: float) -> bool:
        return ratio >= self.min_ratio and (self.max_p99_ratio is None or p99_ratio <= self.max_p99_ratio)


# The history against the read floor (issue 37; issue 19 had set 0.5x hello-world, which no request
# that reads the database meets here), with hello-world's ratio printed beside it.
TARGETS = {"GET": Target("hello", 0.70), "history": Target("read floor", 0.70, also_against=("hello",)),
           "POST quiz": Target("floor", 0.50, 2.0), "POST code": Target("floor", 0.50)}
LABELS = {"hello": "hello world (bench/hello_app.py)", "healthz": "GET /healthz (gradquiz, no database)",
          "GET": f"GET /api/v1/exercises/{QUIZ_SLUG}", "history": "GET /api/v1/learners/{id}/attempts",
          "read floor": "read floor (bench/insert_app.py, GET)", "floor": "insert floor (bench/insert_app.py)",
          "POST quiz": f"POST /api/v1/exercises/{QUIZ_SLUG}/attempts",
          "POST code": f"POST /api/v1/exercises/{CODE_SLUG}/attempts"}
LEARNERS_PER_THREAD = 500
CELERY_BROKER = "redis://127.0.0.1:6379/12"  # --celery; bench/backends.py uses database 11


AGAINST = " @"  # names a target of the other checkout (--against): "POST quiz @1a2b3c4"


def label(name: str) -> str:
    target, _, rev = name.partition(AGAINST)
    return LABELS[target] + (AGAINST + rev if rev else "")


def floor_of(name: str) -> str:
    """The floor a target's ratios are against (a floor's own: itself)."""
    name = name.partition(AGAINST)[0]
    if name in TARGETS:
        return TARGETS[name].floor
    return "floor" if name == "floor" else "hello"


def floors_of(name: str) -> list[str]:
    """The floors that run beside a target: its own, then those it is also printed against."""
    target = TARGETS.get(name)
    return [floor_of(name), *(target.also_against if target else ())]
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
# args: path, API key, a tag unique to the round (Idempotency-Keys must not repeat across rounds),
# the body's field ("answer" or "code") and, for code, the source as a JSON string.
POST_LUA = RESULT_LUA + f"""
local threads = 0
setup = function(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end
init = function(args)
  path, key, tag, field, code_json, sent = args[1], args[2], args[3], args[4], args[5], 0
end
request = function()
  sent = sent + 1
  local learner = string.format("learner-%d-%d", thread_id, sent % {LEARNERS_PER_THREAD})
  local body
  if field == "code" then
    body = string.format('{{"learner": "%s", "code": %s}}', learner, code_json)
  else
    body = string.format('{{"learner": "%s", "answer": "%s"}}', learner, (sent % 3 == 0) and "{WRONG}" or "{RIGHT}")
  end
  return wrk.format("POST", path, {{["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = string.format("%s-%d-%d", tag, thread_id, sent)}}, body)
end
"""
# args: the API key (a GET with a bearer token).
GET_LUA = RESULT_LUA + """
init = function(args)
  key = args[1]
end
request = function()
  return wrk.format("GET", nil, {["Authorization"] = "Bearer " .. key})
end
"""


@dataclass
class Round:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu_ms_per_request: float
    database_cpu_ms_per_request: float
    failed: int

    @property
    def cpu_ms_with_database(self) -> float:
        return self.cpu_ms_per_request + self.database_cpu_ms_per_request


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


def postgres_cpu_seconds() -> float:
    """CPU time of the local PostgreSQL server: its postmaster with the backends it reaped, and its
    live processes. 0 when none runs (SQLite's work is in the web process)."""
    masters = subprocess.run(["pgrep", "-x", "-o", "postgres"], capture_output=True, text=True).stdout.split()
    return cpu_seconds(int(masters[0])) if masters else 0.0


def wrk(url: str, script: Path, args: list[str], connections: int, seconds: int, master: int) -> Round:
    cpu_before, database_before = cpu_seconds(master), postgres_cpu_seconds()
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(script),
                          url, "--", *args], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(master) - cpu_before
    database_cpu = postgres_cpu_seconds() - database_before
    line = next((ln for ln in out.splitlines() if ln.startswith("WRK_RESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out}")
    r = json.loads(line.split(" ", 1)[1])
    requests = max(1, r["requests"])
    return Round(r["requests"] / (r["duration_us"] / 1e6), r["p50_us"] / 1000, r["p99_us"] / 1000, r["max_us"] / 1000,
                 cpu * 1000 / requests, database_cpu * 1000 / requests, r["socket_errors"] + r["non_2xx"])


# Where a request's CPU goes, from perf's samples of every CPU: (process, in the kernel?) -> part.
CPU_PARTS = {("gunicorn", False): "web user", ("gunicorn", True): "web kernel", ("postgres", False): "db user",
             ("postgres", True): "db kernel", ("swapper", True): "idle"}


@contextmanager
def perf_sampling(data: Path, seconds: int) -> Iterator[Path]:
    """perf sampling every CPU for `seconds` into `data`, from before the block runs (the software
    cpu-clock event, which works where hardware counters do not, as on this VM)."""
    process = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "-a", "-o", str(data), "--",
                                "sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield data
    finally:
        if process.wait() != 0:
            raise RuntimeError("perf record failed (is perf allowed here? see /proc/sys/kernel/perf_event_paranoid)")


def cpu_split(data: Path, slice_: Round) -> dict[str, float]:
    """Milliseconds of CPU a request of `slice_` took in each CPU_PARTS part (the rest: "other"),
    from the samples in `data` of the slice's seconds on every CPU."""
    report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", "comm,dso"],
                            capture_output=True, text=True, check=True).stdout
    shares: dict[str, float] = dict.fromkeys([*CPU_PARTS.values(), "other"], 0.0)
    for line in report.splitlines():  # "    43.58%  gunicorn  libpython3.11.so.1.0"
        fields = line.split()
        if len(fields) >= 3 and fields[0].endswith("%") and not line.startswith("#"):
            part = CPU_PARTS.get((fields[1], fields[2] == "[kernel.kallsyms]"), "other")
            shares[part] += float(fields[0][:-1]) / 100
    # A share of every CPU's time, over the requests served in a second.
    return {part: share * (os.cpu_count() or 1) * 1000 / slice_.requests_per_s for part, share in shares.items()}


def print_cpu_splits(splits: dict[str, list[dict[str, float]]]) -> None:
    parts = [*dict.fromkeys(CPU_PARTS.values()), "other"]
    print("\nwhere a request's CPU went, ms a request, medians of the rounds (perf's samples of every CPU; web: "
          "the gunicorn processes, db: PostgreSQL's; idle: CPU time nothing used)")
    print(f"{'target':<48}" + "".join(f"{part:>11}" for part in parts))
    for name, rounds in splits.items():
        print(f"{label(name):<48}" + "".join(f"{statistics.median(r[part] for r in rounds):>11.2f}" for part in parts))


def post_ok(port: int, path: str, token: str, body: dict) -> None:
    """One POST before the load, so that a setup mistake fails loudly and not as 32 x N errors."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status not in (201, 202):  # 202: a code attempt, queued for grading
        raise RuntimeError(f"POST {path} got {response.status}: {data[:300]!r}")


def median_round(rounds: list[Round]) -> Round:
    return Round(*(statistics.median(getattr(r, f) for r in rounds) for f in Round.__dataclass_fields__))


class SqliteDatabase:
    """A fresh SQLite file, as `make run` uses (the embedded default)."""

    def __init__(self, folder: Path) -> None:
        self.url = f"sqlite:///{folder / 'bench.db'}"

    def drop(self) -> None:
        pass  # the folder goes with the run's temporary files


def round_order(names: list[str], n: int) -> list[str]:
    """The targets in round `n`'s order: every other round, a target of the other checkout
    (--against) runs before this checkout's, so neither side always follows the other."""
    if n % 2 == 0:
        return names
    order = names[:]
    for i, name in enumerate(names):
        if AGAINST in name and i > 0 and names[i - 1] == name.partition(AGAINST)[0]:
            order[i - 1], order[i] = name, names[i - 1]
    return order


def run_rounds(targets: dict[str, tuple], args: argparse.Namespace,
               tmp: Path) -> tuple[dict[str, list[Round]], dict[str, list[dict[str, float]]]]:
    """Every round's slice of every target, and (--perf) where each slice's CPU went."""
    results: dict[str, list[Round]] = {name: [] for name in targets}
    splits: dict[str, list[dict[str, float]]] = {name: [] for name in targets} if args.perf else {}
    for n in range(args.rounds):
        line = []
        for name in round_order(list(targets), n):
            url, script, extra, master = targets[name]
            samples = tmp / "perf.data"
            with perf_sampling(samples, args.duration) if args.perf else nullcontext():
                r = wrk(url, script, extra(f"r{n}-{uuid.uuid4().hex[:8]}"), args.connections, args.duration, master)
            if args.perf:
                splits[name].append(cpu_split(samples, r))
                samples.unlink()
            results[name].append(r)
            failures = f" FAILED {r.failed}" if r.failed else ""
            line.append(f"{name} {r.requests_per_s:,.0f}/s p99 {r.p99_ms:.1f} ms{failures}")
        print(f"round {n + 1}: " + "; ".join(line), flush=True)
    return results, splits


def print_table(results: dict[str, list[Round]], rounds: int) -> int:
    """Each target's medians and ratios against its floor, with its verdict; returns the failed requests."""
    print(f"\n{'target':<48}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'CPU ms/req':>11}{'db ms/req':>10}"
          f"{'x floor':>9}{'p99 x':>7}{'CPU x':>7}  target")
    failed = 0
    for name in results:
        m = median_round(results[name])
        failed += sum(r.failed for r in results[name])
        target = TARGETS.get(name)
        pairs = list(zip(results[name], results[floor_of(name)]))
        ratio = statistics.median(r.requests_per_s / f.requests_per_s for r, f in pairs)
        p99_ratio = statistics.median(r.p99_ms / f.p99_ms for r, f in pairs)
        cpu_ratio = statistics.median(f.cpu_ms_with_database / r.cpu_ms_with_database for r, f in pairs)
        verdict = ""
        if target:
            met = target.met(ratio, p99_ratio)
            rounds_met = sum(target.met(r.requests_per_s / f.requests_per_s, r.p99_ms / f.p99_ms) for r, f in pairs)
            limits = f">= {target.min_ratio}x {target.floor}" + (
                f", p99 <= {target.max_p99_ratio}x" if target.max_p99_ratio else "")
            # How many rounds met it on their own: a median near the target is a coin's toss.
            verdict = f"{limits}: {'OK' if met else 'MISSED'} ({rounds_met} of {len(pairs)} rounds)"
        print(f"{label(name):<48}{m.requests_per_s:>8,.0f}{m.p50_ms:>8.1f}{m.p99_ms:>8.1f}{m.max_ms:>8.1f}"
              f"{m.cpu_ms_per_request:>11.2f}{m.database_cpu_ms_per_request:>10.2f}{ratio:>9.2f}{p99_ratio:>7.2f}"
              f"{cpu_ratio:>7.2f}  {verdict}")
    print(f"(medians of {rounds} rounds; x floor and p99 x: medians of the rounds' ratios against the "
          "target's floor: hello-world for reads, the read floor for the learner history, the insert floor for "
          "writes; CPU x: the floor's CPU a request, "
          "web and database, over the target's: what requests/s follows when the cores are full, and steadier "
          "from run to run on a shared machine)")
    return failed


def print_against(results: dict[str, list[Round]], rev: str) -> None:
    """This checkout's targets against the same targets of `rev`, each ratio the median of the rounds'."""
    print(f"\nthis checkout x {rev} (medians of the rounds' ratios; CPU x: {rev}'s CPU a request, web and database, "
          "over this checkout's: above 1, this checkout costs less)")
    print(f"{'target':<48}{'req/s x':>9}{'p99 x':>7}{'CPU x':>7}")
    for name, rounds in results.items():
        other = results.get(name + AGAINST + rev)
        if other is None:
            continue
        pairs = list(zip(rounds, other))
        print(f"{label(name):<48}{statistics.median(r.requests_per_s / o.requests_per_s for r, o in pairs):>9.2f}"
              f"{statistics.median(r.p99_ms / o.p99_ms for r, o in pairs):>7.2f}"
              f"{statistics.median(o.cpu_ms_with_database / r.cpu_ms_with_database for r, o in pairs):>7.2f}")


class OtherCheckout:
    """Another commit of this repository, checked out beside this one (git worktree) in `folder`,
    with a fresh database of its own."""

    def __init__(self, rev: str, folder: Path) -> None:
        self.rev = git("rev-parse", "--short", rev)
        self.root = folder / f"against-{self.rev}"
        git("worktree", "add", "--detach", str(self.root), self.rev)
        self.database: Deployment | SqliteDatabase | None = None

    def prepare(self, env: dict[str, str], kind: str) -> tuple[dict[str, str], str]:
        """Its database, migrated and seeded by its own code: its environment and API key."""
        self.database = Deployment(migrated=False) if kind == "postgresql" else SqliteDatabase(self.root)
        env = {**env, "DATABASE_URL": self.database.url}
        return env, prepare_database(env, root=self.root)

    def remove(self) -> None:
        if self.database is not None:
            self.database.drop()
        git("worktree", "remove", "--force", str(self.root))


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--duration", type=int, default=3, help="seconds of load per target per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--only", type=lambda text: [name.strip() for name in text.split(",")], default=None,
                        help=f"a comma-separated subset of the targets ({', '.join(LABELS)}); their floors run too")
    parser.add_argument("--setup-sql", type=Path, help="PostgreSQL: a file of statements run on gradquiz's fresh "
                        "database before the servers start, for what-if runs (drop an index, a constraint)")
    parser.add_argument("--perf", action="store_true", help="also sample every CPU with perf (Debian's linux-perf) "
                        "during every slice and print where a request's CPU went, by process and by user or "
                        "kernel space")
    parser.add_argument("--celery", action="store_true", help="run gradquiz with GRADING_BACKEND=celery and the "
                        f"local Redis as its broker ({CELERY_BROKER}, emptied before and after)")
    parser.add_argument("--against", metavar="REV", help="also run the API of this commit (a branch, a tag, a "
                        "hash) and print this checkout's ratios to it")
    args = parser.parse_args()
    if args.only is not None and (unknown := set(args.only) - set(LABELS)):
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if args.perf and shutil.which("perf") is None:
        parser.error("--perf needs perf (Debian's linux-perf)")
    if args.setup_sql is not None and args.database != "postgresql":
        parser.error("--setup-sql is for PostgreSQL")
    if args.against is not None:
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.against}^{{commit}}"], cwd=ROOT,
                               capture_output=True)
        if known.returncode != 0:
            parser.error(f"--against: no commit {args.against!r} in {ROOT}")
    return args


QUIZ_PATH, CODE_PATH = f"/api/v1/exercises/{QUIZ_SLUG}/attempts", f"/api/v1/exercises/{CODE_SLUG}/attempts"


@dataclass(frozen=True)
class Scripts:
    """wrk's Lua scripts, written to the run's folder."""

    result: Path
    post: Path
    get: Path

    @classmethod
    def write(cls, folder: Path) -> Scripts:
        scripts = cls(folder / "result.lua", folder / "post.lua", folder / "get.lua")
        for path, text in ((scripts.result, RESULT_LUA), (scripts.post, POST_LUA), (scripts.get, GET_LUA)):
            path.write_text(text)
        return scripts


def api_targets(port: int, key: str, master: int, scripts: Scripts) -> dict[str, tuple]:
    """gradquiz's targets on `port`: (url, script, its arguments for a round's tag, the gunicorn master)."""
    api, code_json = f"http://127.0.0.1:{port}", json.dumps(CODE)
    return {
        "healthz": (f"{api}/healthz", scripts.result, lambda tag: [], master),
        "GET": (f"{api}/api/v1/exercises/{QUIZ_SLUG}", scripts.result, lambda tag: [], master),
        "history": (f"{api}/api/v1/learners/{HISTORY_LEARNER}/attempts", scripts.get, lambda tag: [key], master),
        "POST quiz": (f"{api}{QUIZ_PATH}", scripts.post, lambda tag: [QUIZ_PATH, key, tag, "answer", ""], master),
        "POST code": (f"{api}{CODE_PATH}", scripts.post, lambda tag: [CODE_PATH, key, tag, "code", code_json], master),
    }


def beside(targets: dict[str, tuple], theirs: dict[str, tuple], rev: str) -> dict[str, tuple]:
    """`targets` with, after each of gradquiz's, the same target of the other checkout (`theirs`)."""
    return {name + suffix: (target if suffix == "" else theirs[name])
            for name, target in targets.items()
            for suffix in ("", AGAINST + rev) if suffix == "" or name in theirs}


def seed(apis: list[tuple[int, str]], floor_port: int, floor_token: str, log_path: Path) -> None:
    """Once every gradquiz (port, API key) is up: one POST to the insert floor, one quiz and one code
    POST to each gradquiz (a setup mistake fails here) and a learner with a history to read."""
    for port, _key in apis:
        wait_ready(port, "/readyz", log_path)
    post_ok(floor_port, "/attempts", floor_token, {"learner": "check", "answer": RIGHT})
    for port, key in apis:
        post_ok(port, QUIZ_PATH, key, {"learner": "check", "answer": RIGHT})
        post_ok(port, CODE_PATH, key, {"learner": "check", "code": CODE})
        for n in range(5):
            post_ok(port, QUIZ_PATH, key, {"learner": HISTORY_LEARNER, "answer": RIGHT if n % 2 else WRONG})


def empty_broker() -> None:
    import redis

    redis.Redis.from_url(CELERY_BROKER).flushdb()


def run_setup_sql(url: str, script: Path) -> None:
    what_if = create_engine(url)
    with what_if.begin() as conn:
        conn.exec_driver_sql(script.read_text())
    what_if.dispose()
    print(f"ran {script} on gradquiz's database")


def print_results(results: dict[str, list[Round]], splits: dict[str, list[dict[str, float]]],
                  args: argparse.Namespace, other: OtherCheckout | None) -> int:
    """The tables; returns the failed requests."""
    failed = print_table(results, args.rounds)
    for name, target in TARGETS.items():
        for floor in target.also_against:
            if name in results and floor in results:
                pairs = list(zip(results[name], results[floor]))
                print(f"{label(name)} against {label(floor)} (printed, not a target): "
                      f"{statistics.median(r.requests_per_s / f.requests_per_s for r, f in pairs):.2f}x its "
                      f"requests/s, CPU x "
                      f"{statistics.median(f.cpu_ms_with_database / r.cpu_ms_with_database for r, f in pairs):.2f}, "
                      f"p99 {statistics.median(r.p99_ms / f.p99_ms for r, f in pairs):.2f}x")
    if other is not None:
        print_against(results, other.rev)
    if splits:
        print_cpu_splits(splits)
    return failed


def measure(targets: dict[str, tuple], args: argparse.Namespace, env: dict[str, str], tmp: Path,
            other: OtherCheckout | None) -> int:
    """Warm every target up, run the rounds and print the tables; returns the failed requests."""
    workers, threads = env.get("WEB_CONCURRENCY", "2"), env.get("WEB_THREADS", "16")
    print(f"gunicorn gthread, {workers} workers x {threads} threads for every app (gunicorn.conf.py); gradquiz "
          f"ENV=production LOG_FORMAT=json{' GRADING_BACKEND=celery' if args.celery else ''}; wrk 2 threads, "
          f"{args.connections} connections, {args.duration} s per target per round, {args.rounds} rounds; "
          f"{args.database}; {os.cpu_count()} CPUs shared by wrk, gunicorn and the database")
    for url, script, extra, master in targets.values():  # warm-up: pools, caches, first requests
        wrk(url, script, extra(f"warm-{uuid.uuid4().hex[:8]}"), args.connections, min(2, args.duration), master)
    results, splits = run_rounds(targets, args, tmp)
    return print_results(results, splits, args, other)


def main() -> None:
    args = arguments()
    tmp = Path(tempfile.mkdtemp(prefix="gradquiz-bench-load-"))
    database = Deployment() if args.database == "postgresql" else SqliteDatabase(tmp)
    hello_port, floor_port, api_port, other_port = free_port(), free_port(), free_port(), free_port()
    other: OtherCheckout | None = None
    floor_token = uuid.uuid4().hex
    # Not the grading workers: a quiz answer is graded in the request, a code answer only queued.
    env = {**os.environ, "ENV": "production", "SECRET_KEY": uuid.uuid4().hex * 2, "DATABASE_URL": database.url,
           "ATTEMPTS_RATE_LIMIT": "100000/second", "METRICS_TOKEN": uuid.uuid4().hex, "LOG_FORMAT": "json",
           **({"GRADING_BACKEND": "celery", "CELERY_BROKER_URL": CELERY_BROKER} if args.celery else {})}
    servers: list[subprocess.Popen] = []
    log_path = tmp / "servers.log"
    ok = False
    try:
        if args.celery:
            empty_broker()
        key = prepare_database(env)
        if args.setup_sql is not None:
            run_setup_sql(database.url, args.setup_sql)
        apis = [(api_port, key, env, ROOT)]
        if args.against is not None:  # inside the try: a failed checkout still drops the database
            other = OtherCheckout(args.against, tmp)
            other_env, other_key = other.prepare(env, args.database)
            apis.append((other_port, other_key, other_env, other.root))
        with open(log_path, "w") as log:
            hello = start_gunicorn({**env, "BIND": f"127.0.0.1:{hello_port}"}, log, "bench.hello_app:app")
            floor = start_gunicorn({**env, "BIND": f"127.0.0.1:{floor_port}", "FLOOR_TOKEN": floor_token}, log,
                                   "bench.insert_app:app")
            servers += [hello, floor] + [start_gunicorn({**api_env, "BIND": f"127.0.0.1:{port}"}, log, root=root)
                                         for port, _key, api_env, root in apis]
        wait_ready(hello_port, "/", log_path)
        seed([(port, api_key) for port, api_key, *_rest in apis], floor_port, floor_token, log_path)

        scripts = Scripts.write(tmp)
        gradquiz = api_targets(api_port, key, servers[2].pid, scripts)
        # Each target right after its floor: a round's ratio compares slices seconds apart, not a minute.
        targets = {
            "hello": (f"http://127.0.0.1:{hello_port}/", scripts.result, lambda tag: [], hello.pid),
            "healthz": gradquiz["healthz"], "GET": gradquiz["GET"],
            "read floor": (f"http://127.0.0.1:{floor_port}/attempts/{HISTORY_LEARNER}", scripts.get,
                           lambda tag: [floor_token], floor.pid),
            "history": gradquiz["history"],
            "floor": (f"http://127.0.0.1:{floor_port}/attempts", scripts.post,
                      lambda tag: ["/attempts", floor_token, tag, "answer", ""], floor.pid),
            "POST quiz": gradquiz["POST quiz"], "POST code": gradquiz["POST code"],
        }
        if args.only is not None:
            wanted = set(args.only) | {floor for name in args.only for floor in floors_of(name)}
            targets = {name: target for name, target in targets.items() if name in wanted}
        if other is not None:
            targets = beside(targets, api_targets(other_port, apis[1][1], servers[3].pid, scripts), other.rev)

        failed = measure(targets, args, env, tmp, other)
        measured = [("hello world", hello), ("insert floor", floor), ("gradquiz", servers[2])]
        if other is not None:
            measured.append((f"gradquiz @{other.rev}", servers[3]))
        for name, proc in measured:
            rss = ", ".join(f"{rss_mb(pid):.0f}" for pid in sorted(children(proc.pid)))
            print(f"web worker RSS after the run, {name}: {rss} MB")
        print(f"failed requests (non-2xx or socket errors): {failed}")
        ok = failed == 0
    finally:
        stop_processes(servers)
        if args.celery:
            empty_broker()
        database.drop()
        if other is not None:
            other.remove()
        remove_unless_failed(tmp, ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
