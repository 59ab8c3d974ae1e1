"""LTI 1.3: the platforms (LMSs) registered with the tool, the tool's keys, launches' links, and
the scores sent back to the platforms' gradebooks."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .attempt import Attempt, AttemptEvent
from .base import Base, JSONType, utcnow
from .client import ApiClient
from .course import Course
from .delivery import OutboundDelivery
from .exercise import Exercise

PENDING, ACTIVE, DISABLED = "pending", "active", "disabled"


class LtiPlatform(Base):
    """An LMS registered by an admin, or by itself through a registration link an admin made
    (LTI Dynamic Registration, service/lti/registration.py): the values its LTI 1.3 registration shows."""

    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    issuer: Mapped[str] = mapped_column(String(255))
    # The tool's OAuth client id at this platform (the `aud` of its id_tokens).
    client_id: Mapped[str] = mapped_column(String(255))
    deployment_ids: Mapped[list[str]] = mapped_column(JSONType)
    auth_login_url: Mapped[str] = mapped_column(String(2048))
    auth_token_url: Mapped[str] = mapped_column(String(2048))
    jwks_url: Mapped[str] = mapped_column(String(2048))
    # The API client that owns this platform's learners and attempts, made at registration.
    api_client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # None: pending, registered dynamically while LTI_REGISTRATION_APPROVAL is on; no login or
    # launch until an admin approves it.
    approved_at: Mapped[datetime | None]
    disabled_at: Mapped[datetime | None]

    api_client: Mapped[ApiClient] = relationship(lazy="joined", innerjoin=True)

    @property
    def status(self) -> str:
        if self.disabled_at is not None:
            return DISABLED
        return PENDING if self.approved_at is None else ACTIVE


class LtiRegistrationLink(Base):
    """A registration URL an admin made for one LMS's admin to paste into the LMS (LTI Dynamic
    Registration): its code is shown once and stored hashed, works once, and expires."""

    __tablename__ = "lti_registration_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # Whom or which LMS the admin made it for, for the admins' own list.
    label: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    # When a registration used it up, and the platform it registered (or registered again).
    used_at: Mapped[datetime | None]
    platform_id: Mapped[int | None] = mapped_column(ForeignKey("lti_platforms.id"))
    # Tries that failed at the LMS (service/lti/registration.py count_failed_try): the last allowed
    # uses the link up, so a leaked code cannot probe addresses for long.
    failed_tries: Mapped[int] = mapped_column(default=0, server_default="0")


class LtiToolKey(Base):
    """The tool's RSA key pairs: the newest unretired one signs; retired ones stay in the JWKS
    until what they signed has expired."""

    __tablename__ = "lti_tool_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    kid: Mapped[str] = mapped_column(String(64), unique=True)
    # PEM (PKCS#8), sealed with SECRET_KEY.
    sealed_private_key: Mapped[str] = mapped_column(Text)
    public_jwk: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    retired_at: Mapped[datetime | None]


class LtiNonce(Base):
    """A launch's nonce, used up: an id_token replayed with it is refused."""

    __tablename__ = "lti_nonces"

    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id"), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(255), primary_key=True)
    # When the id_token that used it expires; older rows can go.
    expires_at: Mapped[datetime] = mapped_column(index=True)


class LtiResourceLink(Base):
    """A placement of an exercise in a course, as its launches describe it. It belongs to the course
    it was first launched in: the same resource link id launched from another course (a course copy
    that kept the ids) is another link, of that course (service/lti/links.py)."""

    __tablename__ = "lti_resource_links"
    __table_args__ = (UniqueConstraint("platform_id", "course_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id"))
    deployment_id: Mapped[str] = mapped_column(String(255))
    resource_link_id: Mapped[str] = mapped_column(String(255))
    context_id: Mapped[str | None] = mapped_column(String(255))
    # The course of that context (null only for links made before courses and never launched since).
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id"))
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"))
    # Assignment and Grade Services, from the latest launch: the line item scores go to (or
    # the container to find or make it in) and the scopes the platform granted.
    lineitem_url: Mapped[str | None] = mapped_column(String(2048))
    lineitems_url: Mapped[str | None] = mapped_column(String(2048))
    ags_scopes: Mapped[list[str]] = mapped_column(JSONType, default=list)
    # The assignment's window as the platform sent it at the latest launch (null: not sent); these
    # win over the rules staff set (service/rules.py).
    lms_available_from: Mapped[datetime | None]
    lms_due_at: Mapped[datetime | None]
    # An assignment of several exercises (Deep Linking, service/lti/assignments.py): how their scores
    # make the one score sent ("mean" or "sum" of points); null: a link of one exercise. Its
    # exercises are `assignment_exercises`, the first of them `exercise`.
    scoring: Mapped[str | None] = mapped_column(String(8))
    # The link's title as the LMS sent it at the latest launch (the one the instructor gave it).
    title: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    platform: Mapped[LtiPlatform] = relationship(lazy="joined", innerjoin=True)
    exercise: Mapped[Exercise] = relationship(lazy="joined", innerjoin=True)
    course: Mapped[Course | None] = relationship()
    assignment_exercises: Mapped[list[LtiLinkExercise]] = relationship(
        order_by="LtiLinkExercise.position", cascade="all, delete-orphan")

    def exercise_points(self) -> list[tuple[Exercise, float]]:
        """The link's exercises in order with their points (a link of one exercise: it, 1 point)."""
        if self.scoring is None or not self.assignment_exercises:
            return [(self.exercise, 1.0)]
        return [(row.exercise, row.points) for row in self.assignment_exercises]


class LtiLinkExercise(Base):
    """One exercise of an assignment link, at its place in the assignment, with its points (the sum
    rule's weight)."""

    __tablename__ = "lti_link_exercises"
    __table_args__ = (UniqueConstraint("link_id", "exercise_id"),)

    link_id: Mapped[int] = mapped_column(ForeignKey("lti_resource_links.id"), primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"))
    points: Mapped[float]

    exercise: Mapped[Exercise] = relationship(lazy="joined", innerjoin=True)


class LtiLearnerDates(Base):
    """The window a platform sent at one learner's own launch of a link, where the platform's date
    variables are the launching user's (Canvas: section and student overrides applied); between the
    link's dates and a staff extension in the rules' layers (service/rules.py)."""

    __tablename__ = "lti_learner_dates"

    link_id: Mapped[int] = mapped_column(ForeignKey("lti_resource_links.id"), primary_key=True)
    learner: Mapped[str] = mapped_column(String(255), primary_key=True)
    available_from: Mapped[datetime | None]
    due_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ScorePassback(OutboundDelivery, Base):
    """A learner's score to send to the link's line item after an event on one of their attempts.

    The score sent is computed when it is sent (the exercise's policy: best or latest), so a
    late retry never overwrites a newer grade with an older one."""

    __tablename__ = "score_passbacks"
    __table_args__ = (Index("ix_score_passbacks_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    attempt_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("attempts.id"), index=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("attempt_events.id"), unique=True)
    link_id: Mapped[int] = mapped_column(ForeignKey("lti_resource_links.id"))
    # What was sent: {scoreGiven, scoreMaximum, ...}, for admins reading the passback's state.
    sent_score: Mapped[dict[str, Any] | None]

    attempt: Mapped[Attempt] = relationship()
    event: Mapped[AttemptEvent] = relationship()
    link: Mapped[LtiResourceLink] = relationship()
