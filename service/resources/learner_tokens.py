"""Learner tokens for frontends without an LMS, and their renewal.

A browser must never hold a client's key. The client's own server calls
`POST /api/v1/learner-tokens` with its key and hands the browser the short-lived token it gets,
scoped to one learner and to the exercises it names (or every exercise), as payment APIs hand out
ephemeral keys. A page holding a learner token (from there or from an LTI launch) renews it with
`POST /api/v1/learner-tokens/refresh` before it expires, up to LEARNER_SESSION_MAX_SECONDS
after the session's first token. Tokens are never stored: nothing is written here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Response, current_app, jsonify
from flask.views import MethodView
from sqlalchemy import select

from ..auth import BEARER, INVALID_CREDENTIALS, course_staff, current_client, learner_scope, require_client
from ..config import Settings
from ..errors import VALIDATION_ERROR, problem_abort
from ..extensions import db_session, dispatch_job
from ..learner_tokens import LEARNER, IssuedToken, LearnerScope, SessionOver, mint_learner_token
from ..models import ApiClient, Course, Exercise, VariantPreparation
from ..schemas.learner_tokens import LearnerTokenCreateSchema, LearnerTokenSchema
from ..services import courses, preparations
from ..services.exercise_access import of_course
from .blueprint import Blueprint
from .docs import BODY_PROBLEMS, UNAUTHORIZED, problems

blp = Blueprint("learner_tokens", __name__, url_prefix="/api/v1/learner-tokens",
                description="Short-lived tokens that act for one learner, for browser frontends: a browser never "
                            "holds a client's key.")


def _settings() -> Settings:
    return current_app.config["SETTINGS"]


def _at(unix: int) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def token_response(issued: IssuedToken, scope: LearnerScope) -> Response:
    """The token and what a page needs to keep it: never cached (RFC 6749 5.1)."""
    response = jsonify(LearnerTokenSchema().dump({
        "token": issued.token, "expires_at": _at(issued.expires_at), "expires_in": issued.expires_in,
        "session_expires_at": _at(issued.session_expires_at), "learner": scope.learner,
        "exercises": None if scope.exercises is None else list(scope.exercises), "role": scope.role}))
    response.headers["Cache-Control"] = "no-store"
    response.headers["Pragma"] = "no-cache"
    return response


def _client(client_id: int | None) -> int:
    """The client a new token is of: the caller's own, or for an admin key the one it names. A learner
    token always belongs to one client of learners: an admin key's token (its client reads every
    client's attempts) would read them all."""
    caller = current_client()
    if not caller.is_admin:
        if client_id is not None and client_id != caller.id:
            problem_abort(422, "Only an admin key names the client of a token: yours are your own client's.",
                          type=VALIDATION_ERROR, errors=[{"field": "json.client", "message": "not with this key"}])
        return caller.id
    if client_id is None:
        problem_abort(422, "An admin key names the client whose learner the token acts for.", type=VALIDATION_ERROR,
                      errors=[{"field": "json.client", "message": "required with an admin key"}])
    named = db_session().get(ApiClient, client_id)
    if named is None or named.revoked_at is not None or named.is_admin:
        problem_abort(422, f"No client {client_id} of learners (an unrevoked client that is not an admin).",
                      type=VALIDATION_ERROR, errors=[{"field": "json.client", "message": "no such client of learners"}])
    return named.id


def _may_issue() -> None:
    """A course's staff issue tokens with a key of a client's own course alone: an LMS course's
    learners get theirs from their launches, and a key of it must not be able to act as one of them."""
    staff = course_staff()
    if staff is not None:
        own = db_session().get(Course, staff.course_id)
        if staff.via != "key" or own is None or own.platform_id is not None:
            problem_abort(403, "Only a key of a client's own course issues learner tokens; an LMS course's "
                               "learners get theirs by launching from the LMS.")


