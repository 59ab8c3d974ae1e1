"""The course a staff request is about (issue 18).

A course-scoped staff caller (a course key, or the staff session an instructor's LTI launch
opened: auth.staff_course_id) is about its own course, always. An instructor's or admin's key is
about every course, or about the one it names (`course` in the query or the body). Course scoping
beats the asking: a course-scoped caller naming another course is told it does not exist, as is
anyone naming a course that does not.
"""

from __future__ import annotations

from flask import g

from ..auth import course_staff, learner_scope, staff_course_id
from ..errors import problem_abort
from ..extensions import db_session
from ..models import Course
from ..services.exercise_access import ExerciseAudience, audience_of

NO_COURSE = (404, "No course with this id (or not the caller's course)")


def course_asked(asked: int | None) -> int | None:
    """The course the request is limited to (None: every course), or a 404 problem."""
    scoped = staff_course_id()
    if scoped is not None:
        if asked is not None and asked != scoped:
            problem_abort(404, "No course with this id.")
        return scoped
    if asked is not None and db_session().get(Course, asked) is None:
        problem_abort(404, "No course with this id.")
    return asked


def request_audience(named_course: int | None = None) -> ExerciseAudience:
    """Whose exercises the current request's caller sees (services/exercise_access.py), from what
    its authentication (service/auth.py) set; a request with no credentials checked (a public
    route), the catalog alone. `named_course`: the course its URL names (its own exercises alone)."""
    staff = course_staff()
    return audience_of(db_session(), g.get("client"), learner_scope(), None if staff is None else staff.course_id,
                       named_course)
