"""Course exercises' work for the grading workers (issue 34): the proof of a version, and a staff
member's preview attempt at a version, each a job like an attempt (service/models/attempt.py)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .attempt import GradingJob
from .base import Base, JSONType
from .exercise import ExerciseVersion


class ExerciseProof(GradingJob, Base):
    """A code exercise version's proof in the sandbox (service/catalog/proof.py), queued when the
    version is saved or staff ask again. `result` is the ProofReport's JSON; the worker copies it to
    the version in the transaction that stores it (services/proofs.py)."""

    __tablename__ = "exercise_proofs"
    JOB_KIND = "proof"
    __table_args__ = (Index("ix_exercise_proofs_queue", "status", "created_at"),
                      # A course's proofs of the last minute: its rate limit.
                      Index("ix_exercise_proofs_course_created", "course_id", "created_at"))

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    exercise_version_id: Mapped[int] = mapped_column(ForeignKey("exercise_versions.id"), index=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id"))
    # The course's client: the job is that client's, as its learners' attempts are.
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    # The staff actor (or "git sync") that saved the version or asked for the proof.
    requested_by: Mapped[str] = mapped_column(String(100))

    exercise_version: Mapped[ExerciseVersion] = relationship()


class PreviewAttempt(GradingJob, Base):
    """A course's staff member answering a version as a learner would (the dashboard's "Preview as a
    learner"): graded like an attempt, but never counted, passed back, evented or in statistics."""

    __tablename__ = "preview_attempts"
    JOB_KIND = "preview"
    __table_args__ = (Index("ix_preview_attempts_queue", "status", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id"), index=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    exercise_version_id: Mapped[int] = mapped_column(ForeignKey("exercise_versions.id"))
    # Who previewed (a staff actor): the learner variant is `preview:<actor>`.
    actor: Mapped[str] = mapped_column(String(255))
    # A quiz answer (JSON), or null for a code preview, whose source is in `code`.
    answer: Mapped[Any] = mapped_column(JSONType, nullable=True)
    code: Mapped[str | None] = mapped_column(Text)
    score: Mapped[float | None]
    correct: Mapped[bool | None]

    exercise_version: Mapped[ExerciseVersion] = relationship()
