"""The assignment a learner token was launched for (an LTI resource link): its exercises in order,
where the learner stands at each, and the assignment's score by its rule (service/lti/assignments.py),
as the LMS's gradebook gets it. The learner's assignment page (/learn/assignment) reads it."""

from __future__ import annotations

from flask import Response, jsonify
from flask.views import MethodView

from ..auth import BEARER, learner_scope, require_client
from ..errors import problem_abort
from ..extensions import db_session
from ..lti import assignments
from ..models import LtiResourceLink
from ..schemas.assignment import AssignmentSchema
from .blueprint import Blueprint
from .docs import UNAUTHORIZED, problems

blp = Blueprint("assignment", __name__, url_prefix="/api/v1/assignment",
                description="The assignment an LTI launch's learner token was issued for.")


@blp.route("")
class LaunchedAssignment(MethodView):
    """The assignment (service/lti/assignments.py) a learner token was launched for: its LMS link."""

    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.response(200, AssignmentSchema)
    @problems(blp, UNAUTHORIZED, (403, "An API key was sent: only a learner token belongs to an assignment"),
              (404, "The token was not issued by an LMS launch (it belongs to no assignment)"))
    def get(self) -> Response:
        """The assignment of the token's LMS link: its exercises in order, the learner's status,
        attempts and counted score at each, and the assignment's score by its rule (exercises not
        tried count 0), as the LMS's gradebook gets it. An instructor's token sees their own
        tries (made outside the gradebook)."""
        scope = learner_scope()
        if scope is None:
            problem_abort(403, "An API key belongs to no assignment: send a learner token from an LMS launch.")
        session = db_session()
        link = None if scope.link_id is None else session.get(LtiResourceLink, scope.link_id)
        if link is None or link.platform.api_client_id != scope.client_id:
            problem_abort(404, "This token was not issued by an LMS launch: it belongs to no assignment.")
        # An instructor's attempts are made through no link (they count in no gradebook).
        parts = assignments.learner_parts(session, link, scope.client_id, scope.learner,
                                          None if scope.is_instructor else link.id)
        scoring = link.scoring or assignments.MEAN
        maximum = assignments.score_maximum(scoring, [part.points for part in parts])
        score = assignments.assignment_score(scoring, parts)
        response = jsonify(AssignmentSchema().dump({
            "title": link.title or (link.exercise.title if link.scoring is None else "Assignment"),
            "scoring": scoring, "score": None if score is None else round(score * maximum, 4),
            "score_maximum": maximum, "complete": assignments.all_graded(parts),
            "exercises": [{"slug": part.exercise.slug, "title": part.exercise.title, "kind": part.exercise.kind,
                           "points": part.points, "status": part.status, "attempts": part.attempts,
                           "score": part.score} for part in parts]}))
        response.headers["Cache-Control"] = "private, no-store"
        return response
