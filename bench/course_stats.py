"""What a course's statistics cost: counted from the course's attempts when asked (issue 18).

    .venv/bin/python bench/course_stats.py                       # 1,000,000 attempts, courses of 3,000 learners
    .venv/bin/python bench/course_stats.py --attempts 200000 --course-learners 1000 --requests 20

One fresh PostgreSQL database on 127.0.0.1:5432 (created here, dropped at the end). The attempts
table is filled with set-based SQL (secondary indexes dropped and built again, then VACUUM
(ANALYZE), as bench/growth.py does): every learner has 30 graded attempts within the last 60 days
at exercises picked with a skew (the most popular gets about a sixth), and belongs to one course
of --course-learners learners (learner n to course 1 + n mod courses), all under one LMS client;
code attempts carry a report with a failing check. The counters are rebuilt from the table, so the
every-course lines read what the workers' folder would have left.

Requests go through the Flask test client in this process (routing, key check, SQL,
serialisation), --requests measured per line after 5 warm-up requests: a course's overview, its
statistics at the most popular quiz exercise and at the most popular code exercise (its failing
checks are expanded from the reports' JSON), a learner's progress in the course; beside them, the
every-course counters' overview and statistics. Prints p50 and p99, then each line's SQL replayed
under EXPLAIN (ANALYZE, BUFFERS): buffer pages touched and execution time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402

from service import create_app  # noqa: E402
from service.auth import create_client  # noqa: E402
from service.catalog import load_catalog, sync_catalog  # noqa: E402
from service.extensions import db_session  # noqa: E402
from service.models import Course, Exercise, ExerciseVersion, Role  # noqa: E402
from service.services import progress  # noqa: E402

from admin import Bench, percentile  # noqa: E402  (bench/admin.py: the test-client timer and p50/p99)
from backends import Deployment  # noqa: E402  (bench/backends.py: a fresh database, dropped afterwards)
from growth import CHECKS, CODE, SqlWork  # noqa: E402  (the same code and report; EXPLAIN of one request)
from load_attempts import drop_secondary_indexes  # noqa: E402

ATTEMPTS_PER_LEARNER = 30
COURSE_INDEX = "ix_attempts_course_exercise"
FILL = f"""
WITH picked AS (
    SELECT l, 1 + mod(l, %(courses)s) AS course, 1 + floor(%(exercises)s * power(random(), 2))::int AS e,
           random() AS u, now() - interval '60 days' * random() AS at
    FROM generate_series(1, %(learners)s) AS l, generate_series(1, {ATTEMPTS_PER_LEARNER})
), kinds AS (
    SELECT *, (%(is_code)s::boolean[])[e] AS code_kind, CASE WHEN u < 0.45 THEN 1.0 ELSE 0.5 END AS score FROM picked
)
INSERT INTO attempts (id, client_id, learner, exercise_id, exercise_version_id, course_id, status, answer, code, result,
                      score, grader_score, correct, overridden, verdict, likely_cause, created_at, graded_at, tries)
SELECT gen_random_uuid(), %(client)s, 'u' || l, (%(exercise_ids)s::int[])[e], (%(version_ids)s::int[])[e],
       (%(course_ids)s::int[])[course], 'graded',
       CASE WHEN NOT code_kind THEN to_jsonb('x'::text) END, CASE WHEN code_kind THEN %(code)s END,
       CASE WHEN code_kind THEN jsonb_build_object('status', CASE WHEN score = 1 THEN 'passed' ELSE 'failed' END,
                                                   'score', score, 'checks', %(checks)s::jsonb)
            ELSE '{{"feedback": []}}'::jsonb END,
       score, score, score = 1, false, CASE WHEN score = 1 THEN 'passed' ELSE 'failed' END,
       CASE WHEN score < 1 THEN 'wrong_sign' END, at, at + interval '0.5 s', 1
