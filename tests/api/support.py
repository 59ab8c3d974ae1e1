"""Helpers of the API tests: catalogs copied and synced, regrades and grades run by hand, the counters
caught up, the statements a request sends, a worker process, a webhook registered."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import timedelta

from sqlalchemy import event, select

from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT, Settings
from service.database import engine_for
from service.extensions import db_session
from service.jobs import db_lease
from service.jobs.worker import Worker
from service.models import Attempt, ExerciseDailyCount, ExerciseOutcomeCount, ExerciseProgress, LearnerProgress
from service.services import progress
from tests.helpers import bearer

SOURCE = PROJECT_ROOT / "exercises"
LEASE = timedelta(seconds=60)





def copy_exercise(tmp_path, slug):
    root = tmp_path / "exercises"
    shutil.copytree(SOURCE / slug, root / slug)
    return root, root / slug / "exercise.toml"


def set_correct(toml: str, choice: str, correct: bool) -> str:
    """The exercise.toml text with `choice`'s `correct` flag set."""
    start = toml.index(f'id = "{choice}"')
    flag = toml.index("correct = ", start)
    end = toml.index("\n", flag)
    return toml[:flag] + f"correct = {'true' if correct else 'false'}" + toml[end:]


def sync_folder(app, root):
    exercises, problems = load_catalog(root)
    assert not problems, problems
    with app.app_context():
        report = sync_catalog(db_session(), exercises, unpublish_missing=False)
        db_session().commit()
    return report


def grade_regrade_items(database_url, judge=None) -> int:
    """Let a grading worker take every queued job (quiz items need no judge)."""
    worker = Worker(Settings.from_env({}, database_url=database_url, env="testing"), judge, "test-regrader")
    done = 0
    while worker.run_once():
        done += 1
    return done


def catch_up(app) -> int:
    """What the workers' folder does (service/jobs/counters.py): every event not yet counted, folded."""
    folded = 0
    with app.app_context():
        while n := progress.fold_pending(db_session(), limit=7):  # several batches, as under load
            db_session().commit()
            folded += n
    return folded


def assert_counters_equal_a_rebuild(app) -> dict[str, list[tuple]]:
    """The counters, once the folder has caught up, are those a full recount from the attempts gives."""
    catch_up(app)
    with app.app_context():
        session = db_session()
        kept = counter_rows(session)
        progress.rebuild(session)
        rebuilt = counter_rows(session)
        session.rollback()
    assert kept == rebuilt
    assert kept["learners"], "nothing was counted"
    return kept


def code_report(status, score, failing=(), cause=None):
    checks = [{"name": name, "weight": 0.25, "passed": name not in failing, "message": "..."}
              for name in ("forward", "gradcheck", "gradient", "boundary")]
    return {"score": score, "grader_score": score, "correct": status == "passed", "verdict": status,
            "likely_cause": cause, "result": {"status": status, "score": score, "checks": checks,
                                              "likely_causes": [cause] if cause else []}}


def grade_next(app, values):
    """What a worker does: claim the oldest queued attempt, store its grade."""
    with app.app_context():
        job = db_lease.claim(db_session(), Attempt, "test-worker", LEASE, max_tries=3)
        assert db_lease.complete(db_session(), Attempt, job.id, "test-worker", values)
        return job.id


class Statements(list[str]):
    """The statements sent, in order; `in_transaction`: which of them (on PostgreSQL) went on a
    connection inside a transaction (psycopg sends BEGIN before the first, COMMIT at the end)."""

    in_transaction: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.in_transaction = []


@contextmanager
def recorded_statements(database_url: str):
    statements = Statements()

    def listener(conn, _cursor, statement, *_rest) -> None:
        statements.append(statement)
        if conn.dialect.name == "postgresql" and not conn.connection.dbapi_connection.autocommit:
            statements.in_transaction.append(statement)

    engine = engine_for(database_url)
    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", listener)


CLAMP_REFERENCE = (PROJECT_ROOT / "exercises" / "clamp-function" / "reference.py").read_text()


