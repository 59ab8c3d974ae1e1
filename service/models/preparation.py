"""A learner's variant of a code exercise version, prepared for grading before they submit (issue 37)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint, delete, literal_column, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from .attempt import AttemptStatus, GradingJob
from .base import Base
from .exercise import ExerciseVersion


class VariantPreparation(GradingJob, Base):
    """The reference's results on one learner's hidden inputs of one code exercise version: a job of
    the grading workers, queued when a learner token or an LTI launch names the exercise
    (services/preparations.py). `result` holds them as the judge stores them
    (grading.references.StoredReference), under the key of the secret and grading code they were
    made with; a grade of the learner's reads them instead of running the reference twice. A grade
    that found none stores its own here, so a worker's restart costs no reference run either."""

    __tablename__ = "variant_preparations"
    JOB_KIND = "preparation"
    __table_args__ = (UniqueConstraint("exercise_version_id", "client_id", "learner",
                                       name="uq_variant_preparations_variant"),
                      Index("ix_variant_preparations_queue", "status", "created_at"))

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    exercise_version_id: Mapped[int] = mapped_column(ForeignKey("exercise_versions.id"))
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    learner: Mapped[str] = mapped_column(String(255))


# A client's waiting preparations, counted before a token or launch queues more (migration 0027).
# The status is written in the SQL, not bound: a partial index serves only a query that says it.
WAITING = VariantPreparation.status == literal_column(f"'{AttemptStatus.QUEUED.value}'")
Index("ix_variant_preparations_client_waiting", VariantPreparation.client_id, postgresql_where=WAITING,
      sqlite_where=WAITING)


def forget_superseded(session: Session, current: Mapping[int, int]) -> None:
    """Delete the preparations of the exercises' versions but the current one (`current`: exercise
    id -> its current version's id), in the caller's transaction. Learners' grades, new
    preparations and regrades use the current version; an attempt on the old one still queued
    runs its reference, as a first grade did before preparations. Published again later, an old
    version is prepared again as its learners' tokens and launches name it."""
    if current:
        superseded = select(ExerciseVersion.id).where(ExerciseVersion.exercise_id.in_(current.keys()),
                                                      ExerciseVersion.id.not_in(current.values()))
        session.execute(delete(VariantPreparation).where(VariantPreparation.exercise_version_id.in_(superseded)))
