"""Jobs claimed from the database with a lease: no broker needed, nothing lost on a restart.

Only worker processes call these; the web process only inserts queued jobs and reads them.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from ..models import AttemptStatus, GradingJob
from ..models.base import utcnow

Job = TypeVar("Job", bound=GradingJob)

QUEUED, RUNNING, GRADED, ERROR = (s.value for s in AttemptStatus)
INTERNAL_ERROR_RESULT = {
    "status": "internal_error",
    "message": "The grader failed on this submission; it was not graded, and it has not cost the "
               "learner anything. An instructor can have it regraded.",
}


def claim(session: Session, model: type[Job], worker_id: str, lease: timedelta, max_tries: int,
          now: datetime | None = None) -> Job | None:
    """Take the oldest job that is queued or whose lease ran out, and commit the claim.

    A job already claimed `max_tries` times is stored as an internal error instead: its
    workers keep dying on it, and a learner must not wait forever.
    """
    clock = (lambda: now) if now is not None else utcnow
    while True:
        claimable = or_(model.status == QUEUED, and_(model.status == RUNNING, model.lease_expires_at < clock()))
        stmt = select(model.id).where(claimable).order_by(model.created_at).limit(1)
        if session.get_bind().dialect.name == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        job_id = session.scalar(stmt)
        if job_id is None:
            session.rollback()
            return None
        job = session.get(model, job_id, populate_existing=True)
        # Read the clock after the row is ours: it cannot predate the job's submission.
        claimed_at = clock()
        if job.tries >= max_tries:
            job.status, job.result, job.graded_at = ERROR, INTERNAL_ERROR_RESULT, claimed_at
            job.lease_owner = job.lease_expires_at = None
            session.commit()
            continue
        job.status = RUNNING
        job.tries += 1
        job.lease_owner = worker_id
        job.lease_expires_at = claimed_at + lease
        job.started_at = claimed_at
        session.commit()
        return job


def complete(session: Session, model: type[GradingJob], job_id: uuid.UUID, worker_id: str,
             values: dict[str, Any]) -> bool:
    """Store a result, only if this worker still holds the lease; False if it lost it.

    The guard makes storing idempotent: a job graded again after a lost lease gets one result.
    """
    result = session.execute(
        update(model)
        .where(model.id == job_id, model.lease_owner == worker_id, model.status == RUNNING)
        .values(**values, status=GRADED, graded_at=utcnow(), lease_owner=None, lease_expires_at=None)
    )
    session.commit()
    return result.rowcount == 1


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
        job.status, job.result, job.graded_at = ERROR, INTERNAL_ERROR_RESULT, utcnow()
        job.lease_owner = job.lease_expires_at = None
        outcome = ERROR
    session.commit()
    return outcome
