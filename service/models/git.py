"""A course's exercises from a git repository (service/gitsync/): where they come from, and each
sync's record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, JSONType, utcnow


class CourseGitRepo(Base):
    """The repository a course's staff named: its exercise folders are synced from `branch`."""

    __tablename__ = "course_git_repos"

    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    branch: Mapped[str] = mapped_column(String(255))
    # The folder inside the repository holding the exercise folders ("" = its root).
    path: Mapped[str] = mapped_column(String(255), default="")
    # The deploy token (service/sealing.py), never returned; None: a public repository.
    token_sealed: Mapped[str | None] = mapped_column(Text)
    # The push webhook's signing secret, sealed: an HMAC needs the secret itself.
    webhook_secret_sealed: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class GitSyncStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class GitSync(Base):
    """One sync of a course's repository: queued by "Sync now" or a push, run by the workers'
    supervisor (service/gitsync/syncer.py)."""

    __tablename__ = "git_syncs"
    __table_args__ = (Index("ix_git_syncs_course_id_id", "course_id", "id"),
                      Index("ix_git_syncs_status_lease_until", "status", "lease_until"))

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    # Who asked: "webhook", or the staff caller (as the authoring actor names them).
    requested_by: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(16), default=GitSyncStatus.QUEUED)
    # The commit synced (the branch's head when it was fetched).
    commit: Mapped[str | None] = mapped_column(String(64))
    # Why it failed, for the course's staff: never a secret.
    error: Mapped[str | None] = mapped_column(String(500))
    queued_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # A running sync's claim: past it, another syncer takes the sync again (its syncer died).
    lease_until: Mapped[datetime | None]
    # What became of each exercise: [{slug, outcome, version, problems}] (service/gitsync/sync.py).
    exercises: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
