"""Jobs the grader gave up on (status error), and sending one back to the workers."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Select, func, literal, select, union_all
from sqlalchemy.orm import Session

from ..database import window
from ..models import ApiClient, Attempt, AttemptStatus, GradingJob, Run

KINDS: dict[str, type[GradingJob]] = {model.JOB_KIND: model for model in (Attempt, Run)}
ERROR = AttemptStatus.ERROR.value


def failed_jobs(kind: str | None) -> Select:
    """(kind, id, created_at) of failed jobs, newest first."""
    parts = [select(literal(name).label("kind"), model.id, model.created_at).where(model.status == ERROR)
             for name, model in KINDS.items() if kind in (None, name)]
    union = union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()
    return select(union.c.kind, union.c.id, union.c.created_at).order_by(union.c.created_at.desc(), union.c.id)


def count(session: Session, stmt: Select) -> int:
    return session.scalar(select(func.count()).select_from(stmt.order_by(None).subquery())) or 0


def describe(job: GradingJob, client_name: str) -> dict[str, Any]:
    attempt = job if isinstance(job, Attempt) else None
    return {
        "kind": job.JOB_KIND, "id": job.id, "status": job.status, "client": client_name,
        "exercise": attempt.exercise.slug if attempt else None, "learner": attempt.learner if attempt else None,
        "tries": job.tries, "created_at": job.created_at, "failed_at": job.graded_at,
        "message": (job.result or {}).get("message"),
    }


def page(session: Session, kind: str | None, offset: int, limit: int) -> list[dict[str, Any]]:
    """One page of failed jobs, described: one query per kind and one for the clients' names."""
    rows = session.execute(window(failed_jobs(kind), limit, offset)).all()
    jobs: dict[uuid.UUID, GradingJob] = {}
    for name, model in KINDS.items():
        wanted = [row.id for row in rows if row.kind == name]
        if wanted:
            jobs.update((job.id, job) for job in session.scalars(select(model).where(model.id.in_(wanted))))
    client_ids = {job.client_id for job in jobs.values()}
    names = dict(session.execute(select(ApiClient.id, ApiClient.name).where(ApiClient.id.in_(client_ids))).all())
    return [describe(jobs[row.id], names[jobs[row.id].client_id]) for row in rows]


def client_name(session: Session, job: GradingJob) -> str:
    return session.scalars(select(ApiClient.name).where(ApiClient.id == job.client_id)).one()


def find(session: Session, job_id: uuid.UUID) -> GradingJob | None:
    for model in KINDS.values():
        job = session.get(model, job_id)
        if job is not None:
            return job
    return None


def requeue(job: GradingJob) -> None:
    """Queue a failed job again, with a fresh count of tries; the caller commits and dispatches."""
    job.status, job.tries, job.result = AttemptStatus.QUEUED.value, 0, None
    job.started_at = job.graded_at = job.lease_owner = job.lease_expires_at = job.dispatched_at = None
