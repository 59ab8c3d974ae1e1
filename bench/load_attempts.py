"""Load a realistic history of attempts into a PostgreSQL database, fast, for the admin benchmarks.

    .venv/bin/python bench/load_attempts.py --database-url postgresql://postgres@127.0.0.1:5432/gq_bench
    .venv/bin/python bench/load_attempts.py --database-url ... --attempts 100000 --append

The database is migrated to head and the exercises under exercises/ synced into it. Then N
attempts (default 1,000,000) are streamed in with COPY: about 20,000 learners under 3 API clients
(bench-lms, bench-frontend, bench-lti, each with its own style of learner id), attempts spread
over the exercises with a skew (a few are popular), over the last 90 days. Each learner works
through their exercises one after another, in time order, until they pass (or give up), and
sometimes again after passing, so "first pass" and "attempts to first pass" mean something.
Quiz attempts are graded at once (passed / failed, partial credit on multiple choice); code
attempts carry a small report (a few checks, the first likely cause from the grader's
LIKELY_CAUSES), and a few are still queued or ended in an internal error. No attempt events,
webhook deliveries or passbacks are made: the benchmarks read attempts and counters only.

The secondary indexes of `attempts` are dropped for the COPY and built again after it, in the
same transaction. Afterwards the statistics counters are rebuilt from the attempts
(service/services/progress.py) and the tables vacuumed and analysed, as autovacuum would leave
them. A database that already holds attempts is refused unless --append is given. Prints rows per second.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select, text  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from service import migrate  # noqa: E402
from service.auth import create_client  # noqa: E402
from service.catalog import load_catalog, sync_catalog  # noqa: E402
from service.config import Settings  # noqa: E402
from service.database import make_engine  # noqa: E402
from service.grading.registry import DEFAULT_WEIGHTS as CHECKS  # noqa: E402
from service.grading.terms import LIKELY_CAUSES  # noqa: E402
from service.models import ApiClient, Attempt, Exercise, ExerciseVersion, Role  # noqa: E402
from service.services import progress  # noqa: E402

EXERCISES_DIR = ROOT / "exercises"
# (client name, share of learners, how that client names its learners)
CLIENTS = [("bench-lms", 0.5, "u{:06d}"), ("bench-frontend", 0.3, "student{}@school.example"),
           ("bench-lti", 0.2, "lti-{:032x}")]
COLUMNS = ("id", "client_id", "learner", "exercise_id", "exercise_version_id", "status", "answer", "score", "correct",
           "result", "created_at", "started_at", "graded_at", "code", "tries", "grader_score", "overridden", "verdict",
           "likely_cause")
CODE_CHECKS = ("parses", "entry_point", "forward", "backward_arity", "gradcheck", "gradient")
CODE_WEIGHT = sum(CHECKS[c] for c in CODE_CHECKS)
# The checks a likely cause makes fail.
CAUSE_CHECKS = {"forward_wrong": ("forward",), "forward_error": ("forward", "backward_arity"),
                "input_modified": ("forward",), "output_detached": ("forward", "gradcheck", "gradient"),
                "wrong_number_of_returns": ("backward_arity",), "gradient_for_non_tensor": ("backward_arity",),
                "needs_input_grad": ("backward_arity",), "not_reduced": ("backward_arity", "gradient")}
OTHER_VERDICTS = [("syntax_error", 4), ("timeout", 3), ("crashed", 2), ("forbidden", 1), ("memory_limit", 1)]
INTERNAL_ERROR = {"status": "internal_error", "message": "The grader failed on this submission; it was not graded."}
NULL = r"\N"


def copy_text(value: str) -> str:
    """A value in COPY's text format."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def jtext(value) -> str:
    return copy_text(json.dumps(value, separators=(",", ":")))


def stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(" ")


