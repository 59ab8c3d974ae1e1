"""Staff: a course's roster (names from the LMS, service/lti/roster.py), and reading it again now.

A course's staff (a course key, or the session an instructor's launch opened) see their own course
alone: another course's id is a 404, as is one that does not exist.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import RAISE
from sqlalchemy import select

from ..auth import BEARER, require_staff
from ..errors import problem_abort
from ..extensions import db_session
from ..lti.roster import queue_sync
from ..models import Course, CourseMember
from ..models.base import utcnow
from ..schemas.rosters import RosterQuerySchema, RosterSchema, RosterStateSchema
from .blueprint import Blueprint
from .course_scope import NO_COURSE, course_asked
from .docs import ROW_ID, STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("rosters", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients and a course's staff: a course's roster from the LMS.")


def _visible_course(course_id: int) -> Course:
    """The course, if the caller may see it; else a 404 problem (never saying which it was)."""
    course = db_session().get(Course, course_asked(course_id))
    assert course is not None  # course_asked answered 404 for a course that does not exist
    return course


def _state(course: Course) -> dict[str, Any]:
    return {"course_id": course.id, "nrps": course.memberships_url is not None, "synced_at": course.roster_synced_at,
            "sync_due_at": course.roster_sync_due_at, "failed_at": course.roster_failed_at,
            "error": course.roster_error}


@blp.route(f"/courses/<{ROW_ID}:course_id>/members")
class CourseMembers(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(RosterQuerySchema, location="query", unknown=RAISE)
    @blp.response(200, RosterSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE, (422, "An unknown query parameter or status"))
    def get(self, query, course_id: int):
        """The course's members by name (e-mail only where the LMS shares it), those who left the
        course marked, and how the roster's reading from the LMS stands."""
        course = _visible_course(course_id)
        stmt = select(CourseMember).where(CourseMember.course_id == course.id)
        if "status" in query:
            stmt = stmt.where(CourseMember.status == query["status"])
        members = db_session().scalars(stmt.order_by(CourseMember.name.is_(None), CourseMember.name,
                                                     CourseMember.learner))
        return {**_state(course), "members": list(members)}


@blp.route(f"/courses/<{ROW_ID}:course_id>/roster/sync")
class RosterSync(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(202, RosterStateSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE,
              (409, "The LMS grants no roster (Names and Role Provisioning Service) for this course"))
    def post(self, course_id: int):
        """Read the course's roster from the LMS again, soon: the sync is queued (a worker makes it
        within seconds; GET .../members says when it ran, or why it failed)."""
        course = _visible_course(course_id)
        if course.memberships_url is None:
            problem_abort(409, "The LMS grants no roster for this course (no launch brought the Names and Role "
                               "Provisioning Service): names come from the members' own launches.")
        queue_sync(course, utcnow())
        db_session().commit()
        return _state(course)
