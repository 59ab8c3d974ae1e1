"""Instructors' overrides of a score: the attempt's score changes, the grader's stays beside it,
and the audit log (grade_overrides) records who, when, from what, to what and why."""

from __future__ import annotations

import uuid

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from ..models import OVERRIDDEN_EVENT, ApiClient, Attempt, AttemptStatus, Exercise, GradeOverride
from ..models.base import utcnow
from . import progress
from .events import record_attempt_event


class NotGraded(Exception):
    """Only a graded attempt has a score to override."""


def locked_attempt(session: Session, attempt_id: uuid.UUID) -> Attempt | None:
    """The attempt, its row locked on PostgreSQL until the transaction ends (a concurrent override
    or regrade waits, then sees this one); SQLite's writers hold the write lock already."""
    stmt = select(Attempt).where(Attempt.id == attempt_id).execution_options(populate_existing=True)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=Attempt.__table__, key_share=True)  # not the exercise joined in
    return session.scalar(stmt)


def override(session: Session, attempt: Attempt, client: ApiClient, score: float, reason: str, *,
             learner_comment: str | None = None, actor: str | None = None) -> GradeOverride:
    """Set the score that counts to `score`, keep the grader's, log it and write an
    `attempt.overridden` event (webhooks, LTI passback, statistics); the caller commits.

    Every override is recorded, even one back to the grader's score: the attempt stays
    `overridden` (a later regrade changes its grader score, not the score an instructor set).
    """
    if attempt.status != AttemptStatus.GRADED.value:
        raise NotGraded(attempt.id)
    now = utcnow()
    previous = progress.grade_snapshot(attempt)
    entry = GradeOverride(attempt_id=attempt.id, client_id=client.id, actor=actor or client.name, old_score=attempt.score,
                          new_score=score, reason=reason, learner_comment=learner_comment, created_at=now)
    session.add(entry)
    attempt.score, attempt.overridden = score, True
    record_attempt_event(session, attempt_id=attempt.id, client_id=attempt.client_id, lti_link_id=attempt.lti_link_id,
                         type=OVERRIDDEN_EVENT, at=now, previous=previous, attempt=attempt,
                         data={"status": attempt.status, "score": score, "correct": attempt.correct})
    return entry


def audit_log(attempt_id: uuid.UUID | None = None, exercise_id: int | None = None,
              course_id: int | None = None) -> Select:
    """Overrides with their attempt's learner and exercise, newest first (of one course's attempts,
    if `course_id`)."""
    stmt = (select(GradeOverride, Attempt.learner, Exercise.slug)
            .join(Attempt, Attempt.id == GradeOverride.attempt_id).join(Exercise, Exercise.id == Attempt.exercise_id))
    if attempt_id is not None:
        stmt = stmt.where(GradeOverride.attempt_id == attempt_id)
    if exercise_id is not None:
        stmt = stmt.where(Attempt.exercise_id == exercise_id)
    if course_id is not None:
        stmt = stmt.where(Attempt.course_id == course_id)
    return stmt.order_by(GradeOverride.created_at.desc(), GradeOverride.id.desc())


def describe(entry: GradeOverride, learner: str, exercise: str) -> dict:
    return {"id": entry.id, "attempt": entry.attempt_id, "exercise": exercise, "learner": learner,
            "actor": entry.actor, "old_score": entry.old_score, "new_score": entry.new_score, "reason": entry.reason,
            "learner_comment": entry.learner_comment, "created_at": entry.created_at}