class Exercises:
    """What the generator needs to know of each exercise: answers, entry point, popularity."""

    def __init__(self, session: Session, rng: random.Random) -> None:
        rows = session.execute(select(Exercise, ExerciseVersion.id).join(
            ExerciseVersion, (ExerciseVersion.exercise_id == Exercise.id)
            & (ExerciseVersion.number == Exercise.current_version)).where(Exercise.published.is_(True))
            .order_by(Exercise.slug)).all()
        if not rows:
            sys.exit("no published exercises: is exercises/ empty?")
        self.items = []
        for exercise, version_id in rows:
            spec = exercise.version.spec
            self.items.append({"id": exercise.id, "slug": exercise.slug, "kind": exercise.kind,
                               "version_id": version_id, "difficulty": exercise.difficulty,
                               "answers": self._answers(spec), "code": self._code(spec)})
        order = list(range(len(self.items)))
        rng.shuffle(order)  # which exercises are popular: a fixed shuffle, Zipf-like weights
        self.weights = [0.0] * len(self.items)
        for rank, i in enumerate(order):
            self.weights[i] = 1.0 / (rank + 1) ** 0.9

    @staticmethod
    def _answers(spec: dict) -> tuple[str, list[str], bool]:
        """(the right answer, some wrong answers, whether partial credit exists) as JSON text."""
        kind = spec["kind"]
        if kind == "single_choice":
            right = next(c["id"] for c in spec["choices"] if c["correct"])
            wrong = [c["id"] for c in spec["choices"] if not c["correct"]]
            return jtext(right), [jtext(w) for w in wrong], False
        if kind == "multiple_choice":
            right = [c["id"] for c in spec["choices"] if c["correct"]]
            wrong = [c["id"] for c in spec["choices"] if not c["correct"]]
            picks = [right[:1], right[:1] + wrong[:1], wrong[:2], right[1:] or wrong[:1]]
            return jtext(right), [jtext(p) for p in picks], True
        if kind == "short_answer":
            wrong = [w["match"] for w in spec["answer"].get("wrong", [])]
            return jtext(spec["answer"]["accepted"][0]), [jtext(w) for w in wrong or ["no idea"]], False
        if kind == "numeric":
            value = spec["answer"]["value"]
            wrong = [w["value"] for w in spec["answer"].get("wrong", [])]
            wrong = wrong or ([[v + 1 for v in value]] if isinstance(value, list) else [value + 1])
            return jtext(value), [jtext(w) for w in wrong], False
        return NULL, [NULL], False

    @staticmethod
    def _code(spec: dict) -> list[str]:
        """A few short submissions (the benchmark reads them, it does not run them)."""
        if spec["kind"] != "code":
            return []
        entry = (spec.get("code") or {}).get("entry_point", "Fn")
        bodies = ["return grad_output * mask", "return grad_output", "return -grad_output * mask, None, None",
                  "return 2 * grad_output * x"]
        return [copy_text(f"import torch\n\nclass {entry}(torch.autograd.Function):\n    @staticmethod\n"
                          f"    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x\n\n"
                          f"    @staticmethod\n    def backward(ctx, grad_output):\n        (x,) = ctx.saved_tensors\n"
                          f"        {body}\n") for body in bodies]


