"""LTI 1.3 endpoints an LMS calls: login, launch, the tool's JWKS, and the deep-linking return.

These are browser and platform endpoints (form posts and redirects), not JSON API operations,
so they live on a plain Flask blueprint outside the OpenAPI document. Refusals are
problem+json like every other error.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import Blueprint, Response, current_app, jsonify, redirect, render_template, request, url_for
from sqlalchemy import select

from ..config import Settings
from ..errors import problem_response
from ..extensions import db_session
from ..learner_tokens import INSTRUCTOR, LEARNER, LearnerScope, issue_learner_token
from ..lti import claims as c
from ..lti import deep_linking, keys
from ..lti.launch import STATE_COOKIE, STATE_SECONDS, Launch, LaunchRejected, begin_login, verify_launch
from ..lti.links import LinkWithoutExercise, record_link
from ..models import Exercise, LtiPlatform

blp = Blueprint("lti", __name__, url_prefix="/lti")
LAUNCH_REJECTED = "/problems/lti-launch-rejected"


def _settings() -> Settings:
    return current_app.config["SETTINGS"]


def public_url(endpoint: str) -> str:
    """An absolute URL of this service as the LMS reaches it (PUBLIC_URL, else the request's)."""
    base = _settings().public_url.rstrip("/")
    return base + url_for(endpoint) if base else url_for(endpoint, _external=True)


@blp.errorhandler(LaunchRejected)
def _rejected(error: LaunchRejected) -> Response:
    db_session().rollback()  # nothing of a refused launch is kept
    response = problem_response(401, "LTI launch refused", str(error), type=LAUNCH_REJECTED)
    response.delete_cookie(STATE_COOKIE, path="/lti/", secure=True, httponly=True, samesite="None")
    return response


@blp.route("/login", methods=["GET", "POST"])
def login() -> Response:
    """OIDC third-party login initiation: redirect to the platform with a fresh state and nonce."""
    params = request.values.to_dict()
    started = begin_login(db_session(), current_app.config["SECRET_KEY"], params, public_url("lti.launch"))
    response = redirect(started.redirect_url, code=302)
    # SameSite=None: the launch is a cross-site POST from the LMS, which must carry it back.
    response.set_cookie(STATE_COOKIE, started.cookie, max_age=STATE_SECONDS, path="/lti/", secure=True,
                        httponly=True, samesite="None")
    return response


@blp.route("/launch", methods=["POST"])
def launch() -> Response:
    """The platform posts the id_token here (resource link launches and deep linking requests)."""
    session = db_session()
    settings = _settings()
    verified = verify_launch(session, current_app.config["SECRET_KEY"], request.form.get("id_token"),
                             request.form.get("state"), request.cookies.get(STATE_COOKIE))
    if verified.message_type == c.DEEP_LINKING_REQUEST:
        response = _exercise_picker(verified)
    else:
        response = _open_exercise(verified, settings)
    session.commit()
    response.delete_cookie(STATE_COOKIE, path="/lti/", secure=True, httponly=True, samesite="None")
    return response


def _open_exercise(launch: Launch, settings: Settings) -> Response:
    try:
        link = record_link(db_session(), launch)
    except LinkWithoutExercise as exc:
        raise LaunchRejected(str(exc)) from None
    scope = LearnerScope(client_id=launch.platform.api_client_id, learner=launch.claims["sub"],
                         exercise=link.exercise.slug, role=INSTRUCTOR if launch.is_instructor else LEARNER,
                         link_id=link.id)
    handoff = {"token": issue_learner_token(current_app.config["SECRET_KEY"], scope, settings.learner_token_seconds),
               "exercise": scope.exercise, "learner": scope.learner, "role": scope.role,
               "api": (settings.public_url.rstrip("/") or request.host_url.rstrip("/")) + "/api/v1",
               "expires_in": settings.learner_token_seconds}
    if settings.lti_frontend_url:
        # In the fragment: browsers never send it to a server, so the token stays out of logs.
        return redirect(f"{settings.lti_frontend_url}#{urlencode(handoff)}", code=303)
    response = Response(render_template("lti/launched.html", exercise=link.exercise, launch=handoff))
    response.headers["Cache-Control"] = "no-store"
    return response


def _exercise_picker(launch: Launch) -> Response:
    if not launch.is_instructor:
        raise LaunchRejected("Only instructors can add exercises to a course.")
    exercises = db_session().scalars(select(Exercise).where(Exercise.published.is_(True)).order_by(Exercise.slug)).all()
    settings = launch.claims[c.DEEP_LINKING_SETTINGS]
    picker = deep_linking.picker_token(current_app.config["SECRET_KEY"], launch)
    response = Response(render_template("lti/picker.html", exercises=exercises, picker=picker,
                                        action=url_for("lti.deep_link_return"),
                                        multiple=settings.get("accept_multiple", True) is not False))
    response.headers["Cache-Control"] = "no-store"
    return response


@blp.route("/deep-link", methods=["POST"])
def deep_link_return() -> Response:
    """The picker's form: sign the chosen exercises and post them back to the LMS."""
    session = db_session()
    picked = deep_linking.read_picker_token(current_app.config["SECRET_KEY"], request.form.get("picker", ""))
    platform = session.get(LtiPlatform, picked["platform"])
    if platform is None or platform.disabled_at is not None:
        raise LaunchRejected("This platform's registration is disabled.")
    slugs = [] if request.form.get("cancel") else request.form.getlist("exercise")
    if not picked["accept_multiple"]:
        slugs = slugs[:1]
    found = {e.slug: e for e in session.scalars(
        select(Exercise).where(Exercise.slug.in_(slugs), Exercise.published.is_(True)))}
    unknown = [slug for slug in slugs if slug not in found]
    if unknown:
        return problem_response(422, "Unknown exercise", f"No published exercise {unknown[0]!r}.")
    token = deep_linking.response_jwt(session, _settings(), platform, picked, [found[s] for s in slugs],
                                      public_url("lti.launch"))
    return _autopost(picked["return_url"], {"JWT": token})


def _autopost(action: str, fields: dict[str, Any]) -> Response:
    csp_nonce = secrets.token_urlsafe(16)
    response = Response(render_template("lti/autopost.html", action=action, fields=fields, csp_nonce=csp_nonce))
    target = urlsplit(action)
    response.headers["Content-Security-Policy"] = (f"default-src 'none'; script-src 'nonce-{csp_nonce}'; "
                                                   f"form-action {target.scheme}://{target.netloc}")
    response.headers["Cache-Control"] = "no-store"
    return response


@blp.route("/jwks")
def jwks() -> Response:
    """The tool's public keys: platforms verify its deep-linking responses and AGS requests."""
    session = db_session()
    response = jsonify(keys.jwks(session, _settings()))
    session.commit()
    response.headers["Cache-Control"] = "public, max-age=300"
    return response
