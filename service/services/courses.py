"""Courses: a client's own courses (made through the API), the list staff see, and course keys.

A platform's courses are made by its launches (service/lti/links.py); a client without an LMS
makes its own here and names one when it issues a learner token, so that its learners' attempts
belong to it. No Flask here: service/resources/courses.py calls these.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..auth import COURSE_KEY_PREFIX, hash_key
from ..models import Attempt, Course, CourseKey, LtiPlatform, LtiResourceLink
from ..models.base import utcnow


class CourseExists(Exception):
    """The client already has a course with this external id."""


@dataclass(frozen=True)
class CourseSummary:
    id: int
    external_id: str
    title: str
    label: str | None
    platform: str | None
    client_id: int
    links: int
    learners: int
    attempts: int
    last_attempt_at: datetime | None
    created_at: datetime


def create_course(session: Session, client_id: int, external_id: str, title: str, label: str | None) -> Course:
    now = utcnow()
    course = Course(client_id=client_id, external_id=external_id, title=title, label=label, created_at=now,
                    updated_at=now)
    try:
        with session.begin_nested():
            session.add(course)
    except IntegrityError:
        raise CourseExists(external_id) from None
    return course


def find_course(session: Session, course_id: int, *, client_id: int | None = None,
                within: int | None = None) -> Course | None:
    """Course `course_id`, if it exists and the caller may see it: of client `client_id` (if
    given), and the caller's own course `within` (if given)."""
    course = session.get(Course, course_id)
    if course is None or (client_id is not None and course.client_id != client_id):
        return None
    if within is not None and course.id != within:
        return None
    return course


def course_by_external_id(session: Session, client_id: int, external_id: str) -> Course | None:
    return session.scalar(select(Course).where(Course.client_id == client_id, Course.external_id == external_id))


def summaries(session: Session, *, client_id: int | None = None, course_id: int | None = None) -> list[CourseSummary]:
    """The courses (of one client, or one course), newest activity first, with their links,
    learners and attempts counted (one grouped read of the course's attempts on its index)."""
    activity = (select(Attempt.course_id.label("course_id"), func.count().label("attempts"),
                       func.count(Attempt.learner.distinct()).label("learners"),
                       func.max(Attempt.created_at).label("last_attempt_at"))
                .where(Attempt.course_id.is_not(None)).group_by(Attempt.course_id))
    links = (select(LtiResourceLink.course_id.label("course_id"), func.count().label("links"))
             .where(LtiResourceLink.course_id.is_not(None)).group_by(LtiResourceLink.course_id))
    if course_id is not None:
        activity, links = activity.where(Attempt.course_id == course_id), links.where(LtiResourceLink.course_id == course_id)
    activity_sq, links_sq = activity.subquery(), links.subquery()
    stmt = (select(Course, LtiPlatform.name, activity_sq.c.attempts, activity_sq.c.learners,
                   activity_sq.c.last_attempt_at, links_sq.c.links)
            .outerjoin(LtiPlatform, LtiPlatform.id == Course.platform_id)
            .outerjoin(activity_sq, activity_sq.c.course_id == Course.id)
            .outerjoin(links_sq, links_sq.c.course_id == Course.id))
    if client_id is not None:
        stmt = stmt.where(Course.client_id == client_id)
    if course_id is not None:
        stmt = stmt.where(Course.id == course_id)
    rows = session.execute(stmt.order_by(func.coalesce(activity_sq.c.last_attempt_at, Course.updated_at).desc(),
                                         Course.id.desc())).all()
    return [CourseSummary(course.id, course.external_id, course.title, course.label, platform, course.client_id,
                          links or 0, learners or 0, attempts or 0, last, course.created_at)
            for course, platform, attempts, learners, last, links in rows]


def make_key(session: Session, course: Course, name: str, created_by: str) -> tuple[CourseKey, str]:
    """A new key of the course's staff; the key itself is returned once and never stored."""
    key = COURSE_KEY_PREFIX + secrets.token_urlsafe(32)
    row = CourseKey(course_id=course.id, name=name, key_hash=hash_key(key), key_prefix=key[:11], created_at=utcnow(),
                    created_by=created_by[:100])
    session.add(row)
    session.flush()
    return row, key


def keys_of(session: Session, course: Course) -> list[CourseKey]:
    return list(session.scalars(select(CourseKey).where(CourseKey.course_id == course.id).order_by(CourseKey.id)))


def revoke_key(session: Session, course: Course, key_id: int) -> CourseKey | None:
    """Revoke the course's key `key_id` (idempotent); None when the course has no such key."""
    row = session.scalar(select(CourseKey).where(CourseKey.id == key_id, CourseKey.course_id == course.id))
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()
    return row