class Generator:
    def __init__(self, exercises: Exercises, clients: list[tuple[int, str]], learners: int, days: int,
                 rng: random.Random, now: float) -> None:
        self.ex, self.clients, self.rng, self.now = exercises, clients, rng, now
        self.start = now - days * 86400
        self.learners = learners
        causes = list(LIKELY_CAUSES)
        rng.shuffle(causes)
        self.causes = causes
        self.cause_weights = [1.0 / (i + 1) ** 1.1 for i in range(len(causes))]

    def learner_ids(self):
        """(client_id, learner) for every learner: clients by their share, each its own id style."""
        out = []
        for n in range(self.learners):
            u = (n + 0.5) / self.learners
            acc = 0.0
            for (client_id, style), (_name, share, _) in zip(self.clients, CLIENTS):
                acc += share
                if u <= acc or client_id == self.clients[-1][0]:
                    ident = self.rng.getrandbits(128) if style.endswith("x}") else n
                    out.append((client_id, style.format(ident)))
                    break
        return out

    def attempts_per_learner(self, total: int) -> list[int]:
        weights = [self.rng.lognormvariate(0, 1.0) for _ in range(self.learners)]
        scale = total / sum(weights)
        counts = [max(1, int(w * scale)) for w in weights]
        diff = total - sum(counts)
        i = 0
        while diff != 0:  # settle on exactly `total`
            j = i % self.learners
            if diff > 0:
                counts[j] += 1
                diff -= 1
            elif counts[j] > 1:
                counts[j] -= 1
                diff += 1
            i += 1
        return counts

    def pick_exercises(self, k: int) -> list[int]:
        """k distinct exercises, popular ones likelier (Efraimidis-Spirakis), easiest first."""
        rng = self.rng
        keys = sorted(((rng.random() ** (1.0 / w), i) for i, w in enumerate(self.ex.weights)), reverse=True)
        chosen = [i for _, i in keys[:k]]
        return sorted(chosen, key=lambda i: (self.ex.items[i]["difficulty"], i))

    def rows(self, total: int):
        """Lines of COPY text, learner by learner, each learner's attempts in time order."""
        rng = self.rng
        for (client_id, learner), count in zip(self.learner_ids(), self.attempts_per_learner(total)):
            per_exercise = max(1.0, rng.uniform(2.0, 6.0))
            k = min(len(self.ex.items), max(1, round(count / per_exercise)))
            chosen = self.pick_exercises(k)
            split = [1] * k
            for _ in range(count - k):
                split[rng.randrange(k)] += 1
            # The learner's active period, then their submission times in order.
            begin = rng.uniform(self.start, self.now - 3600)
            span = min(self.now - 60 - begin, rng.uniform(3600, 30 * 86400))
            times = sorted(rng.uniform(begin, begin + span) for _ in range(count))
            t = iter(times)
            for i, m in zip(chosen, split):
                exercise = self.ex.items[i]
                passed_before = False
                base = {1: 0.6, 2: 0.45, 3: 0.35}.get(exercise["difficulty"], 0.3)
                if exercise["kind"] == "code":
                    base -= 0.15
                for n in range(m):
                    p = 0.85 if passed_before else min(0.9, base + 0.1 * n)
                    passes = rng.random() < p
                    passed_before = passed_before or passes
                    yield self.row(exercise, client_id, learner, next(t), passes)

    def row(self, exercise: dict, client_id: int, learner: str, created: float, passes: bool) -> str:
        rng = self.rng
        ident = f"{rng.getrandbits(128):032x}"
        common = [ident, str(client_id), copy_text(learner), str(exercise["id"]), str(exercise["version_id"])]
        if exercise["kind"] != "code":
            right, wrongs, partial = exercise["answers"]
            if passes:
                answer, score, verdict, result = right, 1.0, "passed", '{"feedback":[]}'
            else:
                answer = rng.choice(wrongs)
                score = rng.choice((0.0, 0.33, 0.5, 0.67)) if partial else 0.0
                verdict = "failed"
                result = '{"feedback":[{"feedback":"Not quite: look again at what backward returns."}]}'
            at = stamp(created)
            return "\t".join(common + ["graded", answer, repr(score), "t" if passes else "f", result, at, NULL, at,
                                       NULL, "0", repr(score), "f", verdict, NULL]) + "\n"
        code = rng.choice(exercise["code"])
        started = created + rng.uniform(0.02, 0.5)
        graded = started + rng.uniform(0.05, 2.0)
        u = rng.random()
        if u < 0.001:  # still waiting for a worker
            return "\t".join(common + ["queued", NULL, NULL, NULL, NULL, stamp(created), NULL, NULL, code, "0", NULL,
                                       "f", NULL, NULL]) + "\n"
        if u < 0.005:  # the grader failed on it: not the learner's outcome
            return "\t".join(common + ["error", NULL, NULL, NULL, jtext(INTERNAL_ERROR), stamp(created),
                                       stamp(started), stamp(graded), code, "3", NULL, "f", "internal_error",
                                       NULL]) + "\n"
        cause = None
        if passes:
            verdict, failing = "passed", ()
        elif rng.random() < 0.9:
            verdict = "failed"
            if rng.random() < 0.85:
                cause = rng.choices(self.causes, self.cause_weights)[0]
                failing = CAUSE_CHECKS.get(cause, ("gradcheck", "gradient"))
            else:
                failing = rng.choice((("gradcheck",), ("gradient",), ("forward", "gradient")))
        else:
            verdict = rng.choices([v for v, _ in OTHER_VERDICTS], [w for _, w in OTHER_VERDICTS])[0]
            failing = ("parses",) if verdict == "syntax_error" else ()
        if verdict in ("passed", "failed"):
            checks = [{"name": c, "weight": CHECKS[c], "passed": c not in failing,
                       "message": "ok" if c not in failing else f"{c} differs from the reference at input 0."}
                      | ({"likely_cause": cause} if cause and c in failing else {}) for c in CODE_CHECKS]
            score = round(sum(ch["weight"] for ch in checks if ch["passed"]) / CODE_WEIGHT, 4)
        else:
            checks = [{"name": "parses", "weight": 0.0, "passed": verdict != "syntax_error",
                       "message": f"The submission ended with {verdict}."}]
            score = 0.0
        result = {"status": verdict, "score": score, "checks": checks, "likely_causes": [cause] if cause else [],
                  "timings": {"total_ms": round((graded - started) * 1000, 1)}}
        return "\t".join(common + ["graded", NULL, repr(score), "t" if verdict == "passed" else "f", jtext(result),
                                   stamp(created), stamp(started), stamp(graded), code, "1", repr(score), "f",
                                   verdict, cause or NULL]) + "\n"


