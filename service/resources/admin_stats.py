"""Staff: statistics per exercise and progress per learner.

Every figure comes from the counters the workers fold the attempt events into
(service/services/progress.py), so these answers cost the same with a thousand attempts or a
million; `counters_as_of` says when they are behind.
"""

from __future__ import annotations

import re

from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import select

from ..auth import BEARER, require_staff
from ..errors import problem_abort
from ..extensions import db_session
from ..models import ApiClient, Exercise
from ..schemas.admin_stats import (
    ExerciseOverviewSchema,
    ExerciseStatsSchema,
    LearnerProgressQuerySchema,
    LearnerProgressSchema,
)
from ..schemas.attempts import LEARNER_PATTERN
from ..services import progress, stats
from .docs import STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("admin_stats", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: statistics per exercise and progress per learner.")
LEARNER = re.compile(LEARNER_PATTERN)


@blp.route("/stats")
class StatsOverview(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, ExerciseOverviewSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY)
    def get(self):
        """Every exercise (unpublished ones too), by slug: attempts, learners and the share of them
        who passed (the pass-rate-by-exercise chart)."""
        return stats.overview(db_session())


@blp.route("/exercises/<slug:slug>/stats")
class ExerciseStats(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, ExerciseStatsSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No exercise with this slug"))
    def get(self, slug: str):
        """One exercise's statistics: attempts, learners, pass rates, the histogram of learners'
        best scores, median attempts and time to the first pass, the most common failing checks
        and likely causes, and graded attempts per day over the last 30 days."""
        session = db_session()
        exercise = session.scalar(select(Exercise).where(Exercise.slug == slug))
        if exercise is None:
            problem_abort(404, "No exercise with this slug.")
        return stats.exercise_stats(session, exercise)


@blp.route("/learners/<learner>/progress")
class LearnerProgress(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(LearnerProgressQuerySchema, location="query")
    @blp.response(200, LearnerProgressSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No API client with the name in ?client="),
              (422, "The client name in ?client= is empty or too long"))
    def get(self, query, learner: str):
        """A learner's progress across exercises: graded attempts, best and latest score, whether
        and when they first passed, and after how many attempts.

        Learner ids belong to a client: give `?client=` to read one client's learner; without it,
        every client's learner of this id is listed (each entry names its client). A learner with
        no graded attempt has an empty list."""
        session = db_session()
        client = None
        if "client" in query:
            client = session.scalar(select(ApiClient).where(ApiClient.name == query["client"]))
            if client is None:
                problem_abort(404, "No API client with this name.")
        as_of = progress.counters_as_of(session)  # before the counters (stats.exercise_stats says why)
        exercises = stats.learner_progress(session, learner, client) if LEARNER.match(learner) else []
        return {"learner": learner, "client": client.name if client else None, "exercises": exercises,
                "counters_as_of": as_of}
