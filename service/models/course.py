"""Courses: where attempts, learners, assignments and statistics belong.

A course is an LTI context of a platform (made at the first launch from it), or a course a client
without an LMS makes through the API. Either way it lives within one API client (a platform's
client owns all its courses) and is named there by `external_id`: the LTI context id, or the
client's own id for it. A link launched without a context is a course of its own
(external_id `resource-link:<its id>`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class Course(Base):
    __tablename__ = "courses"
    __table_args__ = (UniqueConstraint("client_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    # The LTI platform it is a context of (None: a client's own course, made through the API).
    platform_id: Mapped[int | None] = mapped_column(ForeignKey("lti_platforms.id"))
    external_id: Mapped[str] = mapped_column(String(255))
    # The context's title and label as the latest launch sent them (or the client's name for it).
    title: Mapped[str] = mapped_column(String(255))
    label: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class CourseKey(Base):
    """A key for one course's own frontend or scripts: course staff within that course only.

    Stored hashed like API keys (auth.hash_key); the key itself is shown once."""

    __tablename__ = "course_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    key_prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    created_by: Mapped[str] = mapped_column(String(100))
    revoked_at: Mapped[datetime | None]
