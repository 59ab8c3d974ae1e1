"""Staff: statistics per exercise and progress per learner.

Every course's figures come from the counters the workers fold the attempt events into
(service/services/progress.py), so these answers cost the same with a thousand attempts or a
million; `counters_as_of` says when they are behind. One course's (a course's own staff, or
`?course=`) are counted from that course's attempts when asked (service/services/stats.py).
"""

from __future__ import annotations

from flask.views import MethodView
from sqlalchemy import select

from ..auth import BEARER, require_staff
from ..errors import problem_abort
from ..extensions import db_session
from ..learner_ids import is_learner_id
from ..models import ApiClient, Exercise
from ..schemas.admin_stats import (
    CourseQuerySchema,
    ExerciseOverviewSchema,
    ExerciseStatsSchema,
    LearnerProgressQuerySchema,
    LearnerProgressSchema,
)
from ..services import names, stats
from .blueprint import Blueprint
from .course_scope import NO_COURSE, course_asked, request_audience
from .docs import STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("admin_stats", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: statistics per exercise and progress per learner.")


@blp.route("/stats")
class StatsOverview(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(CourseQuerySchema, location="query")
    @blp.response(200, ExerciseOverviewSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE)
    def get(self, query):
        """Every exercise (unpublished ones too), by slug: attempts, learners and the share of them
        who passed (the pass-rate-by-exercise chart).

        For one course (a course's own staff, or `?course=`): the exercises the course has a link
        or an attempt for, with the figures of its attempts only."""
        return stats.overview(db_session(), course_asked(query.get("course")))


@blp.route("/exercises/<slug:slug>/stats")
class ExerciseStats(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(CourseQuerySchema, location="query")
    @blp.response(200, ExerciseStatsSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No exercise with this slug, or no such course"))
    def get(self, query, slug: str):
        """One exercise's statistics: attempts, learners, pass rates, the histogram of learners'
        best scores, median attempts and time to the first pass, the most common failing checks
        and likely causes, and graded attempts per day over the last 30 days.

        For one course (a course's own staff, or `?course=`): the same, of the course's attempts
        only, counted when asked (`counters_as_of` null)."""
        session = db_session()
        course_id = course_asked(query.get("course"))
        exercise = session.scalar(select(Exercise).where(Exercise.slug == slug, request_audience().where()))
        if exercise is None:
            problem_abort(404, "No exercise with this slug.")
        return stats.exercise_stats(session, exercise, course_id=course_id)


@blp.route("/learners/<learner>/progress")
class LearnerProgress(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(LearnerProgressQuerySchema, location="query")
    @blp.response(200, LearnerProgressSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No API client with the name in ?client=, or no such course"),
              (422, "The client name in ?client= is empty or too long"))
    def get(self, query, learner: str):
        """A learner's progress across exercises: graded attempts, best and latest score, whether
        and when they first passed, and after how many attempts.

        Learner ids belong to a client: give `?client=` to read one client's learner; without it,
        every client's learner of this id is listed (each entry names its client). A learner with
        no graded attempt has an empty list. For one course (a course's own staff, or `?course=`):
        their attempts in that course only."""
        session = db_session()
        course_id = course_asked(query.get("course"))
        client = None
        if "client" in query:
            client = session.scalar(select(ApiClient).where(ApiClient.name == query["client"]))
            if client is None:
                problem_abort(404, "No API client with this name.")
        as_of = stats.counters_as_of(session, course_id)  # before the counters (stats.exercise_stats says why)
        exercises = stats.learner_progress(session, learner, client, course_id) if is_learner_id(learner) else []
        member_of = names.memberships(session, learner, client.id if client else None, course_id)
        return {"learner": learner, "client": client.name if client else None, "memberships": member_of,
                "exercises": exercises, "counters_as_of": as_of}
