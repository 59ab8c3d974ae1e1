"""Latency of the list endpoints as the attempts table grows: 10,000, 100,000, 1,000,000 attempts.

    .venv/bin/python bench/growth.py                      # 10k, 100k, 1M side by side (about 4 minutes)
    .venv/bin/python bench/growth.py --sizes 10000,100000 --requests 100

One run, one process, one fresh PostgreSQL database on 127.0.0.1:5432 (created here and dropped
at the end). The table is filled up to each size in turn with set-based SQL (INSERT ... SELECT
over generate_series, secondary indexes dropped and built again, as bench/load_attempts.py does),
then VACUUM (ANALYZE), as autovacuum would leave it; then every line is measured at that size.

The data grows as a service's does: more learners, not longer histories, and time moves on.
Learner n has 5 + (n * 7919) % 51 attempts (30 on average) within a fortnight from their start
(a new learner every 15 minutes), comes through one of the clients (50%, 30%, 15%, 5% of the
learners; the 30% are bench-lastterm's up to 100,000 attempts, a school that then left, and
bench-frontend's after), answers exercises with a skew (the most popular gets about a sixth of
the attempts; the second, 7%, is retired after 100,000 attempts); code exercises' attempts carry
their source and a report. The measured learner has 30 attempts, whatever the size.

Requests go through the Flask test client in this process (the whole WSGI app: routing, key
check, query validation, SQL, serialisation; no socket), --requests times per line after 5
unmeasured warm-up requests. The lists measured are those the API has:

- the learner history, GET /api/v1/learners/{learner}/attempts (client key): its first page,
  its last page (?page=2), and a different learner each request;
- the attempt list, GET /api/v1/admin/attempts (staff key; a client key has no client-wide
  list, and GET /api/v1/exercises/{slug}/attempts does not exist, only its POST), 20 a page:
  a big client's attempts (?client=), a small client's, the client that left's, the most popular
  exercise's (?exercise=), that exercise within the big client and within the client that left,
  the retired exercise's; the first page and page 50
  (page 20 for lists too short at 10,000), reached by following next_cursor once, then that
  page's URL measured.

Prints p50 and p99 per size and the ratio of the largest size to the smallest; then, per line,
the SQL of one request replayed under EXPLAIN (ANALYZE, BUFFERS): buffer pages touched (a
count other load on the machine does not blur) and execution time. --keep keeps the database.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import event, select  # noqa: E402

from service import create_app  # noqa: E402
from service.auth import create_client  # noqa: E402
from service.catalog import load_catalog, sync_catalog  # noqa: E402
from service.config import Settings  # noqa: E402
from service.extensions import db_session  # noqa: E402
from service.grading.terms import LIKELY_CAUSES  # noqa: E402
from service.models import Exercise, ExerciseVersion, Role  # noqa: E402

from admin import Bench, percentile  # noqa: E402  (bench/admin.py: the test-client timer and p50/p99)
from backends import Deployment  # noqa: E402  (bench/backends.py: a fresh database, dropped afterwards)
from load_attempts import drop_secondary_indexes  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
# (client name, learner id prefix); learner n's client is picked by n % 20 (CLIENT_OF below).
CLIENTS = [("bench-lms", "u"), ("bench-frontend", "student"), ("bench-lti", "lti-"), ("bench-small", "dev"),
           ("bench-lastterm", "s")]
# A school that left: the 30% share's learners up to this one (the first 100,000 attempts) came
# through bench-lastterm, later ones through bench-frontend. At 1,000,000 attempts its newest
# attempt is older than 900,000 others'. Likewise the second most popular exercise is retired
# then (later learners get the third instead).
LAST_TERM_LEARNERS = 3334
CLIENT_OF = (f"CASE WHEN mod(l, 20) < 10 THEN 1 WHEN mod(l, 20) < 16 THEN (CASE WHEN l <= {LAST_TERM_LEARNERS} THEN 5 "
             "ELSE 2 END) WHEN mod(l, 20) < 19 THEN 3 ELSE 4 END")
MEASURED_ATTEMPTS = 30
PAGE_LIMIT = 20  # the admin list's page size here: the learner history's default page size
CODE = ("import torch\n\nclass ClampFn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, lo, hi):\n"
        "        ctx.save_for_backward(x)\n        ctx.lo, ctx.hi = lo, hi\n        return x.clamp(lo, hi)\n\n"
        "    @staticmethod\n    def backward(ctx, grad_output):\n        (x,) = ctx.saved_tensors\n"
        "        mask = (x >= ctx.lo) & (x <= ctx.hi)\n        return grad_output * mask, None, None\n")

# Attempts of learners first..last, at most `count` rows. e: the exercise (1-based, most popular
# first: floor(n * u^2)), u: whether it passes, t: when, within the learner's fortnight. A new
# learner starts every 15 minutes from 400 days ago: time moves on as the table grows.
FILL = f"""
WITH learners AS (
    SELECT l, 5 + mod(l * 7919, 51) AS n, {CLIENT_OF} AS c FROM generate_series(%(first)s::bigint, %(last)s) AS l
), picked AS (
    SELECT l, c, CASE WHEN e = 2 AND l > {LAST_TERM_LEARNERS} THEN 3 ELSE e END AS e, u, t FROM (
        SELECT l, c, 1 + floor(%(exercises)s * power(random(), 2))::int AS e, random() AS u, random() AS t
        FROM learners, LATERAL generate_series(1, n) LIMIT %(count)s) AS drawn
), timed AS (
    SELECT *, (%(is_code)s::boolean[])[e] AS code_kind,
           now() - interval '400 days' + interval '15 minutes' * l + interval '14 days' * t AS at
    FROM picked
)
INSERT INTO attempts (id, client_id, learner, exercise_id, exercise_version_id, status, answer, code, result, score,
                      grader_score, correct, overridden, verdict, likely_cause, created_at, started_at, graded_at, tries)