def drop_secondary_indexes(cursor) -> list[str]:
    """Drop the attempts table's indexes but its primary key; returns the statements that build them again.

    Bulk-load practice: drop the secondary indexes, load, build them again by sorting (much
    faster than a million random index inserts). Run it in the load's transaction, so a failed
    load leaves the indexes as they were."""
    cursor.execute("SET maintenance_work_mem = '512MB'")
    cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                   "AND tablename = 'attempts' AND indexname <> 'pk_attempts'")
    indexes = cursor.fetchall()
    for name, _definition in indexes:
        cursor.execute(f'DROP INDEX "{name}"')
    return [definition for _name, definition in indexes]


def ensure_clients(session: Session) -> list[tuple[int, str]]:
    out = []
    for name, _share, style in CLIENTS:
        client = session.scalar(select(ApiClient).where(ApiClient.name == name))
        if client is None:
            client, _key = create_client(session, name, Role.CLIENT)
        out.append((client.id, style))
    session.commit()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True, help="a PostgreSQL database (postgresql://...)")
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--learners", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--append", action="store_true", help="add to the attempts already there")
    args = parser.parse_args()

    url = Settings.from_env({}, database_url=args.database_url).sqlalchemy_url
    if not url.startswith("postgresql"):
        sys.exit("the loader streams with PostgreSQL's COPY: give a postgresql:// URL")
    rng = random.Random(args.seed)
    migrate.upgrade(url)
    engine = make_engine(url)
    with Session(engine) as session:
        sources, problems = load_catalog(EXERCISES_DIR)
        if problems:
            sys.exit(f"the catalog has problems: {problems}")
        sync_catalog(session, sources)
        session.commit()
        existing = session.scalar(select(func.count()).select_from(Attempt))
        if existing and not args.append:
            sys.exit(f"the database holds {existing} attempts already: pass --append to add more")
        clients = ensure_clients(session)
        exercises = Exercises(session, rng)
    generator = Generator(exercises, clients, min(args.learners, args.attempts), args.days, rng, time.time())

    print(f"loading {args.attempts:,} attempts of {generator.learners:,} learners under {len(clients)} clients, "
          f"{len(exercises.items)} exercises, {args.days} days")
    started = time.perf_counter()
    raw = engine.raw_connection()
    try:
        conn = raw.driver_connection
        with conn.cursor() as cursor:
            try:  # skip the per-row foreign-key triggers (the rows are built valid); needs a superuser
                cursor.execute("SET session_replication_role = replica")
                triggers = "off"
            except Exception:
                conn.rollback()
                triggers = "on"
            indexes = drop_secondary_indexes(cursor)
            with cursor.copy(f"COPY attempts ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                buffer, n = io.StringIO(), 0
                for line in generator.rows(args.attempts):
                    buffer.write(line)
                    n += 1
                    if n % 20_000 == 0:
                        copy.write(buffer.getvalue())
                        buffer = io.StringIO()
                    if n % 200_000 == 0:
                        print(f"  {n:,} rows, {n / (time.perf_counter() - started):,.0f} rows/s", flush=True)
                copy.write(buffer.getvalue())
            copied = time.perf_counter() - started
            for definition in indexes:
                cursor.execute(definition)
            cursor.execute("SET session_replication_role = DEFAULT")
        conn.commit()
    finally:
        raw.close()
    loaded = time.perf_counter() - started
    print(f"COPY: {n:,} rows in {copied:.1f} s = {n / copied:,.0f} rows/s (foreign-key triggers {triggers}); "
          f"{len(indexes)} secondary indexes built again in {loaded - copied:.1f} s")

    t = time.perf_counter()
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL work_mem = '256MB'"))
        progress.rebuild(connection)
    rebuilt = time.perf_counter() - t
    t = time.perf_counter()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM (ANALYZE) attempts"))
        for table in progress.COUNTER_TABLES:
            connection.execute(text(f"VACUUM (ANALYZE) {table}"))
        analysed = time.perf_counter() - t
        counts = connection.execute(text(
            "SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM learner_progress), "
            "(SELECT count(DISTINCT (client_id, learner)) FROM learner_progress), "
            "(SELECT pg_size_pretty(pg_total_relation_size('attempts')))")).one()
    engine.dispose()
    total = time.perf_counter() - started
    print(f"counters rebuilt in {rebuilt:.1f} s; VACUUM ANALYZE in {analysed:.1f} s")
    print(f"attempts in the database: {counts[0]:,} ({counts[3]}); learner_progress rows: {counts[1]:,} "
          f"({counts[2]:,} learners)")
    print(f"total: {total:.1f} s, {n / total:,.0f} rows/s end to end")


if __name__ == "__main__":
    main()