def _course(client_id: int, external_id: str | None) -> int | None:
    """The course a new token is of: a course key's own, else the one named (of the token's client)."""
    staff = course_staff()
    course = None if external_id is None else courses.course_by_external_id(db_session(), client_id, external_id)
    if external_id is not None and (course is None or (staff is not None and course.id != staff.course_id)):
        problem_abort(422, f"You have no course {external_id!r}.", type=VALIDATION_ERROR,
                      errors=[{"field": "json.course", "message": "no such course of this client"}])
    if staff is not None:
        return staff.course_id
    return None if course is None else course.id


@blp.route("")
class LearnerTokens(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_course_staff=True)
    @blp.arguments(LearnerTokenCreateSchema)
    @blp.response(200, LearnerTokenSchema, description="A token for the learner, valid LEARNER_TOKEN_SECONDS")
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS, (403, "A learner token was sent: only an API key issues tokens"),
              (422, "The learner, the exercises or the course are not valid, or an exercise is not published"))
    def post(self, payload):
        """Issue a learner token: your server calls this with its key, your browser page uses the token.

        The token acts for `learner` (your own id of them, as in attempts) within your client (an
        admin key names the client, `client`): it
        submits and reads that learner's attempts and runs at `exercises` (null: at every
        exercise), and nothing else. Renew it with `POST /api/v1/learner-tokens/refresh`.

        Naming the exercises also has the grading workers prepare the learner's code exercises
        (the reference run on their own hidden inputs) before they submit, so their first grade
        is as quick as their next ones."""
        _may_issue()
        client_id = _client(payload["client"])
        course_id = _course(client_id, payload["course"])
        slugs = payload["exercises"]
        if slugs is not None:
            if len(set(slugs)) != len(slugs):
                problem_abort(422, "Each exercise is named once.", type=VALIDATION_ERROR,
                              errors=[{"field": "json.exercises", "message": "repeated slugs"}])
            # A course's own exercises only with that course (services/exercise_access.py): to anyone
            # else they are no published exercise at all.
            published = set(db_session().scalars(select(Exercise.slug).where(
                Exercise.slug.in_(slugs), Exercise.published.is_(True), of_course(course_id).where())))
            unknown = [(i, slug) for i, slug in enumerate(slugs) if slug not in published]
            if unknown:
                problem_abort(422, f"No published exercise {unknown[0][1]!r}.", type=VALIDATION_ERROR,
                              errors=[{"field": f"json.exercises[{i}]", "message": f"no published exercise {slug!r}"}
                                      for i, slug in unknown])
        scope = LearnerScope(client_id=client_id, learner=payload["learner"], exercises=slugs, role=LEARNER,
                             course_id=course_id)
        settings = _settings()
        issued = mint_learner_token(current_app.config["SECRET_KEY"], scope, settings.learner_token_seconds,
                                    settings.learner_session_max_seconds)
        # The learner's reference results of the named code exercises, made by the grading workers
        # before they submit: a class's first grades at a deadline cost what their later ones do.
        queued = preparations.request(db_session(), client_id, scope.learner, slugs or ())
        if queued:
            db_session().commit()
            for job_id in queued:
                dispatch_job(VariantPreparation, job_id)
        return token_response(issued, scope)


@blp.route("/refresh")
class LearnerTokenRefresh(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True)
    @blp.response(200, LearnerTokenSchema, description="A fresh token with the same scope and session")
    @problems(blp, (401, "No valid, unexpired learner token, or its session is over (launch or sign in again)"),
              (403, "An API key was sent: keys do not expire, they issue tokens"))
    def post(self):
        """Renew a learner token: send the token itself; the answer is a fresh one with the same
        learner, exercises and session, valid LEARNER_TOKEN_SECONDS but never past the session's
        end (LEARNER_SESSION_MAX_SECONDS after its first token). Renew before `expires_at`."""
        scope = learner_scope()
        if scope is None:
            problem_abort(403, "This endpoint renews a learner token; an API key issues one with "
                               "POST /api/v1/learner-tokens.")
        settings = _settings()
        try:
            issued = mint_learner_token(current_app.config["SECRET_KEY"], scope, settings.learner_token_seconds,
                                        settings.learner_session_max_seconds)
        except SessionOver as exc:
            problem_abort(401, f"{exc} Launch the exercise again.", headers=INVALID_CREDENTIALS)
        return token_response(issued, scope)
