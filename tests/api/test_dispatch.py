"""GRADING_BACKEND=celery, the web side: a job goes to the broker after its row is committed, a
job that never went (or was lost) is sent by the sweeper, and a task delivered twice grades once.

The broker is the CI machine's Redis (database 14, emptied per test)."""

from __future__ import annotations

import base64
import json
import time
import uuid
from datetime import timedelta

import pytest
import redis
from sqlalchemy import func, select

from service.config import Settings
from service.extensions import db_session
from service.jobs import db_lease
from service.jobs.dispatch import CeleryDispatcher
from service.models import GRADED_EVENT, ApiClient, Attempt, AttemptEvent, Run
from service.models.base import utcnow
from tests.api.support import recorded_statements
from tests.helpers import bearer, correct_answer

BROKER = "redis://127.0.0.1:6379/14"
UNREACHABLE_BROKER = "redis://127.0.0.1:1/0"
CODE = (Settings().exercises_dir + "/clamp-function/reference.py")
LEASE = timedelta(seconds=30)


@pytest.fixture
def broker():
    connection = redis.Redis.from_url(BROKER)
    connection.flushdb()
    yield connection
    connection.flushdb()
    connection.close()


def queued_tasks(connection) -> list[tuple[str, list]]:
    """(task name, args) of every message waiting in the `grading` queue, oldest first."""
    tasks = []
    for raw in reversed(connection.lrange("grading", 0, -1)):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        tasks.append((message["headers"]["task"], args))
    return tasks


def submit_code(client, key, **headers):
    with open(CODE) as source:
        return client.post("/api/v1/exercises/clamp-function/attempts", headers={**bearer(key), **headers},
                           json={"learner": "ada", "code": source.read()})


def attempt_row(app, attempt_id) -> Attempt:
    with app.app_context():
        return db_session().get(Attempt, uuid.UUID(str(attempt_id)), populate_existing=True)


def settings_for(database_url: str, **overrides) -> Settings:
    return Settings.from_env({}, database_url=database_url, env="testing", grading_backend="celery",
                             celery_broker_url=BROKER, **overrides)


@pytest.fixture
def celery_web(app, make_app):
    """An app on the test database (its catalog synced by `app`) that sends jobs to `broker_url`."""
    return lambda broker_url: make_app(grading_backend="celery", celery_broker_url=broker_url)


def test_a_code_attempt_is_sent_once_after_its_row_is_committed(celery_web, broker, client_key, quiz_catalog,
                                                                 database_url):
    app = celery_web(BROKER)
    key = client_key
    client = app.test_client()
    with recorded_statements(database_url) as statements:
        response = submit_code(client, key, **{"Idempotency-Key": "once"})
    assert response.status_code == 202
    attempt_id = response.json["id"]
    assert queued_tasks(broker) == [("gradquiz.grade_attempt", [attempt_id])]
    assert attempt_row(app, attempt_id).dispatched_at is not None
    (sent,) = [s for s in statements if s.startswith("UPDATE attempts SET dispatched_at")]
    if database_url.startswith("postgresql"):
        assert sent not in statements.in_transaction  # one UPDATE: no BEGIN, no COMMIT
    # A replayed request sends nothing new; a quiz answer, graded at once, sends nothing.
    assert submit_code(client, key, **{"Idempotency-Key": "once"}).headers["Idempotent-Replayed"] == "true"
    quiz = client.post("/api/v1/exercises/backward-none-for-bounds/attempts", headers=bearer(key),
                       json={"learner": "ada", "answer": correct_answer(quiz_catalog["backward-none-for-bounds"])})
    assert quiz.status_code == 201
    run = client.post("/api/v1/runs", headers=bearer(key), json={"code": "print(1)", "wait": 0})
    assert run.status_code == 202
    assert queued_tasks(broker) == [("gradquiz.grade_attempt", [attempt_id]), ("gradquiz.execute_run", [run.json["id"]])]


def test_with_the_broker_down_the_attempt_is_kept_and_the_sweeper_sends_it(celery_web, broker, client_key,
                                                                           database_url):
    app = celery_web(UNREACHABLE_BROKER)
    client = app.test_client()
    started = time.monotonic()
    response = submit_code(client, client_key)
    assert response.status_code == 202
    assert time.monotonic() - started < 5, "a request must not hang on a broker that is down"
    attempt_id = response.json["id"]
    created = attempt_row(app, attempt_id)
    assert created.dispatched_at is None

    settings = settings_for(database_url, grading_sweep_seconds=5)
    sweeper = CeleryDispatcher(settings)
    with app.app_context():
        # Within the grace period the web process may still be sending it: not yet.
        assert sweeper.sweep(db_session(), settings, now=created.created_at + timedelta(seconds=2)) == 0
        later = created.created_at + timedelta(seconds=6)
        assert sweeper.sweep(db_session(), settings, now=later) == 1
        assert sweeper.sweep(db_session(), settings, now=later + timedelta(seconds=1)) == 0
    assert queued_tasks(broker) == [("gradquiz.grade_attempt", [attempt_id])]


class RecordingDispatcher(CeleryDispatcher):
    """The sweeper's choices, without a broker."""

    def __init__(self, settings: Settings) -> None:
        self.sent: list[uuid.UUID] = []

    def publish(self, model, job_id) -> bool:
        self.sent.append(job_id)
        return True


