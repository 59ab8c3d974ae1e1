"""Learners' names for the dashboard and the exports, from their courses' rosters.

An attempt's learner is named by the member row of the attempt's course (`Attempt.course_id`,
`Attempt.learner`: service/models/course.py, filled from the LMS by service/lti/roster.py). Names
are joined, never copied into attempts: a roster read later names older attempts too, and an
attempt outside any course, or of someone the roster never named, has no name (null).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from ..models import ApiClient, Attempt, Course, CourseMember

# The LEFT JOIN of an attempt's member row: one row at most (course_members is unique on
# (course_id, learner), whose index serves the join).
MEMBER_OF_ATTEMPT = and_(CourseMember.course_id == Attempt.course_id, CourseMember.learner == Attempt.learner)
# The name columns a listing of attempts carries beside `learner`.
NAME_COLUMNS = (CourseMember.name.label("learner_name"), CourseMember.email.label("learner_email"),
                CourseMember.status.label("learner_status"))


@dataclass(frozen=True)
class LearnerName:
    name: str | None
    email: str | None
    # active, left (the course's roster no longer has them), or None: no member row.
    status: str | None


def attempt_learner(session: Session, attempt: Attempt) -> LearnerName:
    """The name of an attempt's learner in the attempt's course."""
    row = session.execute(select(CourseMember.name, CourseMember.email, CourseMember.status).where(
        CourseMember.course_id == attempt.course_id, CourseMember.learner == attempt.learner)).first()
    return LearnerName(*row) if row is not None else LearnerName(None, None, None)


@dataclass(frozen=True)
class Membership:
    """A learner in one course, as its roster names them."""

    course_id: int
    course: str
    client: str
    name: str | None
    email: str | None
    status: str
    left_at: datetime | None


def memberships(session: Session, learner: str, client_id: int | None = None,
                course_id: int | None = None) -> list[Membership]:
    """The courses a learner id is a member of (within one client, one course), most recently
    updated first: a platform's user id is the same in all its courses."""
    stmt = (select(Course.id, Course.title, ApiClient.name, CourseMember.name, CourseMember.email, CourseMember.status,
                   CourseMember.left_at)
            .join(Course, Course.id == CourseMember.course_id).join(ApiClient, ApiClient.id == Course.client_id)
            .where(CourseMember.learner == learner).order_by(CourseMember.updated_at.desc(), CourseMember.id.desc()))
    if client_id is not None:
        stmt = stmt.where(Course.client_id == client_id)
    if course_id is not None:
        stmt = stmt.where(Course.id == course_id)
    return [Membership(*row) for row in session.execute(stmt)]
