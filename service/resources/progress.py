"""A learner's progress (GET /api/v1/progress): for the learner token's own learner, at every
exercise it may see, passed, tried or not started, and the best score (services/learner_progress.py).
The lesson page (/learn) marks its practice lists with it, in one call."""

from __future__ import annotations

from flask import Response, jsonify
from flask.views import MethodView

from ..auth import BEARER, learner_scope, require_client
from ..errors import problem_abort
from ..extensions import db_session
from ..schemas.progress import ProgressSchema
from ..services.learner_progress import learner_progress
from .blueprint import Blueprint
from .docs import UNAUTHORIZED, problems

blp = Blueprint("progress", __name__, url_prefix="/api/v1/progress",
                description="A learner token's learner: passed, tried or not started at each exercise.")

PROGRESS_SCHEMA = ProgressSchema()


@blp.route("")
class LearnerProgress(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.response(200, ProgressSchema)
    @problems(blp, UNAUTHORIZED, (403, "An API key was sent: progress is a learner token's own learner's"))
    def get(self) -> Response:
        """The token's learner at every published exercise the token may see (the catalog, and its
        course's own exercises) and act at: `passed`, `tried` or `not_started`, and the best graded
        score, read from the attempts (a grade shows at once). A token of a course counts the
        attempts made in that course; an instructor's token, the instructor's own try-outs."""
        scope = learner_scope()
        if scope is None:
            problem_abort(403, "An API key names no learner here: send the learner's token "
                               "(or read GET /api/v1/learners/{learner}/attempts with the key).")
        rows = learner_progress(db_session(), scope)
        response = jsonify(PROGRESS_SCHEMA.dump({
            "learner": scope.learner,
            "exercises": [{"slug": r.slug, "state": r.state, "best_score": r.best_score} for r in rows]}))
        response.headers["Cache-Control"] = "private, no-store"
        return response
