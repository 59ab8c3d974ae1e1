"""Which exercises a caller may see: the one rule every lookup of an exercise by its slug applies.

The built-in catalog (`Exercise.course_id` null) is everyone's. A course's own exercise (issue 34)
is seen only in its course:

- a learner token of that course (the course it names, or its link's: `scope_course`);
- the course's staff: a course key or a staff session of it;
- an instructor or admin key, staff of every course;
- a client's own key, when the request names a course of that client (the course URLs,
  `/api/v1/courses/{course_id}/exercises/{slug}`).

Everyone else, no credentials included, is answered as for a slug that does not exist: a course
exercise's slug says nothing of the course that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import ColumnElement, false, or_, select, true
from sqlalchemy.orm import Session

from ..learner_tokens import LearnerScope
from ..models import ApiClient, Course, Exercise
from .standing import scope_course


@dataclass(frozen=True)
class ExerciseAudience:
    """The courses whose own exercises a caller sees, beside the catalog: `courses` None for every
    course (an instructor or admin key), else those ids (often none)."""

    courses: frozenset[int] | None
    # The course a course URL names (/api/v1/courses/{course_id}/exercises/{slug}): there, that
    # course's own exercises alone (a catalog slug too is "not that course's").
    within: int | None = None

    def sees(self, course_id: int | None) -> bool:
        """Whether an exercise of `course_id` (None: the catalog's) is visible to this caller."""
        if self.within is not None:
            return course_id == self.within and (self.courses is None or course_id in self.courses)
        return course_id is None or self.courses is None or course_id in self.courses

    def in_course(self, course_id: int) -> ExerciseAudience:
        """This caller at a course URL of `course_id`."""
        return replace(self, within=course_id)

    def where(self) -> ColumnElement[bool]:
        """The same rule as a condition on `Exercise`, for queries of several exercises."""
        if self.within is not None:
            return Exercise.course_id == self.within if self.sees(self.within) else false()
        if self.courses is None:
            return true()
        if not self.courses:
            return Exercise.course_id.is_(None)
        return or_(Exercise.course_id.is_(None), Exercise.course_id.in_(sorted(self.courses)))


#: No credentials (or a caller of no course): the built-in catalog alone.
CATALOG_ONLY = ExerciseAudience(frozenset())
#: An instructor or admin key: staff of every course.
EVERY_COURSE = ExerciseAudience(None)


def of_course(course_id: int | None) -> ExerciseAudience:
    """A caller in one course (None: in none)."""
    return CATALOG_ONLY if course_id is None else ExerciseAudience(frozenset({course_id}))


def token_audience(session: Session, scope: LearnerScope) -> ExerciseAudience:
    """What a learner token sees: the catalog and its course's exercises."""
    return of_course(scope_course(session, scope))


def audience_of(session: Session, client: ApiClient | None, scope: LearnerScope | None = None,
                staff_course: int | None = None, named_course: int | None = None) -> ExerciseAudience:
    """What a caller sees: `client` the authenticated client (None: no credentials), `scope` its
    learner token, `staff_course` the course of its course key or staff session, `named_course`
    the course the request's URL names: there, that course's own exercises alone, which a client's
    own key sees when the course is its client's."""
    seen = _caller_audience(session, client, scope, staff_course, named_course)
    return seen if named_course is None else seen.in_course(named_course)


def _caller_audience(session: Session, client: ApiClient | None, scope: LearnerScope | None,
                     staff_course: int | None, named_course: int | None) -> ExerciseAudience:
    if scope is not None:
        return token_audience(session, scope)
    if client is None:
        return CATALOG_ONLY
    if staff_course is not None:
        return of_course(staff_course)
    if client.is_staff:
        return EVERY_COURSE
    if named_course is not None and session.scalar(
            select(Course.id).where(Course.id == named_course, Course.client_id == client.id)) is not None:
        return of_course(named_course)
    return CATALOG_ONLY

