"""A course's own exercises at their course URLs, for the course's learners (issue 34).

`/api/v1/courses/{course_id}/exercises/{slug}/attempts` and `/standing` answer exactly as
`/api/v1/exercises/{slug}/attempts` and `/standing` do (resources/attempts.py), for the exercises
of that course alone: a slug that is not that course's own published exercise, or a caller outside
the course (services/exercise_access.py), is a 404 as for a slug that does not exist. (The
exercise's own URL, GET `/api/v1/courses/{course_id}/exercises/{slug}`, is the course exercises
API's: it answers a learner with resources/exercises.py `learner_view`.)
"""

from __future__ import annotations

from flask.views import MethodView

from ..auth import BEARER, learner_scope, require_client
from ..ratelimit import rate_limited
from ..schemas.attempts import (
    LearnerHistorySchema,
    LearnerQuerySchema,
    StandingQuerySchema,
)
from ..schemas.rules import StandingSchema
from .attempts import learner_standing, submit, submitting_learner, takes_attempts
from .blueprint import Blueprint
from .docs import BODY_PROBLEMS, ROW_ID, UNAUTHORIZED, problems
from .learners import learner_history
from .pagination import PAGINATION

blp = Blueprint("course_learners", __name__, url_prefix="/api/v1/courses",
                description="A course's own exercises, for its learners: attempts and standing at the course's URLs "
                            "(a learner token of the course, or its client's key naming the learner).")

NOT_THE_COURSES = (404, "No published exercise of this course has this slug (or the caller is not in the course)")


@blp.route(f"/<{ROW_ID}:course_id>/exercises/<slug:slug>/attempts")
class CourseExerciseAttempts(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @rate_limited("attempts")
    @takes_attempts(blp)
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS,
              (403, "A learner token for another learner or exercise, or refused by the exercise's rules"),
              NOT_THE_COURSES, (409, "The learner has used all their attempts"),
              (429, "Too many attempts by this caller; see Retry-After"),
              (422, "The answer does not fit the exercise, or the key was reused"),
              (503, "Simultaneous attempts of this learner: retry after Retry-After"))
    def post(self, payload, course_id: int, slug: str):
        """Submit an attempt at a course's own exercise, as at `/api/v1/exercises/{slug}/attempts`."""
        return submit(payload, slug, course_id)

    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.arguments(LearnerQuerySchema, location="query")
    @blp.response(200, LearnerHistorySchema)
    @blp.paginate(**PAGINATION)
    @problems(blp, UNAUTHORIZED, (403, "A learner token for another learner or exercise"), NOT_THE_COURSES,
              (422, "An API key must name the learner (?learner=)"))
    def get(self, query, course_id: int, slug: str, pagination_parameters):
        """The learner's attempts at a course's own exercise, newest first, with their best score, as
        `/api/v1/learners/{learner}/attempts?exercise={slug}` answers."""
        scope = learner_scope()
        if scope is not None:  # its own learner, or (an instructor's) another of its course
            learner = query.get("learner", scope.learner)
        else:
            learner = submitting_learner(query, slug, "query")
        return learner_history(slug, learner, pagination_parameters, course_id)


@blp.route(f"/<{ROW_ID}:course_id>/exercises/<slug:slug>/standing")
class CourseExerciseStanding(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.arguments(StandingQuerySchema, location="query")
    @blp.response(200, StandingSchema)
    @problems(blp, UNAUTHORIZED, (403, "A learner token for another learner or exercise"), NOT_THE_COURSES,
              (422, "An API key must name the learner (?learner=)"))
    def get(self, query, course_id: int, slug: str):
        """Where the learner stands at a course's own exercise, as at `/api/v1/exercises/{slug}/standing`."""
        return learner_standing(query, slug, course_id)
