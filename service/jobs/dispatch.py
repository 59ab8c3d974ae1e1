"""Handing queued jobs to the grading workers.

GRADING_BACKEND=database: nothing to send; the workers claim queued rows from the database.
GRADING_BACKEND=celery: a job's row is committed first, then its id goes to the broker as a
task, and `dispatched_at` records that it went. The sweeper (in every Celery worker) sends again
what never went (the sender died in between, or the broker was down), what the broker lost (a
restart) and what a dead worker held (its lease ran out). A job sent twice is graded once: the
task claims the row with a lease before grading (db_lease.claim_job).

Web-safe: imports Celery, never torch.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Update, and_, bindparam, func, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ..config import Settings
from ..database import outside_transaction
from ..models import Attempt, ExerciseProof, GradingJob, PreviewAttempt, RegradeItem, Run, VariantPreparation
from ..models.base import utcnow
from .db_lease import QUEUED, RUNNING, _locked

log = logging.getLogger("gradquiz.dispatch")

TASK_NAMES: dict[type[GradingJob], str] = {Attempt: "gradquiz.grade_attempt", Run: "gradquiz.execute_run",
                                            PreviewAttempt: "gradquiz.grade_preview",
                                            ExerciseProof: "gradquiz.prove_exercise",
                                            VariantPreparation: "gradquiz.prepare_variant",
                                            RegradeItem: "gradquiz.regrade_item"}
QUEUE = "grading"
# A regrade's items (up to every attempt of a course) have a queue of their own, which a worker
# takes from in turn with QUEUE: a learner's attempt never waits behind a whole regrade. A class's
# variant preparations (200 learners opening an exercise) wait there too: no learner waits on them.
REGRADE_QUEUE = "regrades"
QUEUES = (QUEUE, REGRADE_QUEUE)
# Jobs the sweeper sends per table per sweep: a backlog is sent over several sweeps.
SWEEP_BATCH = 500
# The sweeper sends an exercise's regrade items (the request that makes 100,000 of them sends
# none), keeping at most SWEEP_BATCH of them waiting in the broker: a task that waited there
# longer than a lease would be sent again.
PACED = (RegradeItem,)


def queue_for(model: type[GradingJob]) -> str:
    return REGRADE_QUEUE if model in (RegradeItem, VariantPreparation) else QUEUE


def make_celery(settings: Settings) -> Any:
    """The Celery app, configured so that no job is lost when a worker or the broker dies."""
    from celery import Celery

    app = Celery("gradquiz", broker=settings.celery_broker_url, set_as_current=False)
    app.conf.update(
        task_default_queue=QUEUE,
        task_serializer="json",
        accept_content=["json"],
        # Results live in the database; Celery keeps none.
        task_ignore_result=True,
        # Acknowledge after the grade, and give a task back when its worker process is lost, so
        # a worker killed mid-grade leaves the task to another.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # One task at a time per worker process: a grade waits in the broker, where any idle
        # worker can take it, not behind a busy one.
        worker_prefetch_multiplier=1,
        # Redis hands an unacknowledged task out again after this; RabbitMQ does when the
        # worker's connection drops. Matched to the lease: both mean "that worker is gone".
        broker_transport_options={"visibility_timeout": settings.grading_lease_seconds},
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=2,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app


class CeleryDispatcher:
    """Sends jobs' ids to the broker and records that they went."""

    def __init__(self, settings: Settings) -> None:
        self.celery = make_celery(settings)

    def publish(self, model: type[GradingJob], job_id: uuid.UUID) -> bool:
        """Hand one job's task to the broker; False if the broker is unreachable (it goes later)."""
        try:
            # No retries here: a request must not hang on a broker that is down. The sweeper
            # sends the job once the broker is back.
            self.celery.send_task(TASK_NAMES[model], args=[str(job_id)], queue=queue_for(model), retry=False)
        except Exception as exc:
            log.warning("could not send %s %s to the broker (%s); the sweeper sends it later",
                        model.JOB_KIND, job_id, exc)
            return False
        return True

    def dispatch(self, session: Session, model: type[GradingJob], job_id: uuid.UUID) -> None:
        """Send a job whose row is committed, and record that it went.

        Never fails the request: the job is committed, so the caller is told it was accepted.
        If the record cannot be written, the sweeper sends the job once more (a duplicate that
        grades nothing twice)."""
        if not self.publish(model, job_id):
            return
        try:
            outside_transaction(session)  # one UPDATE
            mark_dispatched(session, model, [job_id], utcnow())
        except SQLAlchemyError as exc:
            session.rollback()
            log.warning("sent %s %s but could not record it (%s); the sweeper may send it again",
                        model.JOB_KIND, job_id, exc)

    def sweep(self, session: Session, settings: Settings, now: datetime | None = None) -> int:
        """Send every job that is due (see `due`); return how many went."""
        now = now or utcnow()
        grace = timedelta(seconds=settings.grading_sweep_seconds)
        resend = timedelta(seconds=settings.grading_lease_seconds)
        sent = 0
        for model in TASK_NAMES:
            batch = SWEEP_BATCH - (waiting_in_broker(session, model, now, resend) if model in PACED else 0)
            if batch <= 0:
                continue
            stmt = select(model.id).where(due(model, now, grace, resend)).order_by(model.created_at).limit(batch)
            # The rows stay locked while they are sent, so two sweepers never send the same job.
            ids = session.scalars(_locked(session, stmt)).all()
            went = [job_id for job_id in ids if self.publish(model, job_id)]
            mark_dispatched(session, model, went, now)
            if went:
                log.info("sweeper sent %d %s jobs again: %s", len(went), model.JOB_KIND,
                         ", ".join(map(str, went[:10])))
            sent += len(went)
        return sent


