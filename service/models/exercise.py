"""Exercises and their content-addressed versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint, and_, false
from sqlalchemy.orm import Mapped, foreign, mapped_column, relationship

from .base import Base, utcnow

#: How a version came to be: the catalog sync, the course exercises API (JSON files or an archive),
#: the dashboard's editor, a course's git repository.
VERSION_SOURCES = ("catalog", "api", "upload", "dashboard", "git")
PROOF_QUEUED, PROOF_RUNNING, PROOF_PASSED, PROOF_FAILED = PROOF_STATUSES = ("queued", "running", "passed", "failed")


class Exercise(Base):
    """One exercise, identified by its slug; its content lives in versions.

    The listing fields (title, kind, difficulty, topics) are copied from the current version
    so that filtering and listing need no JSON queries.
    """

    __tablename__ = "exercises"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)
    title: Mapped[str] = mapped_column(String(200))
    difficulty: Mapped[int]
    # False once the exercise's folder is removed: its attempts stay, it is no longer served.
    published: Mapped[bool] = mapped_column(default=True)
    # The staff client that unpublished it (the admin API): it stays unpublished through catalog
    # syncs until staff publish it again. Null: whether its folder exists decides.
    unpublished_by: Mapped[str | None] = mapped_column(String(100))
    current_version: Mapped[int]
    # The course that owns it (issue 34: written by its staff through the API, the dashboard or its
    # git repository), visible in that course alone; null: the built-in catalog (`exercises/`).
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    topics: Mapped[list[ExerciseTopic]] = relationship(
        cascade="all, delete-orphan", order_by="ExerciseTopic.topic", lazy="selectin"
    )
    versions: Mapped[list[ExerciseVersion]] = relationship(
        back_populates="exercise", order_by="ExerciseVersion.number"
    )
    version: Mapped[ExerciseVersion] = relationship(
        primaryjoin=lambda: and_(
            ExerciseVersion.exercise_id == foreign(Exercise.id),
            ExerciseVersion.number == foreign(Exercise.current_version),
        ),
        viewonly=True,
        lazy="joined",
        innerjoin=True,
    )

    @property
    def topic_names(self) -> list[str]:
        return [t.topic for t in self.topics]


class ExerciseTopic(Base):
    __tablename__ = "exercise_topics"

    exercise_id: Mapped[int] = mapped_column(
        ForeignKey("exercises.id", ondelete="CASCADE"), primary_key=True
    )
    topic: Mapped[str] = mapped_column(String(40), primary_key=True, index=True)


class ExerciseVersion(Base):
    """Immutable content of an exercise; the same content always maps to the same version."""

    __tablename__ = "exercise_versions"
    __table_args__ = (
        UniqueConstraint("exercise_id", "number"),
        UniqueConstraint("exercise_id", "digest"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"))
    number: Mapped[int]
    # SHA-256 over the folder's files (paths and bytes).
    digest: Mapped[str] = mapped_column(String(64))
    # {"spec": parsed exercise.toml, "files": {relative path: text}}; holds answers and
    # reference solutions, so it is never serialised to an API response as a whole.
    content: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Who wrote it (a staff actor; null: the catalog sync) and how it came: VERSION_SOURCES.
    author: Mapped[str | None] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(16), default="catalog", server_default="catalog")
    # Its proof (service/catalog/proof.py): PROOF_STATUSES; `proof` is the ProofReport's JSON (or
    # the format's problems in that shape), null until proven. Only a passed version is published.
    proof_status: Mapped[str] = mapped_column(String(16), default="passed", server_default="passed")
    proof: Mapped[dict[str, Any] | None]
    proven_at: Mapped[datetime | None]
    # When it last became the exercise's current published version (null: never published).
    published_at: Mapped[datetime | None]
    # Publish it as soon as its proof passes (a git sync's versions); set back once done.
    publish_when_proven: Mapped[bool] = mapped_column(default=False, server_default=false())
    # A note of where it came from (e.g. the git commit).
    note: Mapped[str | None] = mapped_column(String(255))

    exercise: Mapped[Exercise] = relationship(back_populates="versions")

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.content["spec"]
        return spec
