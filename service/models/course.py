"""Courses: where attempts, learners, assignments and statistics belong.

A course is an LTI context of a platform (made at the first launch from it), or a course a client
without an LMS makes through the API. Either way it lives within one API client (a platform's
client owns all its courses) and is named there by `external_id`: the LTI context id, or the
client's own id for it. A link launched without a context is a course of its own
(external_id `resource-link:<its id>`).

A course of a platform that grants the Names and Role Provisioning Service has a roster
(`CourseMember`, service/lti/roster.py): who is in it, by name.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, JSONType, utcnow


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
    # The roster (NRPS): the context's memberships URL as the latest launch granting it sent it
    # (None: not granted); when the next sync is due (None: never; a sync under way holds it
    # ahead as its lease); the last complete sync; the last failed one and why (for operators,
    # cleared by a sync that succeeds).
    memberships_url: Mapped[str | None] = mapped_column(String(2048))
    roster_sync_due_at: Mapped[datetime | None] = mapped_column(index=True)
    roster_synced_at: Mapped[datetime | None]
    roster_failed_at: Mapped[datetime | None]
    roster_error: Mapped[str | None] = mapped_column(String(500))


class MemberStatus:
    ACTIVE = "active"
    # Missing from a complete roster, or Inactive or Deleted in it: kept, never deleted.
    LEFT = "left"


class CourseMember(Base):
    """Someone in a course, as the platform's roster (NRPS) or their own launch names them.

    `learner` is the platform's user id (the id_token's `sub`, NRPS's `user_id`): the learner id
    of their attempts in this course, which the dashboard and exports join on (never copying a
    name into an attempt). E-mail is kept only where the platform shares it."""

    __tablename__ = "course_members"
    # (course, learner) serves the attempts' LEFT JOIN for names; learner, a learner's courses.
    __table_args__ = (UniqueConstraint("course_id", "learner"), Index("ix_course_members_learner", "learner"))

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id"))
    learner: Mapped[str] = mapped_column(String(255))
    # The name to show: the full name the platform sent, else its given and family names together.
    name: Mapped[str | None] = mapped_column(String(255))
    given_name: Mapped[str | None] = mapped_column(String(255))
    family_name: Mapped[str | None] = mapped_column(String(255))
    email: Mapped[str | None] = mapped_column(String(320))
    # The context roles the platform gave them (LIS role URIs).
    roles: Mapped[list[str]] = mapped_column(JSONType, default=list)
    status: Mapped[str] = mapped_column(String(16), default=MemberStatus.ACTIVE)
    first_seen_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    left_at: Mapped[datetime | None]


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