def start_worker(database_url: str) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url, "GRADING_LEASE_SECONDS": "6",
           "GRADING_TIMEOUT_SECONDS": "5", "ENV": "testing"}
    return subprocess.Popen([sys.executable, "-m", "service.jobs.worker"], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def attempt_state(app, attempt_id):
    with app.app_context():
        attempt = db_session().get(Attempt, attempt_id, populate_existing=True)
        return attempt.status, attempt.tries, attempt.score


def wait_for(predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def register_webhook(client, key, receiver, **body) -> dict:
    response = client.post("/api/v1/webhooks", headers=bearer(key), json={"url": receiver.url, **body})
    assert response.status_code == 201, response.json
    receiver.secret = response.json["secret"]
    return response.json


def counter_rows(session) -> dict[str, list[tuple]]:
    """Every counter row (rows whose counts are all zero mean nothing: left out)."""
    def rows(model, *columns, keep=lambda row: True):
        return sorted(tuple(row) for row in session.execute(select(*columns)) if keep(row))

    lp = LearnerProgress
    return {
        "learners": rows(lp, lp.client_id, lp.learner, lp.exercise_id, lp.attempts, lp.best_score, lp.latest_score,
                         lp.best_raw_score, lp.passed, lp.first_attempt_at, lp.first_passed_at, lp.attempts_to_first_pass,
                         lp.last_graded_at),
        "exercises": rows(ExerciseProgress, ExerciseProgress.exercise_id, ExerciseProgress.attempts,
                          ExerciseProgress.passed_attempts, ExerciseProgress.learners,
                          ExerciseProgress.passed_learners, keep=lambda r: any(r[1:])),
        "days": rows(ExerciseDailyCount, ExerciseDailyCount.exercise_id, ExerciseDailyCount.day,
                     ExerciseDailyCount.attempts, ExerciseDailyCount.passed, keep=lambda r: any(r[2:])),
        "outcomes": rows(ExerciseOutcomeCount, ExerciseOutcomeCount.exercise_id, ExerciseOutcomeCount.kind,
                         ExerciseOutcomeCount.name, ExerciseOutcomeCount.count, keep=lambda r: r[3] != 0),
    }


# --- course exercises (issue 34) ----------------------------------------------------------------

QUIZ_SOURCE = "backward-none-for-bounds"  # single choice; "none-each" is right
CODE_SOURCE = "double-function"


def folder_files(slug: str) -> dict[str, str]:
    """A catalog exercise's files, as an author would send them ({path: text}, exercise.toml included)."""
    root = SOURCE / slug
    return {path.relative_to(root).as_posix(): path.read_text() for path in sorted(root.rglob("*")) if path.is_file()}


def quiz_files(title: str = "Bounds get no gradient") -> dict[str, str]:
    """A quiz's files (QUIZ_SOURCE's, titled `title`): proven at once."""
    files = folder_files(QUIZ_SOURCE)
    files["exercise.toml"] = files["exercise.toml"].replace('title = "', f'title = "{title}: ', 1)
    return files


def code_files(backward: str = "grad_output * 2") -> dict[str, str]:
    """A code exercise's files (CODE_SOURCE's), its reference's backward returning `backward`."""
    files = folder_files(CODE_SOURCE)
    files["reference.py"] = files["reference.py"].replace("return grad_output * 2", f"return {backward}")
    return files


def authoring_courses(app, client, client_key, client_key_for) -> dict:
    """Two courses of the client; staff of each: an instructor's key, and a course key of each."""
    from service.models import Role

    made = [client.post("/api/v1/courses", headers=bearer(client_key), json={"external_id": name, "title": name}).json
            for name in ("course-a", "course-b")]
    instructor = client_key_for(app, "prof", Role.INSTRUCTOR)
    keys = [client.post(f"/api/v1/courses/{c['id']}/keys", headers=bearer(instructor), json={"name": "script"}).json["key"]
            for c in made]
    return {"id": made[0]["id"], "other": made[1]["id"], "key": keys[0], "other_key": keys[1], "instructor": instructor,
            "url": f"/api/v1/courses/{made[0]['id']}/exercises", "other_url": f"/api/v1/courses/{made[1]['id']}/exercises"}
