"""Jobs claimed from the database with a lease: no broker needed, nothing lost on a restart.

Only worker processes call these; the web process only inserts queued jobs and reads them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, CursorResult, and_, bindparam, exists, or_, select, update
from sqlalchemy.orm import Session, lazyload
from sqlalchemy.orm.attributes import set_committed_value

from ..models import GRADED_EVENT, Attempt, AttemptStatus, ExerciseProof, GradingJob
from ..models.base import utcnow
from ..services import authoring
from ..services.events import record_attempt_event

Job = TypeVar("Job", bound=GradingJob)

QUEUED, RUNNING, GRADED, ERROR = (s.value for s in AttemptStatus)
INTERNAL_ERROR_RESULT = {
    "status": "internal_error",
    "message": "The grader failed on this submission; it was not graded, and it has not cost the "
               "learner anything. An admin can send it to be graded again.",
}


def _claimable(model: type[GradingJob], worker_id: str, now: datetime) -> Any:
    """Queued; or running on a lease that ran out (its worker died) or that `worker_id` holds
    itself (a task delivered again after its worker process was lost, or retried)."""
    return or_(*_claimable_branches(model, worker_id, now))


def _claimable_branches(model: type[GradingJob], worker_id: Any, now: Any) -> tuple[Any, Any]:
    return (model.status == QUEUED,
            and_(model.status == RUNNING, or_(model.lease_expires_at < now, model.lease_owner == worker_id)))


def _params(model: type[GradingJob]) -> tuple[Any, Any]:
    """The claim's parameters (the worker, the clock) as bound parameters of the columns' types."""
    return (bindparam("worker_id", type_=model.lease_owner.type),
            bindparam("now", type_=model.lease_expires_at.type))


_OLDEST: dict[tuple[str, bool], tuple[Any, ...]] = {}
_PEEK: dict[tuple[str, ...], Any] = {}


def _oldest_statements(model: type[GradingJob], locked: bool) -> tuple[Any, ...]:
    """The two index scans of `_oldest_claimable`, built once per table (a claim is the worker's
    most frequent statement: building the expressions anew cost more CPU than running them)."""
    key = (model.__name__, locked)
    if key not in _OLDEST:
        statements = []
        for branch in _claimable_branches(model, *_params(model)):
            stmt = select(model.id, model.created_at).where(branch).order_by(model.created_at).limit(2)
            statements.append(stmt.with_for_update(skip_locked=True) if locked else stmt)
        _OLDEST[key] = tuple(statements)
    return _OLDEST[key]


def _peek_statement(models: Sequence[type[GradingJob]]) -> Any:
    """One row: for each table, whether it holds a claimable job."""
    key = tuple(model.__name__ for model in models)
    if key not in _PEEK:
        flags = []
        for model in models:
            branches = _claimable_branches(model, *_params(model))
            flags.append(or_(*(exists().where(branch) for branch in branches)))
        _PEEK[key] = select(*flags)
    return _PEEK[key]


def claimable_models(connection: Connection, models: Sequence[type[GradingJob]], worker_id: str,
                     now: datetime | None = None) -> list[type[GradingJob]]:
    """Which of `models` hold a claimable job, in one read (meant for a connection that takes no
    write lock, see Worker.run_once): a worker with nothing to do never takes the lock to find out."""
    row = connection.execute(_peek_statement(models), {"worker_id": worker_id, "now": now or utcnow()}).one()
    return [model for model, flag in zip(models, row, strict=True) if flag]


def _locked(session: Session, stmt: Any) -> Any:
    # Concurrent claimers on PostgreSQL skip a row another one is taking; SQLite's writers
    # hold the database's write lock (BEGIN IMMEDIATE), so they queue instead.
    return stmt.with_for_update(skip_locked=True) if session.get_bind().dialect.name == "postgresql" else stmt


def claim(session: Session, model: type[Job], worker_id: str, lease: timedelta, max_tries: int,
          now: datetime | None = None) -> Job | None:
    """Take the oldest claimable job and commit the claim (the database backend's queue)."""
    return claim_next(session, model, worker_id, lease, max_tries, now)[0]


def claim_next(session: Session, model: type[Job], worker_id: str, lease: timedelta, max_tries: int,
               now: datetime | None = None) -> tuple[Job | None, bool]:
    """claim(), and whether another claimable job of the table was waiting behind the one taken
    (from the same two index scans: the grading pool then forks its next child without the
    warm-up, which only pays while a child waits idle for its task)."""
    clock = (lambda: now) if now is not None else utcnow
    while True:
        job_id, more = _oldest_claimable(session, model, worker_id, clock())
        if job_id is None:
            session.rollback()
            return None, False
        job = _take(session, model, job_id, worker_id, lease, max_tries, clock)
        if job is not None:
            return job, more


def _oldest_claimable(session: Session, model: type[GradingJob], worker_id: str,
                      now: datetime) -> tuple[uuid.UUID | None, bool]:
    """The oldest claimable job, from two index scans on (status, created_at) rather than one
    scan of the table: a queue of 100,000 jobs (a regrade of a whole course) is not sorted anew
    at each claim; and whether there is another (each scan reads up to two rows)."""
    locked = session.get_bind().dialect.name == "postgresql"  # see _locked
    params = {"worker_id": worker_id, "now": now}
    found = [row for stmt in _oldest_statements(model, locked) for row in session.execute(stmt, params).all()]
    if not found:
        return None, False
    return min(found, key=lambda row: row.created_at).id, len(found) > 1


def claim_job(session: Session, model: type[Job], job_id: uuid.UUID, worker_id: str, lease: timedelta,
              max_tries: int, now: datetime | None = None) -> Job | None:
    """Take this job, if it is claimable, and commit the claim (a broker delivered its task).

    None when it is finished, or held by another worker whose lease still runs: a task
    delivered twice then does nothing the second time.
    """
    clock = (lambda: now) if now is not None else utcnow
    # Wait for a lock on the row rather than skip it: the sender may still be recording that
    # it sent the task, and a skipped row would look like a duplicate delivery.
    stmt = select(model.id).where(model.id == job_id, _claimable(model, worker_id, clock())).with_for_update()
    if session.scalar(stmt) is None:
        session.rollback()
        return None
    return _take(session, model, job_id, worker_id, lease, max_tries, clock)


def _take(session: Session, model: type[Job], job_id: uuid.UUID, worker_id: str, lease: timedelta,
          max_tries: int, clock: Any) -> Job | None:
    """Claim a job selected as claimable. A job already claimed `max_tries` times is stored as
    an internal error instead (None): its workers keep dying on it, and a learner must not
    wait forever."""
    job = session.get_one(model, job_id, populate_existing=True, options=_WITHOUT_RELATIONSHIPS.get(model, ()))
    # Read the clock after the row is ours: it cannot predate the job's submission.
    claimed_at = clock()
    if job.tries >= max_tries:
        _store_internal_error(job, claimed_at)
        session.commit()
        return None
    job.status = RUNNING
    job.tries += 1
    job.lease_owner = worker_id
    job.lease_expires_at = claimed_at + lease
    job.started_at = claimed_at
    if isinstance(job, ExerciseProof):
        authoring.mark_proof_running(session, job)
    session.commit()
    return job


#: A claimed attempt is loaded without its exercise and version (joined by default, with the
#: version's whole content and the exercise's current version and topics): the worker reads
#: what the judge needs of the version once per process (worker.exercise_payload).
_WITHOUT_RELATIONSHIPS: dict[type[GradingJob], tuple[Any, ...]] = {
    Attempt: (lazyload(Attempt.exercise), lazyload(Attempt.exercise_version))}


def _store_internal_error(job: GradingJob, at: datetime) -> None:
    job.status, job.result, job.graded_at = ERROR, INTERNAL_ERROR_RESULT, at
    job.lease_owner = job.lease_expires_at = None
    if isinstance(job, Attempt):
        job.verdict = INTERNAL_ERROR_RESULT["status"]
    if isinstance(job, ExerciseProof):
        session = Session.object_session(job)
        assert session is not None
        authoring.record_proof_job(session, job.id, authoring.PROOF_NOT_RUN, at)


def complete(session: Session, model: type[GradingJob], job_id: uuid.UUID, worker_id: str,
             values: dict[str, Any], job: GradingJob | None = None) -> bool:
    """Store a result, only if this worker still holds the lease; False if it lost it.

    The guard makes storing idempotent: a job graded again after a lost lease, or whose task
    was delivered twice, gets one result and one `attempt.graded` event, written together.
    `job`: the job as claimed in this session, if the caller holds it; an attempt's event is then
    written from it and the stored values, without reading the row back (its client and link do
    not change, and the event takes the rest from the values stored here).
    """
    graded_at = utcnow()
    stored_values = {**values, "status": GRADED, "graded_at": graded_at, "lease_owner": None, "lease_expires_at": None}
    result = cast(CursorResult[Any], session.execute(
        update(model).where(model.id == job_id, model.lease_owner == worker_id, model.status == RUNNING)
        .values(**stored_values)
    ))
    stored = result.rowcount == 1
    if stored and model is ExerciseProof:
        # The report goes to its version in the transaction that stores it: a proof is never
        # done without its version knowing.
        authoring.record_proof_job(session, job_id, values["result"], graded_at)
    if stored and model is Attempt:
        attempt = job if isinstance(job, Attempt) and job.id == job_id else None
        if attempt is not None:
            for name, value in stored_values.items():  # as stored: no UPDATE of its own at the flush
                set_committed_value(attempt, name, value)
            client_id, lti_link_id = attempt.client_id, attempt.lti_link_id
        else:
            client_id, lti_link_id = session.execute(
                select(Attempt.client_id, Attempt.lti_link_id).where(Attempt.id == job_id)).one()
        record_attempt_event(session, attempt_id=job_id, client_id=client_id, lti_link_id=lti_link_id,
                             type=GRADED_EVENT, at=graded_at, attempt=attempt, data={
                                 "status": GRADED, "score": values.get("score"), "correct": values.get("correct")})
    session.commit()
    return stored


def give_up_or_retry(session: Session, model: type[GradingJob], job_id: uuid.UUID, worker_id: str,
                     max_tries: int) -> str:
    """After a grader fault: queue the job again, or store an internal error after the last try."""
    job = session.get(model, job_id, populate_existing=True)
    if job is None or job.lease_owner != worker_id or job.status != RUNNING:
        session.rollback()
        return "lost"
    if job.tries < max_tries:
        job.status, job.lease_owner, job.lease_expires_at = QUEUED, None, None
        outcome = QUEUED
    else:
        _store_internal_error(job, utcnow())
        outcome = ERROR
    session.commit()
    return outcome