def test_the_sweeper_sends_what_was_never_sent_lost_or_left_by_a_dead_worker(app, database_url, client_key):
    settings = settings_for(database_url, grading_sweep_seconds=5, grading_lease_seconds=60)
    now = utcnow()
    ago = lambda seconds: now - timedelta(seconds=seconds)  # noqa: E731
    rows = {
        "fresh, not sent yet": dict(status="queued", created_at=ago(1)),
        "never sent": dict(status="queued", created_at=ago(10)),
        "sent, waiting in the broker": dict(status="queued", created_at=ago(30), dispatched_at=ago(30)),
        "sent long ago, lost": dict(status="queued", created_at=ago(90), dispatched_at=ago(90)),
        "running": dict(status="running", created_at=ago(10), dispatched_at=ago(10), lease_expires_at=ago(-50)),
        "worker died": dict(status="running", created_at=ago(70), dispatched_at=ago(70), lease_expires_at=ago(5)),
        "graded": dict(status="graded", created_at=ago(90), dispatched_at=ago(90)),
    }
    ids = {}
    with app.app_context():
        session = db_session()
        client_id = session.scalar(select(ApiClient.id))
        for name, columns in rows.items():
            run = Run(id=uuid.uuid4(), client_id=client_id, code="pass", **columns)
            session.add(run)
            ids[run.id] = name
        session.commit()
        recorder = RecordingDispatcher(settings)
        recorder.sweep(session, settings, now=now)
        assert sorted(ids[i] for i in recorder.sent) == ["never sent", "sent long ago, lost", "worker died"]
        # Each goes once per lease period, not once per sweep; the fresh one's grace has run out.
        again = RecordingDispatcher(settings)
        again.sweep(session, settings, now=now + timedelta(seconds=5))
        assert [ids[i] for i in again.sent] == ["fresh, not sent yet"]
        much_later = RecordingDispatcher(settings)
        much_later.sweep(session, settings, now=now + timedelta(seconds=61))
        assert "graded" not in {ids[i] for i in much_later.sent}
        assert "sent long ago, lost" in {ids[i] for i in much_later.sent}


def test_a_task_delivered_twice_grades_once_and_makes_one_event(app, client, client_key):
    attempt_id = uuid.UUID(submit_code(client, client_key).json["id"])
    with app.app_context():
        session = db_session()
        first = db_lease.claim_job(session, Attempt, attempt_id, "celery:task-1", LEASE, max_tries=3)
        assert first is not None and first.tries == 1
        # The same task id again (redelivered after its pool process was lost): it takes the job back.
        again = db_lease.claim_job(session, Attempt, attempt_id, "celery:task-1", LEASE, max_tries=3)
        assert again is not None and again.tries == 2
        # Another task (the sweeper's copy) while the lease runs: nothing.
        assert db_lease.claim_job(session, Attempt, attempt_id, "celery:task-2", LEASE, max_tries=3) is None
        # After the lease ran out, the copy takes it; the first one's late result is dropped.
        later = utcnow() + LEASE + timedelta(seconds=1)
        assert db_lease.claim_job(session, Attempt, attempt_id, "celery:task-2", LEASE, max_tries=3, now=later)
        graded = {"score": 1.0, "correct": True, "result": {"status": "passed"}}
        assert db_lease.complete(session, Attempt, attempt_id, "celery:task-1", graded) is False
        assert db_lease.complete(session, Attempt, attempt_id, "celery:task-2", graded) is True
        assert db_lease.claim_job(session, Attempt, attempt_id, "celery:task-3", LEASE, max_tries=3, now=later) is None
        events = session.scalars(select(AttemptEvent).where(AttemptEvent.attempt_id == attempt_id)).all()
        assert [(e.type, e.data) for e in events] == [(GRADED_EVENT, {"status": "graded", "score": 1.0, "correct": True})]


def test_a_job_claimed_max_tries_times_ends_as_internal_error(app, client, client_key):
    attempt_id = uuid.UUID(submit_code(client, client_key).json["id"])
    with app.app_context():
        session = db_session()
        for n in range(3):
            later = utcnow() + (LEASE + timedelta(seconds=1)) * n
            assert db_lease.claim_job(session, Attempt, attempt_id, f"celery:{n}", LEASE, max_tries=3, now=later)
        last = utcnow() + (LEASE + timedelta(seconds=1)) * 3
        assert db_lease.claim_job(session, Attempt, attempt_id, "celery:3", LEASE, max_tries=3, now=last) is None
        row = session.get(Attempt, attempt_id, populate_existing=True)
        assert (row.status, row.result["status"]) == ("error", "internal_error")
        assert session.scalar(select(func.count()).select_from(AttemptEvent)) == 0


def test_a_sent_job_whose_record_fails_is_still_accepted(celery_web, broker, client_key, monkeypatch):
    from sqlalchemy.exc import OperationalError

    from service.jobs import dispatch

    def database_gone(*_args, **_kwargs):
        raise OperationalError("UPDATE runs", {}, Exception("server closed the connection"))

    monkeypatch.setattr(dispatch, "mark_dispatched", database_gone)
    app = celery_web(BROKER)
    response = submit_code(app.test_client(), client_key)
    # The row was committed before: the learner's attempt is accepted, and the broker has it.
    assert response.status_code == 202
    assert queued_tasks(broker) == [("gradquiz.grade_attempt", [response.json["id"]])]
    assert attempt_row(app, response.json["id"]).dispatched_at is None
