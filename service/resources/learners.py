from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..auth import BEARER, current_client, learner_scope, require_client
from ..errors import problem_abort
from ..extensions import db_session
from ..learner_ids import is_learner_id
from ..models import Exercise
from ..schemas.attempts import LearnerAttemptsQuerySchema, LearnerHistorySchema
from ..services.attempts import (
    ExerciseNotFound,
    best_scores,
    current_version,
    history_parameters,
    learner_attempts,
)
from ..services.exercise_access import ExerciseAudience
from ..services.standing import show_to_learner
from .blueprint import Blueprint
from .course_scope import request_audience
from .docs import UNAUTHORIZED, problems
from .pagination import PAGINATION, Query, RowsPage

blp = Blueprint("learners", __name__, url_prefix="/api/v1/learners",
                description="A learner's history, as seen by the client that owns the learner id.")


@blp.route("/<learner:learner>/attempts")
class LearnerAttempts(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.arguments(LearnerAttemptsQuerySchema, location="query")
    @blp.response(200, LearnerHistorySchema)
    @blp.paginate(**PAGINATION)
    @problems(blp, UNAUTHORIZED, (403, "A learner token for another learner or exercise"),
              (404, "No such learner id, or no such exercise in ?exercise="))
    def get(self, query, learner: str, pagination_parameters):
        """The learner's attempts, newest first, with the best score per exercise.

        A learner token reads its own learner's attempts at its exercises (an instructor's token:
        any learner's at its exercise); a token from an LTI launch, only those made in its course
        (and its learner's own made outside any course)."""
        return learner_history(query.get("exercise"), learner, pagination_parameters)


def learner_history(slug: str | None, learner: str, pagination_parameters: Any,
                    named_course: int | None = None) -> dict[str, Any]:
    """GET /api/v1/learners/{learner}/attempts's answer (at exercise `slug` if given); at a course
    URL (`named_course`), the same at that course's own exercise `slug` alone (course_learners.py)."""
    if not is_learner_id(learner):
        problem_abort(404, "No such learner.")
    session = db_session()
    client = current_client()
    scope = learner_scope()
    if scope is not None:
        if learner != scope.learner and not scope.is_instructor:
            problem_abort(403, "A learner token reads its own learner's attempts only.")
        if slug is not None and not scope.allows(slug):
            problem_abort(403, f"This learner token is not for exercise {slug!r}.")
    audience = request_audience(named_course)
    exercise_ids = None
    if slug is not None:
        exercise_id = _published_exercise_id(session, slug, audience)
        if exercise_id is None:
            problem_abort(404, f"No exercise with slug {slug!r}.")
        exercise_ids = [exercise_id]
    elif scope is not None and scope.exercises is not None:
        exercise_ids = list(session.scalars(select(Exercise.id).where(Exercise.slug.in_(scope.exercises),
                                                                      audience.where())))
    best = best_scores(session, client, learner, exercise_ids, scope)
    # best_scores counts the same attempts per exercise: their sum is the page's total
    total = sum(exercise["attempts"] for exercise in best)
    postgresql = session.get_bind().dialect.name == "postgresql"
    page = RowsPage(Query(session, learner_attempts(exercise_ids, scope, postgresql=postgresql), total,
                          history_parameters(client, learner, exercise_ids, scope), built_once=True),
                    pagination_parameters)
    attempts = current_app.extensions["gradquiz.versions"].listed(session, page.items)
    views = show_to_learner(session, attempts, exempt=scope is not None and scope.is_instructor)
    return {"learner": learner, "best_scores": best, "attempts": views}


def _published_exercise_id(session: Session, slug: str, audience: ExerciseAudience) -> int | None:
    """The id of the published exercise `slug`, if the caller may see it (services/exercise_access.py):
    from the process's cache of current versions when it is on (EXERCISE_CACHE_SECONDS, as a POST
    to the exercise reads it), else one statement."""
    cache = current_app.extensions["gradquiz.current_versions"]
    if not cache.seconds:
        return session.scalar(select(Exercise.id).where(Exercise.slug == slug, Exercise.published.is_(True),
                                                        audience.where()))
    try:
        return current_version(session, slug, cache, audience)[0].id
    except ExerciseNotFound:
        return None