SELECT gen_random_uuid(), (%(client_ids)s::int[])[c], (%(prefixes)s::text[])[c] || l, (%(exercise_ids)s::int[])[e],
       (%(version_ids)s::int[])[e], 'graded',
       CASE WHEN NOT code_kind THEN to_jsonb(CASE WHEN u < 0.5 THEN 'right' ELSE 'wrong' END) END,
       CASE WHEN code_kind THEN %(code)s END,
       CASE WHEN code_kind THEN jsonb_build_object(
                'status', CASE WHEN u < 0.4 THEN 'passed' ELSE 'failed' END, 'score', CASE WHEN u < 0.4 THEN 1 ELSE 0.5 END,
                'checks', %(checks)s::jsonb, 'likely_causes', '[]'::jsonb, 'timings', jsonb_build_object('total_ms', 350))
            WHEN u < 0.5 THEN '{{"feedback": []}}'::jsonb
            ELSE '{{"feedback": [{{"feedback": "Not quite: look again at what backward returns."}}]}}'::jsonb END,
       s.score, s.score, s.score = 1, false, CASE WHEN s.score = 1 THEN 'passed' ELSE 'failed' END,
       CASE WHEN code_kind AND s.score < 1 AND u < 0.9 THEN (%(causes)s::text[])[1 + mod(floor(u * 10)::int, %(n_causes)s)] END,
       at, CASE WHEN code_kind THEN at + interval '0.2 s' END, at + interval '0.5 s', CASE WHEN code_kind THEN 1 ELSE 0 END
FROM timed, LATERAL (SELECT CASE WHEN u < (CASE WHEN code_kind THEN 0.4 ELSE 0.5 END) THEN 1.0
                                 WHEN code_kind THEN 0.5 ELSE 0.0 END AS score) AS s
