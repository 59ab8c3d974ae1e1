"""A learner's variant of a code exercise version, prepared for grading before they submit (issue 37)."""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .attempt import GradingJob
from .base import Base


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
