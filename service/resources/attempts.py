from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from flask import Response, current_app, jsonify, request, url_for
from flask.views import MethodView

from ..auth import BEARER, current_client, learner_scope, require_client
from ..errors import (
    ATTEMPT_REFUSED,
    IDEMPOTENCY_KEY_REUSED,
    INVALID_ANSWER,
    SIMULTANEOUS_ATTEMPTS,
    VALIDATION_ERROR,
    problem_abort,
)
from ..extensions import db_session, dispatch_job
from ..models import Attempt
from ..ratelimit import rate_limited
from ..rules import Refusal, Standing
from ..schemas.attempts import AttemptCreateSchema, AttemptSchema, StandingQuerySchema, WaitQuerySchema
from ..schemas.rules import StandingSchema
from ..services.attempts import (
    AttemptRefused,
    ExerciseNotFound,
    IdempotencyKeyReused,
    InvalidAnswer,
    NumberRaceLost,
    StoredResponse,
    Submission,
    current_version,
    request_digest,
    submit_attempt,
    visible_attempts,
    wait_until_finished,
)
from ..services.standing import LearnerCountingScope, show_to_learner, standing as standing_at
from .blueprint import Blueprint
from .course_scope import request_audience
from .docs import BODY_PROBLEMS, UNAUTHORIZED, problems

blp = Blueprint("attempts", __name__, url_prefix="/api/v1",
                description="Learners' attempts. Needs an API key; a client sees only its own learners.")

# When to send a submission again that lost the number race in every turn (503).
NUMBER_RACE_RETRY_SECONDS = 1

F = TypeVar("F", bound=Callable[..., Any])
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")


def _idempotency_key() -> str | None:
    """The request's Idempotency-Key, as it is stored: a learner token's is kept apart from others'."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not IDEMPOTENCY_KEY.fullmatch(key):
        problem_abort(400, "Idempotency-Key must be 1-255 visible ASCII characters.", type=VALIDATION_ERROR,
                      errors=[{"field": "headers.Idempotency-Key", "message": "1-255 visible ASCII characters"}])
    scope = learner_scope()
    if scope is None:
        return key
    # A platform's learners share its client: keep one learner's keys apart from another's,
    # and a launch's from those of the same learner's launch of another link (course).
    course = "" if scope.link_id is None and scope.course_id is None else f"{scope.link_id}:{scope.course_id}\0"
    return hashlib.sha256(f"{scope.learner}\0{course}{key}".encode()).hexdigest()


def _json_response(stored: StoredResponse, replayed: bool) -> Response:
    response = jsonify(stored.body)
    response.status_code = stored.status
    if stored.location:
        response.headers["Location"] = stored.location
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response


def takes_attempts(blp: Blueprint, schema: type[AttemptSchema] = AttemptSchema) -> Callable[[F], F]:
    """The body and the answers of a route that takes an attempt (here, and at a course's URL)."""
    location = {"Location": {"schema": {"type": "string"}}}

    def decorate(view: F) -> F:
        for document in reversed((
                blp.arguments(AttemptCreateSchema),
                blp.response(201, schema, headers=location, description="A quiz answer, graded"),
                blp.alt_response(202, schema=schema, headers=location,
                                 description="Code, queued for the grading workers: follow Location (with ?wait=N)"))):
            view = document(view)
        return view

    return decorate


# One instance: building a schema costs more than dumping with it (it copies its declared fields).
ATTEMPT_SCHEMA = AttemptSchema()
STANDING_SCHEMA = StandingSchema()


@blp.route("/exercises/<slug:slug>/attempts")
class ExerciseAttempts(MethodView):
    @blp.doc(security=BEARER, parameters=[{
        "in": "header", "name": "Idempotency-Key", "required": False,
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY.pattern},
        "description": "A retry with the same key returns the first response and stores nothing new.",
    }])
    @require_client(allow_learner_token=True)
    @rate_limited("attempts")
    @takes_attempts(blp)
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS,
              (403, "A learner token for another learner or exercise; or the exercise is not open yet, or past due "
                    "with late attempts refused (type /problems/attempt-refused/not-open-yet or .../past-due)"),
              (404, "No published exercise has this slug (or a course's exercise, to a caller outside that course)"),
              (409, "The learner has used all their attempts (type /problems/attempt-refused/no-attempts-left)"),
              (429, "Too many attempts by this caller; see Retry-After"),
              (422, "The answer does not fit the exercise, or the key was reused"),
              (503, "Other attempts of this learner were stored at the same moment, each taking the number this one "
                    "tried; nothing was stored: retry after Retry-After (type /problems/simultaneous-attempts)"))
    def post(self, payload, slug: str):
        """Submit an attempt: a quiz answer is graded at once (201); code is queued (202).

        With an API key, `learner` names the learner; with a learner token (from an LTI launch)
        the token does, and its attempts' scores go back to the LMS."""
        return submit(payload, slug)


