"""Attempts: every answer a learner submitted, with its grade."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import Base, JSONType, utcnow
from .client import ApiClient
from .exercise import Exercise, ExerciseVersion


class AttemptStatus(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    ERROR = "error"


class Attempt(Base):
    __tablename__ = "attempts"
    __table_args__ = (
        # A learner's history, newest first, within one client.
        Index("ix_attempts_learner_history", "client_id", "learner", "created_at"),
        Index("ix_attempts_exercise_created", "exercise_id", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    # The client's own identifier of the learner; unique only within that client.
    learner: Mapped[str] = mapped_column(String(255))
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"))
    exercise_version_id: Mapped[int] = mapped_column(ForeignKey("exercise_versions.id"))
    status: Mapped[str] = mapped_column(String(16))
    answer: Mapped[Any] = mapped_column(JSONType)
    score: Mapped[float | None]
    correct: Mapped[bool | None]
    # The grader's feedback: per-choice or per-check messages, shown to the learner.
    result: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    graded_at: Mapped[datetime | None]

    client: Mapped[ApiClient] = relationship()
    exercise: Mapped[Exercise] = relationship(lazy="joined", innerjoin=True)
    exercise_version: Mapped[ExerciseVersion] = relationship(lazy="joined", innerjoin=True)

    @property
    def feedback(self) -> list[dict[str, Any]]:
        return (self.result or {}).get("feedback", [])

    @property
    def explanation(self) -> str | None:
        """The exercise's explanation, shown only once the attempt is graded."""
        if self.status != AttemptStatus.GRADED.value:
            return None
        return self.exercise_version.spec["explanation"]


class IdempotencyRecord(Base):
    """The first response to a POST that carried an Idempotency-Key, replayed on retries."""

    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("client_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    key: Mapped[str] = mapped_column(String(255))
    # SHA-256 of method, path and body: the same key with another request is refused.
    request_digest: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int]
    response_body: Mapped[dict[str, Any]]
    location: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