"""
CHECKS = ('[{"name": "parses", "weight": 1, "passed": true, "message": "ok"}, '
          '{"name": "forward", "weight": 2, "passed": true, "message": "ok"}, '
          '{"name": "gradcheck", "weight": 3, "passed": false, "message": "gradcheck differs from the reference at input 0."}]')


def attempts_of(learner: int) -> int:
    return 5 + (learner * 7919) % 51


def client_of(learner: int) -> int:
    """0-based index into CLIENTS, as CLIENT_OF picks it."""
    r = learner % 20
    return 0 if r < 10 else (4 if learner <= LAST_TERM_LEARNERS else 1) if r < 16 else 2 if r < 19 else 3


class Table:
    """The attempts table, filled learner by learner up to a size."""

    def __init__(self, engine, exercises: list[tuple[int, int, bool]], client_ids: list[int]) -> None:
        self.engine, self.rows, self.next_learner = engine, 0, 1
        self.params = {"exercises": len(exercises), "exercise_ids": [e[0] for e in exercises],
                       "version_ids": [e[1] for e in exercises], "is_code": [e[2] for e in exercises],
                       "client_ids": client_ids, "prefixes": [prefix for _name, prefix in CLIENTS], "code": CODE,
                       "checks": CHECKS, "causes": list(LIKELY_CAUSES), "n_causes": len(LIKELY_CAUSES)}

    def fill(self, size: int) -> str:
        count = size - self.rows
        first, last, total = self.next_learner, self.next_learner - 1, 0
        while total < count:
            last += 1
            total += attempts_of(last)
        started = time.perf_counter()
        raw = self.engine.raw_connection()
        try:
            conn = raw.driver_connection
            with conn.cursor() as cursor:
                cursor.execute("SELECT setseed(%s)", (size / 1e7 % 1,))  # the same rows every run
                cursor.execute("SET session_replication_role = replica")  # no per-row foreign-key triggers
                indexes = drop_secondary_indexes(cursor)
                cursor.execute(FILL, {**self.params, "first": first, "last": last, "count": count})
                inserted = time.perf_counter() - started
                for definition in indexes:
                    cursor.execute(definition)
                cursor.execute("SET session_replication_role = DEFAULT")
            conn.commit()
            conn.autocommit = True
            indexed = time.perf_counter() - started
            conn.execute("VACUUM (ANALYZE) attempts")
            conn.autocommit = False  # back to the pool as the app expects it
        finally:
            raw.close()
        self.rows, self.next_learner = size, last + 1
        return (f"filled to {size:,} attempts ({last:,} learners): INSERT {inserted:.1f} s, indexes "
                f"{indexed - inserted:.1f} s, VACUUM ANALYZE {time.perf_counter() - started - indexed:.1f} s")


def measured_learner() -> int:
    """The first learner of the big client with a typical number of attempts."""
    return next(n for n in range(1, 10_000) if client_of(n) == 0 and attempts_of(n) == MEASURED_ATTEMPTS)


def learner_id(n: int) -> str:
    return CLIENTS[client_of(n)][1] + str(n)


class SqlWork:
    """The SQL one request runs, replayed under EXPLAIN (ANALYZE, BUFFERS): the buffer pages it
    touches, a count that other load on the machine does not blur, and its execution time."""

    def __init__(self, engine) -> None:
        self.engine, self.statements, self.recording = engine, [], False
        event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, _conn, _cursor, statement, parameters, _context, _executemany) -> None:
        if self.recording and statement.lstrip().upper().startswith("SELECT"):
            self.statements.append((statement, parameters))

    def of(self, bench: Bench, url: str) -> tuple[int, float]:
        self.statements, self.recording = [], True
        try:
            bench.get(url)
        finally:
            self.recording = False
        pages, ms = 0, 0.0
        with self.engine.connect() as conn:
            for statement, parameters in self.statements:
                plan = conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement,
                                            parameters).scalar()[0]
                pages += plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"]
                ms += plan["Execution Time"]
        return pages, ms


class Lines:
    """Each line's samples per size."""

    def __init__(self, app, engine, keys: list[str], admin_key: str, requests: int) -> None:
        self.benches = [Bench(app, key, requests) for key in keys]
        self.admin = Bench(app, admin_key, requests)
        self.requests = requests
        self.sql = SqlWork(engine)
        self.samples: dict[str, dict[int, list[float]]] = {}
        self.work: dict[str, dict[int, tuple[int, float]]] = {}

    def record(self, size: int, name: str, bench: Bench, urls) -> None:
        bench.measure(name, urls)
        _name, samples, note = bench.lines.pop()
        if samples is None:
            raise RuntimeError(f"{name}: {note}")
        self.samples.setdefault(name, {})[size] = samples
        self.work.setdefault(name, {})[size] = self.sql.of(bench, urls(0))

    def page(self, base: str, number: int) -> str:
        """The URL of page `number` of an admin list, by following next_cursor from the first."""
        url = base
        for _ in range(number - 1):
            body, _ms = self.admin.get(url)
            if body["next_cursor"] is None:
                raise RuntimeError(f"{base} has fewer than {number} pages")
            url = f"{base}&cursor={body['next_cursor']}"
        return url

    def measure(self, size: int, learners: int, popular: str, retired: str, rng: random.Random) -> None:
        measured = measured_learner()
        history = f"/api/v1/learners/{learner_id(measured)}/attempts"
        own = self.benches[client_of(measured)]
        self.record(size, f"learner history, page 1 ({MEASURED_ATTEMPTS} attempts)", own, lambda n: history)
        self.record(size, "learner history, ?page=2 (its last)", own, lambda n: f"{history}?page=2")
        sample = [rng.randrange(1, learners + 1) for _ in range(self.requests + 5)]
        self.record_each_learner(size, sample)
        admin = "/api/v1/admin/attempts"
        # The deep page: page 50, or page 20 for the lists too short for 50 pages at 10,000 attempts.
        for label, query, deep_page in (
                (f"?client={CLIENTS[0][0]} (50% of learners)", {"client": CLIENTS[0][0]}, 50),
                (f"?client={CLIENTS[3][0]} (5%)", {"client": CLIENTS[3][0]}, 20),
                (f"?client={CLIENTS[4][0]} (left after 100k)", {"client": CLIENTS[4][0]}, 20),
                (f"?exercise={popular} (most popular)", {"exercise": popular}, 50),
                (f"?client={CLIENTS[0][0]}&exercise=(it)", {"client": CLIENTS[0][0], "exercise": popular}, 20),
                (f"?exercise={retired} (retired after 100k)", {"exercise": retired}, 20),
                (f"?client={CLIENTS[4][0]}&exercise=(most popular)", {"client": CLIENTS[4][0], "exercise": popular},
                 20)):
            base = f"{admin}?" + urlencode({**query, "limit": PAGE_LIMIT})
            self.record(size, f"admin list {label}, page 1", self.admin, lambda n, url=base: url)
            deep = self.page(base, deep_page)
            self.record(size, f"admin list {label}, page {deep_page}", self.admin, lambda n, url=deep: url)

    def record_each_learner(self, size: int, sample: list[int]) -> None:
        """The history of a different learner each request, each with its own client's key."""
        name = "learner history, page 1, a different learner each time"
        samples = []
        for i, n in enumerate(sample):
            _body, ms = self.benches[client_of(n)].get(f"/api/v1/learners/{learner_id(n)}/attempts")
            if i >= 5:  # the first five warm up
                samples.append(ms)
        self.samples.setdefault(name, {})[size] = samples

    def print(self, sizes: list[int]) -> None:
        head = "".join(f"{f'{size:,}':>18}" for size in sizes)
        print(f"\n{'':<58}{head}{'ratio ' + f'{sizes[-1]:,}/{sizes[0]:,}':>22}")
        print(f"{'request (p50 / p99 ms)':<58}" + "".join(f"{'p50':>9}{'p99':>9}" for _ in sizes)
              + f"{'p50':>11}{'p99':>11}")
        for name, by_size in self.samples.items():
            cells = [(percentile(by_size[s], 0.5), percentile(by_size[s], 0.99)) for s in sizes]
            first, last = cells[0], cells[-1]
            print(f"{name:<58}" + "".join(f"{p50:>9.2f}{p99:>9.2f}" for p50, p99 in cells)
                  + f"{last[0] / first[0]:>11.2f}{last[1] / first[1]:>11.2f}")
        print(f"\n{'SQL of one request (buffer pages / EXPLAIN ANALYZE ms)':<58}"
              + "".join(f"{'pages':>9}{'ms':>9}" for _ in sizes) + f"{'pages':>11}{'ms':>11}")
        for name, by_size in self.work.items():
            cells = [by_size[s] for s in sizes]
            first, last = cells[0], cells[-1]
            print(f"{name:<58}" + "".join(f"{pages:>9}{ms:>9.2f}" for pages, ms in cells)
                  + f"{last[0] / max(1, first[0]):>11.2f}{last[1] / first[1]:>11.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="attempts at each step, ascending")
    parser.add_argument("--requests", type=int, default=200, help="measured requests per line and size")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the database (to EXPLAIN by hand); else dropped")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rng = random.Random(args.seed)

    deployment = Deployment()
    try:
        # Rate limits off: this measures the lists, not the limiter (a setting the app may not have yet).
        limits = {name: "1000000/second" for name in ("attempts_rate_limit", "runs_rate_limit")
                  if name in Settings.__dataclass_fields__}
        app = create_app({"database_url": deployment.url, "env": "testing", **limits})
        with app.app_context():
            session = db_session()
            sync_catalog(session, load_catalog(ROOT / "exercises")[0])
            keys, client_ids = [], []
            for name, _prefix in CLIENTS:
                client, key = create_client(session, name, Role.CLIENT)
                keys.append(key)
                client_ids.append(client.id)
            _admin, admin_key = create_client(session, "bench-admin", Role.ADMIN)
            rows = session.execute(select(Exercise.id, ExerciseVersion.id, Exercise.kind, Exercise.slug).join(
                ExerciseVersion, (ExerciseVersion.exercise_id == Exercise.id)
                & (ExerciseVersion.number == Exercise.current_version)).order_by(Exercise.slug)).all()
            session.commit()
            engine = session.get_bind()
        rng.shuffle(rows)  # the popularity order: a fixed shuffle
        table = Table(engine, [(r[0], r[1], r[2] == "code") for r in rows], client_ids)
        popular, retired = rows[0][3], rows[1][3]
        lines = Lines(app, engine, keys, admin_key, args.requests)
        print(f"PostgreSQL {engine.dialect.server_version_info}, database {deployment.name}; {len(rows)} exercises; "
              f"requests through the Flask test client in this process, {args.requests} measured per line after "
              f"5 warm-up requests")
        for size in sizes:
            print(table.fill(size), flush=True)
            with app.app_context():
                db_session().close()
            lines.measure(size, table.next_learner - 1, popular, retired, rng)
        lines.print(sizes)
    finally:
        if args.keep:
            print(f"kept: {deployment.url}")
        else:
            deployment.drop()


if __name__ == "__main__":
    main()
