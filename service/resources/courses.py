"""Courses: the ones staff see, a client's own, the staff caller, and course keys.

- `GET /api/v1/admin/courses` (staff): every course for an instructor or admin key, their own for a
  course's staff (a course key, or the session an instructor's LTI launch opened).
- `GET /api/v1/admin/whoami` (staff): who the caller is and the one course they are limited to;
  the dashboard reads it to show a course's staff their course.
- `POST /api/v1/courses`, `GET /api/v1/courses` (a client's key): a client without an LMS makes
  its own courses, then names one in POST /api/v1/learner-tokens.
- `/api/v1/courses/{id}/keys` (the course's client, staff keys, or the course's staff session):
  keys for a course's own frontend or scripts, each limited to the course.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask.views import MethodView

from ..auth import BEARER, course_staff, current_client, require_client, require_staff, staff_actor
from ..errors import problem_abort
from ..extensions import db_session
from ..models import Course
from ..schemas.courses import (
    CourseCreateSchema,
    CourseKeyCreateSchema,
    CourseKeySchema,
    CourseSchema,
    NewCourseKeySchema,
    StaffCallerSchema,
)
from ..services import courses
from .blueprint import Blueprint
from .course_scope import course_asked
from .docs import BODY_PROBLEMS, ROW_ID, STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("courses", __name__, url_prefix="/api/v1",
                description="Courses: LTI contexts and clients' own courses; course keys.")
NO_COURSE = (404, "No course with this id (or not one the caller may see)")
KEY_MANAGERS = (403, "A learner token or a course key was sent: course keys are made by the course's client, staff "
                     "keys, or the course's staff session")


def _summary(course_id: int) -> courses.CourseSummary:
    found = courses.summaries(db_session(), course_id=course_id)
    if not found:
        problem_abort(404, "No course with this id.")
    return found[0]


@blp.route("/admin/whoami")
class StaffCaller(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, StaffCallerSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY)
    def get(self):
        """The staff caller: a key of every course, or one course's staff (and that course)."""
        staff = course_staff()
        if staff is None:
            kind = "admin" if current_client().is_admin else "instructor"
            return {"kind": kind, "actor": staff_actor(), "course": None, "session_expires_at": None}
        expires = (datetime.fromtimestamp(staff.expires_at, UTC) if staff.expires_at is not None else None)
        return {"kind": "course_session" if staff.via == "session" else "course_key", "actor": staff.actor,
                "course": _summary(staff.course_id), "session_expires_at": expires}


@blp.route("/admin/courses")
class StaffCourses(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, CourseSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY)
    def get(self):
        """The courses the caller teaches (a course's staff: theirs alone; a staff key: every course),
        most recently active first, with their links, learners and attempts counted."""
        return courses.summaries(db_session(), course_id=course_asked(None))


@blp.route(f"/admin/courses/<{ROW_ID}:course_id>")
class StaffCourse(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, CourseSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE)
    def get(self, course_id: int):
        """One course, with its links, learners and attempts counted."""
        return _summary(course_asked(course_id) or course_id)


@blp.route("/courses")
class ClientCourses(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @blp.response(200, CourseSchema(many=True))
    @problems(blp, UNAUTHORIZED, (403, "A learner token was sent: this needs an API key"))
    def get(self):
        """Your client's courses (an LMS's courses are made by its launches)."""
        return courses.summaries(db_session(), client_id=current_client().id)

    @blp.doc(security=BEARER)
    @require_client
    @blp.arguments(CourseCreateSchema)
    @blp.response(201, CourseSchema)
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS, (403, "A learner token was sent: this needs an API key"),
              (409, "Your client already has a course with this external_id"),
              (422, "No external_id or title, or one too long"))
    def post(self, payload):
        """Make a course of your own: name it in POST /api/v1/learner-tokens (`course`) and your
        learners' attempts belong to it; its staff use a course key (POST /courses/{id}/keys)."""
        session = db_session()
        try:
            course = courses.create_course(session, current_client().id, payload["external_id"], payload["title"],
                                           payload["label"])
        except courses.CourseExists:
            problem_abort(409, f"Your client already has a course {payload['external_id']!r}.")
        session.commit()
        return _summary(course.id)


def _course_for_keys(course_id: int) -> Course:
    """The course whose keys the caller manages: its client's key, a staff key, or its staff
    session (a course key cannot make keys: a leaked key must not make itself a successor)."""
    session, staff, client = db_session(), course_staff(), current_client()
    if staff is not None and staff.via != "session":
        problem_abort(403, "A course key cannot manage course keys.")
    course = courses.find_course(session, course_id, within=None if staff is None else staff.course_id,
                                 client_id=None if staff is not None or client.is_staff else client.id)
    if course is None:
        problem_abort(404, "No course with this id.")
    return course


@blp.route(f"/courses/<{ROW_ID}:course_id>/keys")
class CourseKeys(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_course_staff=True)
    @blp.response(200, CourseKeySchema(many=True))
    @problems(blp, UNAUTHORIZED, KEY_MANAGERS, NO_COURSE)
    def get(self, course_id: int):
        """The course's keys (their prefixes, never the keys), revoked ones too."""
        return courses.keys_of(db_session(), _course_for_keys(course_id))

    @blp.doc(security=BEARER)
    @require_client(allow_course_staff=True)
    @blp.arguments(CourseKeyCreateSchema)
    @blp.response(201, NewCourseKeySchema)
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS, KEY_MANAGERS, NO_COURSE, (422, "No name, or one too long"))
    def post(self, payload, course_id: int):
        """A new key of the course's staff: it reads and grades this course alone (the staff API), and
        issues learner tokens in it. The key is in this response only."""
        session = db_session()
        row, key = courses.make_key(session, _course_for_keys(course_id), payload["name"], staff_actor())
        session.commit()
        return {**{name: getattr(row, name) for name in CourseKeySchema().fields}, "key": key}


@blp.route(f"/courses/<{ROW_ID}:course_id>/keys/<{ROW_ID}:key_id>")
class CourseKeyItem(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_course_staff=True)
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, KEY_MANAGERS, (404, "No such course, or no such key of it"))
    def delete(self, course_id: int, key_id: int):
        """Revoke a course key (idempotent): it stops working within API_KEY_CACHE_SECONDS."""
        session = db_session()
        if courses.revoke_key(session, _course_for_keys(course_id), key_id) is None:
            problem_abort(404, "This course has no key with this id.")
        session.commit()