class DatabaseDispatcher:
    """The embedded backend: the workers find queued jobs in the database themselves."""

    def dispatch(self, session: Session, model: type[GradingJob], job_id: uuid.UUID) -> None:
        return None


def dispatcher_for(settings: Settings) -> CeleryDispatcher | DatabaseDispatcher:
    return CeleryDispatcher(settings) if settings.grading_backend == "celery" else DatabaseDispatcher()


def due(model: type[GradingJob], now: datetime, grace: timedelta, resend: timedelta) -> Any:
    """Jobs the sweeper sends: queued and never sent after `grace`, or sent longer than `resend`
    ago and still queued (the broker lost the task); or running on a lease that ran out and not
    sent since (the worker died, and its task may have died with it)."""
    sent_long_ago = model.dispatched_at < now - resend
    never_sent = and_(model.dispatched_at.is_(None), model.created_at < now - grace)
    lease_ran_out = and_(model.status == RUNNING, model.lease_expires_at < now,
                         or_(model.dispatched_at.is_(None), model.dispatched_at < model.lease_expires_at, sent_long_ago))
    return or_(and_(model.status == QUEUED, or_(never_sent, sent_long_ago)), lease_ran_out)


def waiting_in_broker(session: Session, model: type[GradingJob], now: datetime, resend: timedelta) -> int:
    """Jobs sent less than `resend` ago and not yet taken by a worker."""
    return session.scalar(select(func.count()).select_from(model).where(
        model.status == QUEUED, model.dispatched_at >= now - resend)) or 0


def mark_dispatched(session: Session, model: type[GradingJob], job_ids: Iterable[uuid.UUID], at: datetime) -> None:
    """Record that the jobs went to the broker at `at`, and commit.

    A Core statement built once per table, run after every code POST with Celery: the ORM's UPDATE
    was built anew each time and then evaluated against every object the session holds. No caller
    reads `dispatched_at` from an object it holds afterwards."""
    job_ids = list(job_ids)
    if job_ids:
        session.connection().execute(_DISPATCHED_UPDATES[model], {"ids": job_ids, "at": at})
    session.commit()


# Run on the session's connection, not the session: a Core UPDATE of each job table.
_DISPATCHED_UPDATES: dict[type[GradingJob], Update] = {
    model: update(model).where(model.id.in_(bindparam("ids", expanding=True))).values(dispatched_at=bindparam("at"))
    for model in TASK_NAMES}