FROM kinds
"""


def fill(engine, params: dict) -> str:
    started = time.perf_counter()
    raw = engine.raw_connection()
    try:
        conn = raw.driver_connection
        with conn.cursor() as cursor:
            cursor.execute("SELECT setseed(0.5)")
            cursor.execute("SET session_replication_role = replica")  # no per-row foreign-key triggers
            indexes = drop_secondary_indexes(cursor)
            cursor.execute(FILL, params)
            for definition in indexes:
                cursor.execute(definition)
            cursor.execute("SET session_replication_role = DEFAULT")
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM (ANALYZE) attempts")
        conn.autocommit = False
    finally:
        raw.close()
    return f"filled in {time.perf_counter() - started:.1f} s"


def measure(admin: Bench, sql: SqlWork, name: str, url: str) -> None:
    admin.measure(name, lambda n: url)
    _name, samples, note = admin.lines.pop()
    if samples is None:
        raise RuntimeError(f"{name}: {note}")
    pages, ms = sql.of(admin, url)
    print(f"{name:<58}{percentile(samples, 0.5):>9.1f}{percentile(samples, 0.99):>9.1f}{pages:>9}{ms:>9.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=1_000_000, help="attempts in the table, every course's")
    parser.add_argument("--course-learners", type=int, default=3_000, help="learners of each course")
    parser.add_argument("--requests", type=int, default=30, help="measured requests per line")
    parser.add_argument("--keep", action="store_true", help="keep the database (to EXPLAIN by hand); else dropped")
    args = parser.parse_args()
    learners = args.attempts // ATTEMPTS_PER_LEARNER
    courses = max(1, learners // args.course_learners)

    deployment = Deployment()
    try:
        app = create_app({"database_url": deployment.url, "env": "testing"})
        with app.app_context():
            session = db_session()
            sync_catalog(session, load_catalog(ROOT / "exercises")[0])
            lms, _key = create_client(session, "bench-lms", Role.CLIENT)
            _admin, admin_key = create_client(session, "bench-admin", Role.ADMIN)
            course_rows = [Course(client_id=lms.id, external_id=f"course-{n}", title=f"Course {n}")
                           for n in range(courses)]
            session.add_all(course_rows)
            session.flush()
            rows = session.execute(select(Exercise.id, ExerciseVersion.id, Exercise.kind, Exercise.slug).join(
                ExerciseVersion, (ExerciseVersion.exercise_id == Exercise.id)
                & (ExerciseVersion.number == Exercise.current_version)).order_by(Exercise.slug)).all()
            params = {"courses": courses, "learners": learners, "exercises": len(rows), "client": lms.id,
                      "exercise_ids": [r[0] for r in rows], "version_ids": [r[1] for r in rows],
                      "is_code": [r[2] == "code" for r in rows], "course_ids": [c.id for c in course_rows],
                      "code": CODE, "checks": CHECKS}
            measured_course = course_rows[1 % courses].id  # learner n is in course 1 + n mod courses
            session.commit()
            engine = session.get_bind()
            print(f"PostgreSQL {engine.dialect.server_version_info}: {learners * ATTEMPTS_PER_LEARNER:,} attempts, "
                  f"{learners:,} learners in {courses} courses of about {args.course_learners:,}; "
                  f"{args.requests} requests per line after 5 warm-up ones", flush=True)
            print(fill(engine, params), flush=True)
            started = time.perf_counter()
            progress.rebuild(session)
            session.commit()
            print(f"counters rebuilt in {time.perf_counter() - started:.1f} s", flush=True)
        quiz = next(r[3] for r in rows if r[2] != "code")  # the popularity order is the slug order here
        code = next(r[3] for r in rows if r[2] == "code")
        admin, sql = Bench(app, admin_key, args.requests), SqlWork(engine)
        course = f"course={measured_course}"
        lines = [
            (f"course: GET /admin/stats?{course}", "/api/v1/admin/stats?" + course),
            (f"course: exercise stats, {quiz} (quiz)", f"/api/v1/admin/exercises/{quiz}/stats?{course}"),
            (f"course: exercise stats, {code} (code)", f"/api/v1/admin/exercises/{code}/stats?{course}"),
            ("course: a learner's progress (30 attempts)", "/api/v1/admin/learners/u1/progress?" + course),
            ("every course (counters): GET /admin/stats", "/api/v1/admin/stats"),
            (f"every course (counters): exercise stats, {quiz}", f"/api/v1/admin/exercises/{quiz}/stats"),
            (f"every course (counters): exercise stats, {code}", f"/api/v1/admin/exercises/{code}/stats"),
        ]
        print(f"\n{'request':<58}{'p50 ms':>9}{'p99 ms':>9}{'pages':>9}{'SQL ms':>9}")
        for name, url in lines:
            measure(admin, sql, name, url)
        # The same course lines without the course statistics' covering index (migration 0019): only
        # ix_attempts_course_created left, every attempt read is a heap page. Then with it again.
        course_lines = [line for line in lines if line[0].startswith("course")]
        with engine.begin() as conn:
            conn.exec_driver_sql(f"ALTER INDEX {COURSE_INDEX} RENAME TO {COURSE_INDEX}_kept")
            conn.exec_driver_sql(f"UPDATE pg_index SET indisvalid = false WHERE indexrelid = '{COURSE_INDEX}_kept'::regclass")
        print(f"without {COURSE_INDEX}:", flush=True)
        for name, url in course_lines:
            measure(admin, sql, name, url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"UPDATE pg_index SET indisvalid = true WHERE indexrelid = '{COURSE_INDEX}_kept'::regclass")
            conn.exec_driver_sql(f"ALTER INDEX {COURSE_INDEX}_kept RENAME TO {COURSE_INDEX}")
        print(f"with {COURSE_INDEX} again:", flush=True)
        for name, url in course_lines:
            measure(admin, sql, name, url)
    finally:
        if args.keep:
            print(f"kept: {deployment.url}")
        else:
            deployment.drop()


if __name__ == "__main__":
    main()
