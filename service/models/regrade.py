"""Regrades (every attempt of an exercise, or one attempt, graded again after the grader changed)
and instructors' overrides of a score, with their audit log."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .attempt import Attempt, GradingJob
from .base import Base, utcnow
from .exercise import Exercise, ExerciseVersion


class Regrade(Base):
    """A regrade: first a dry run (its items graded by the workers, nothing changed), then,
    when an instructor applies it, the new grades stored on the attempts."""

    __tablename__ = "regrades"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"), index=True)
    # The exercise version the attempts are graded against (the current one when requested).
    exercise_version_id: Mapped[int] = mapped_column(ForeignKey("exercise_versions.id"))
    # dry_run (items being graded; once every item is graded the API calls it ready: the diff is
    # known), applying (new grades being stored on the attempts, by chunks), applied.
    status: Mapped[str] = mapped_column(String(16))
    requested_by: Mapped[str] = mapped_column(String(100))
    # The course whose attempts it regrades (course staff's regrade); null: every course's.
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id"))
    # Set when one attempt was asked for; null: every attempt of the exercise.
    attempt_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("attempts.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    applied_at: Mapped[datetime | None]
    applied_by: Mapped[str | None] = mapped_column(String(100))
    # How far applying has gone: every item up to this attempt id (in id order) is done.
    applied_through: Mapped[uuid.UUID | None]

    exercise: Mapped[Exercise] = relationship(lazy="joined", innerjoin=True)
    exercise_version: Mapped[ExerciseVersion] = relationship()


class RegradeItem(GradingJob, Base):
    """One attempt graded again for a regrade, by the grading workers like any job."""

    __tablename__ = "regrade_items"
    JOB_KIND = "regrade"
    __table_args__ = (
        UniqueConstraint("regrade_id", "attempt_id"),
        Index("ix_regrade_items_queue", "status", "created_at"),
        # A regrade's progress (items by status), and whether any is left, without a scan.
        Index("ix_regrade_items_regrade_status", "regrade_id", "status"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    regrade_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("regrades.id"))
    attempt_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("attempts.id"), index=True)
    # The attempt's grader score when the regrade was requested, and the new one once graded.
    old_score: Mapped[float | None]
    # Null when graded but not gradable against the regrade's version (see result["message"]).
    new_score: Mapped[float | None]
    new_correct: Mapped[bool | None]
    # When applying the regrade stored this item's grade on the attempt: a retried apply skips it.
    applied_at: Mapped[datetime | None]

    attempt: Mapped[Attempt] = relationship()
    regrade: Mapped[Regrade] = relationship()


class GradeOverride(Base):
    """An instructor set an attempt's score by hand: who, when, from what, to what, and why."""

    __tablename__ = "grade_overrides"

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("attempts.id"), index=True)
    # The API client that did it (its name is kept even if the client is later removed).
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    actor: Mapped[str] = mapped_column(String(100))
    old_score: Mapped[float | None]
    new_score: Mapped[float]
    reason: Mapped[str] = mapped_column(Text)
    # What the learner is told, sent to the LMS with the score (the reason is staff's only).
    learner_comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)

    attempt: Mapped[Attempt] = relationship()