def submit(payload: dict, slug: str, named_course: int | None = None) -> Response:
    """POST /api/v1/exercises/{slug}/attempts's answer; at a course URL (`named_course`), the same
    for that course's own exercises alone (course_learners.py)."""
    attempt_id = uuid.uuid4()
    submission = Submission(slug, submitting_learner(payload, slug), payload.get("answer"), payload.get("code"),
                            learner_scope(), attempt_id, url_for("attempts.AttemptDetail", attempt_id=attempt_id),
                            request_audience(named_course))
    digest = request_digest(request.method, request.path, request.get_data())
    try:
        stored, replayed = submit_attempt(db_session(), current_client(), submission, _idempotency_key(), digest,
                                          versions=current_app.extensions["gradquiz.current_versions"],
                                          schema=ATTEMPT_SCHEMA)
    except ExerciseNotFound:
        problem_abort(404, f"No exercise with slug {slug!r}.")
    except InvalidAnswer as exc:
        problem_abort(422, str(exc), title="Invalid answer", type=INVALID_ANSWER,
                      errors=[{"field": f"json.{exc.field}", "message": str(exc)}])
    except AttemptRefused as exc:
        refused(exc.refusal, exc.standing)
    except IdempotencyKeyReused:
        problem_abort(422, "This Idempotency-Key was already used with a different request.",
                      title="Idempotency key reused", type=IDEMPOTENCY_KEY_REUSED)
    except NumberRaceLost:
        problem_abort(503, "Other attempts of this learner at this exercise were being stored at the same moment, "
                           "each taking the attempt number this one tried; nothing was stored. Retry shortly.",
                      title="Simultaneous attempts", type=SIMULTANEOUS_ATTEMPTS,
                      headers={"Retry-After": str(NUMBER_RACE_RETRY_SECONDS)})
    if stored.status == 202 and not replayed:
        dispatch_job(Attempt, uuid.UUID(stored.body["id"]))
    return _json_response(stored, replayed)


def submitting_learner(payload: dict, slug: str, location: str = "json") -> str:
    """The learner an attempt is for (named in `payload`, the request's `location`)."""
    scope = learner_scope()
    if scope is None:
        if "learner" not in payload:
            problem_abort(422, "Name the learner: 'learner' is required with an API key.", type=VALIDATION_ERROR,
                          errors=[{"field": f"{location}.learner", "message": "Missing data for required field."}])
        return payload["learner"]
    if not scope.allows(slug):
        problem_abort(403, f"This learner token is not for exercise {slug!r}.")
    if payload.get("learner", scope.learner) != scope.learner:
        problem_abort(403, "A learner token submits for its own learner only.")
    return scope.learner


@blp.route("/attempts/<uuid:attempt_id>")
class AttemptDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.arguments(WaitQuerySchema, location="query")
    @blp.response(200, AttemptSchema)
    @problems(blp, UNAUTHORIZED, (404, "No attempt with this id is visible to the caller"))
    def get(self, query, attempt_id: uuid.UUID):
        """One attempt, with its grade and feedback; `?wait=N` holds the answer until it is graded."""
        scope = learner_scope()
        visible = visible_attempts(current_client(), scope).where(Attempt.id == attempt_id)
        attempt = wait_until_finished(db_session(), Attempt, visible, query["wait"])
        if attempt is None:
            problem_abort(404, "No such attempt.")
        (view,) = show_to_learner(db_session(), [attempt], exempt=scope is not None and scope.is_instructor,
                                  with_standing=True)
        return view


@blp.route("/exercises/<slug:slug>/standing")
class ExerciseStanding(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.arguments(StandingQuerySchema, location="query")
    @blp.response(200, StandingSchema)
    @problems(blp, UNAUTHORIZED, (403, "A learner token for another learner or exercise"),
              (404, "No published exercise has this slug"),
              (422, "An API key must name the learner (?learner=)"))
    def get(self, query, slug: str):
        """Where the learner stands at the exercise before answering: the rules in force, attempts used
        and left, the due date, the penalties the next attempt takes, whether it would be refused.

        With a token from an LTI launch, in the assignment launched (its LMS dates and extensions)."""
        return learner_standing(query, slug)


def learner_standing(query: dict, slug: str, named_course: int | None = None) -> Standing:
    """GET /api/v1/exercises/{slug}/standing's answer; at a course URL (`named_course`), the same
    for that course's own exercises alone (course_learners.py)."""
    learner = submitting_learner(query, slug, "query")
    scope = learner_scope()
    session = db_session()
    try:
        exercise, version = current_version(session, slug, current_app.extensions["gradquiz.current_versions"],
                                            request_audience(named_course))
    except ExerciseNotFound:
        problem_abort(404, f"No exercise with slug {slug!r}.")
    where = LearnerCountingScope.of(session, current_client().id, scope, exercise.id)
    return standing_at(session, where.counting_scope, version.spec.get("rules", {}), learner, exempt=where.exempt,
                       with_runs=exercise.kind == "code")


def refused(refusal: Refusal, standing: Standing) -> NoReturn:
    """The problem+json answer to an attempt or run the assessment rules refuse; its `standing`
    member says where the learner is (attempts used, the due date)."""
    problem_abort(refusal.status, refusal.message, title="Refused by the exercise's rules",
                  type=ATTEMPT_REFUSED + refusal.reason, members={"standing": STANDING_SCHEMA.dump(standing)})
