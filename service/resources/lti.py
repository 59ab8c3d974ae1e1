"""LTI 1.3 endpoints an LMS calls: login, launch, the tool's JWKS, and the deep-linking return.

These are browser and platform endpoints (form posts and redirects), not JSON API operations,
so they live on a plain Flask blueprint outside the OpenAPI document. Refusals are
problem+json like every other error.

Inside an LMS's frame a browser may keep no cookie of this site (Safari's default; Chrome's with
third-party cookies blocked, where the cookie is not Partitioned). When the platform offers its
storage (`lti_storage_target`), the login answers with a small page whose script
(service/static/lti/storage.js) puts the state and nonce into the platform's storage frame with
postMessage (lti.put_data) before going on to the platform; a launch that comes back without the
state cookie gets a page whose script reads them back (lti.get_data) and posts them here again.
That second post is accepted only from this site's own page (Sec-Fetch-Site: same-origin, or the
Origin header), so a form on another site cannot stand in for the platform's storage.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import (
    Blueprint,
    Response,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    send_from_directory,
    url_for,
)
from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as BaseResponse

from ..config import Settings
from ..errors import problem_response
from ..extensions import db_session, dispatch_job, writes_on_get
from ..learner_tokens import INSTRUCTOR, LEARNER, LearnerScope, mint_learner_token
from ..lti import assignments, claims as c, deep_linking, keys
from ..lti.launch import (
    STATE_COOKIE,
    STATE_SECONDS,
    STORAGE_NONCE_KEY,
    STORAGE_STATE_KEY,
    IssuedState,
    Launch,
    LaunchRejected,
    StoredState,
    begin_login,
    bound_by_cookie,
    origin_of,
    read_state,
    storage_target,
    verify_launch,
)
from ..lti.links import LinkWithoutExercise, known_course, record_link
from ..models import Exercise, LtiPlatform, LtiResourceLink, VariantPreparation
from ..outbound.http import outbound_policy
from ..page_security import secure_page
from ..services import preparations
from ..services.exercise_access import of_course
from ..staff_sessions import mint_staff_session
from .dashboard import course_dashboard_page

blp = Blueprint("lti", __name__, url_prefix="/lti")
LAUNCH_REJECTED = "/problems/lti-launch-rejected"
STATIC_DIR = Path(__file__).resolve().parent.parent / "static" / "lti"
# The fields the tool's own launch page posts back with what it read from the platform's storage.
STORED_STATE, STORED_NONCE = "lti_storage_state", "lti_storage_nonce"
# The pages of the storage flow: nothing but this site's script, posting only here. They show nothing
# to click, so any page may frame them: the LMS's page is not known at login (Canvas, say, serves
# courses from a school's host, not from its issuer's or its authorization endpoint's).
STORAGE_PAGE_POLICY = "; ".join([
    "default-src 'none'", "script-src 'self'", "form-action 'self'", "base-uri 'none'", "object-src 'none'"])
# The state cookie: sent back on the platform's cross-site form post (SameSite=None, so Secure), and
# Partitioned (CHIPS): a browser that blocks third-party cookies keeps it for this LMS's frame alone.
COOKIE_OPTIONS: dict[str, Any] = {"path": "/lti/", "secure": True, "httponly": True, "samesite": "None",
                                  "partitioned": True}


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
    response.delete_cookie(STATE_COOKIE, **COOKIE_OPTIONS)
    return response


@blp.route("/login", methods=["GET", "POST"])
def login() -> BaseResponse:
    """OIDC third-party login initiation: redirect to the platform with a fresh state and nonce."""
    params = request.values.to_dict()
    started = begin_login(db_session(), current_app.config["SECRET_KEY"], params, public_url("lti.launch"))
    if started.storage_target is None:
        response = redirect(started.redirect_url, code=302)
    else:  # the page puts the state and nonce into the platform's storage, then goes on to the platform
        response = _storage_page("lti/storage_login.html", {
            "step": "login", "redirect": started.redirect_url, "target": started.storage_target,
            "platform_origin": started.platform_origin, "state_key": STORAGE_STATE_KEY + started.state,
            "state": started.state, "nonce_key": STORAGE_NONCE_KEY + started.nonce, "nonce": started.nonce},
            redirect_url=started.redirect_url)
    response.set_cookie(STATE_COOKIE, started.cookie, max_age=STATE_SECONDS, **COOKIE_OPTIONS)
    return response


@blp.route("/launch", methods=["POST"])
def launch() -> BaseResponse:
    """The platform posts the id_token here (resource link launches and deep linking requests)."""
    session = db_session()
    settings = _settings()
    secret_key = current_app.config["SECRET_KEY"]
    id_token, state, cookie = request.form.get("id_token"), request.form.get("state"), request.cookies.get(STATE_COOKIE)
    stored = None
    if STORED_STATE in request.form or STORED_NONCE in request.form:
        if not _from_own_page():
            raise LaunchRejected("The LMS storage's values must come from this tool's own launch page.")
        stored = StoredState(request.form.get(STORED_STATE, ""), request.form.get(STORED_NONCE, ""))
    elif state and id_token and not bound_by_cookie(state, cookie) and storage_target(request.form.to_dict()):
        return _storage_check_page(read_state(secret_key, state))  # nothing verified or written yet
    verified = verify_launch(session, secret_key, id_token, state, cookie, stored, policy=outbound_policy(settings))
    response: BaseResponse
    if verified.message_type == c.DEEP_LINKING_REQUEST:
        response = _exercise_picker(verified)
    else:
        response = _open_exercise(verified, settings)
    session.commit()
    for job_id in g.pop("queued_preparations", ()):
        dispatch_job(VariantPreparation, job_id)
    response.delete_cookie(STATE_COOKIE, **COOKIE_OPTIONS)
    return response


def _from_own_page() -> bool:
    """Whether this POST was sent by a page of this site (not by a form on another site)."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site == "same-origin"
    own = origin_of(_settings().public_url or request.host_url)
    return own is not None and request.headers.get("Origin") == own


def _storage_page(template: str, config: dict[str, Any], **context: Any) -> Response:
    response = Response(render_template(template, config=config, **context))
    response.headers["Content-Security-Policy"] = STORAGE_PAGE_POLICY
    response.headers["Cache-Control"] = "no-store"
    # Same-origin: the page's post back carries Origin, checked where Sec-Fetch-Site is not sent.
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def _storage_check_page(issued: IssuedState) -> Response:
    """The launch came back without the state cookie, from a platform that offers its storage: a
    page that reads the state and nonce back from the platform's frame and posts them with the launch."""
    state, target = request.form["state"], request.form["lti_storage_target"]
    platform = db_session().get(LtiPlatform, issued.platform_id)
    if platform is None or platform.disabled_at is not None:
        raise LaunchRejected("This platform's registration is disabled.")
    fields = {"id_token": request.form["id_token"], "state": state, "lti_storage_target": target}
    return _storage_page("lti/storage_launch.html", {
        "step": "launch", "target": target, "platform_origin": origin_of(platform.auth_login_url),
        "state_key": STORAGE_STATE_KEY + state, "nonce_key": STORAGE_NONCE_KEY + issued.nonce,
        "state_field": STORED_STATE, "nonce_field": STORED_NONCE}, action=url_for("lti.launch"), fields=fields)


def _frame_ancestors(launch: Launch) -> list[str]:
    """The origins that may show the launched page in a frame: the platform's (its issuer, its
    authorization endpoint, and the LMS page the launch says to return to; all signed)."""
    presentation = launch.claims.get(c.LAUNCH_PRESENTATION)
    return_url = presentation.get("return_url") if isinstance(presentation, dict) else None
    candidates = [launch.platform.issuer, launch.platform.auth_login_url,
                  return_url if isinstance(return_url, str) else ""]
    return sorted({origin for origin in map(origin_of, candidates) if origin})


def framed_by(response: Response, origins: list[str]) -> Response:
    """The response's Content-Security-Policy with frame-ancestors `origins` (nobody if none)."""
    directives = [d.strip() for d in response.headers.get("Content-Security-Policy", "").split(";")
                  if d.strip() and d.split()[0].lower() != "frame-ancestors"]
    directives.append("frame-ancestors " + (" ".join(origins) or "'none'"))
    response.headers["Content-Security-Policy"] = "; ".join(directives)
    response.headers.pop("X-Frame-Options", None)  # frame-ancestors says it; DENY/SAMEORIGIN would overrule
    return response


def _open_exercise(launch: Launch, settings: Settings) -> BaseResponse:
    try:
        link = record_link(db_session(), launch)
    except LinkWithoutExercise as exc:
        raise LaunchRejected(str(exc)) from None
    scope = LearnerScope(client_id=launch.platform.api_client_id, learner=launch.claims["sub"],
                         exercises=assignments.slugs_of(link), role=INSTRUCTOR if launch.is_instructor else LEARNER,
                         link_id=link.id, course_id=link.course_id)
    issued = mint_learner_token(current_app.config["SECRET_KEY"], scope, settings.learner_token_seconds,
                                settings.learner_session_max_seconds)
    if not launch.is_instructor:
        # The learner's reference results of the link's code exercises, made before they submit;
        # dispatched once the launch's transaction is committed.
        g.queued_preparations = preparations.request(db_session(), scope.client_id, scope.learner,
                                                     scope.exercises or ())
    api = (settings.public_url.rstrip("/") or request.host_url.rstrip("/")) + "/api/v1"
    handoff = {"token": issued.token, "exercise": link.exercise.slug, "learner": scope.learner, "role": scope.role,
               "api": api, "expires_in": issued.expires_in, "expires_at": issued.expires_at,
               "session_expires_at": issued.session_expires_at, "refresh_url": api + "/learner-tokens/refresh"}
    if launch.is_instructor and link.course is not None:
        return _course_dashboard(launch, link, handoff, settings)
    if settings.lti_frontend_url:
        # In the fragment: browsers never send it to a server, so the token stays out of logs.
        return redirect(f"{settings.lti_frontend_url}#{urlencode(handoff)}", code=303)
    # The learner's page (service/learn/), the token in a JSON block of the page, never in its URL:
    # an assignment's page lists its exercises, each opened with the same token.
    if link.scoring is not None:
        page = current_app.extensions["gradquiz.assignment_page"](launch={**handoff, "assignment": True})
    else:
        page = current_app.extensions["gradquiz.exercise_page"](link.exercise.slug, launch=handoff)
    page.headers["Cache-Control"] = "no-store"
    return framed_by(page, _frame_ancestors(launch))


def _course_dashboard(launch: Launch, link: LtiResourceLink, handoff: dict[str, Any], settings: Settings) -> Response:
    """An instructor's launch opens the dashboard of the link's course, signed in for that course
    alone by a short-lived staff session; the handoff keeps the instructor's token at the exercise
    (the dashboard offers to try it as a learner does)."""
    course = link.course
    assert course is not None
    name = launch.claims.get("name")
    session_token, staff = mint_staff_session(current_app.config["SECRET_KEY"], course.client_id, course.id,
                                              launch.claims["sub"], name if isinstance(name, str) else None,
                                              settings.staff_session_seconds)
    page = course_dashboard_page({**handoff, "staff_session": session_token, "staff_session_expires_at": staff.expires_at,
                                  "course": {"id": course.id, "title": course.title, "label": course.label},
                                  "staff_name": staff.name, "link": link.id}, _frame_ancestors(launch))
    return page


def _exercise_picker(launch: Launch) -> Response:
    if not launch.is_instructor:
        raise LaunchRejected("Only instructors can add exercises to a course.")
    session = db_session()
    course = known_course(session, launch)
    course_id = None if course is None else course.id
    # The catalog and this course's own published exercises (services/exercise_access.py).
    exercises = session.scalars(select(Exercise).where(Exercise.published.is_(True), of_course(course_id).where())
                                .order_by(Exercise.slug)).all()
    settings = launch.claims[c.DEEP_LINKING_SETTINGS]
    picker = deep_linking.picker_token(current_app.config["SECRET_KEY"], launch, course_id)
    response = Response(render_template("lti/picker.html", exercises=exercises, picker=picker,
                                        action=url_for("lti.deep_link_return"),
                                        multiple=settings.get("accept_multiple", True) is not False))
    # The pages' policy (its styles in picker.css, no script), framed by the launching platform alone.
    return secure_page(response, cache_control="no-store", frame_ancestors=" ".join(_frame_ancestors(launch)) or "'none'")


@blp.route("/deep-link", methods=["POST"])
def deep_link_return() -> Response:
    """The picker's form: sign the chosen exercises and post them back to the LMS, once per picker
    token (a refused form, a 422, leaves it unused to try again)."""
    session = db_session()
    picked = deep_linking.read_picker_token(current_app.config["SECRET_KEY"], request.form.get("picker", ""))
    platform = session.get(LtiPlatform, picked["platform"])
    if platform is None or platform.disabled_at is not None:
        raise LaunchRejected("This platform's registration is disabled.")
    slugs = [] if request.form.get("cancel") else request.form.getlist("exercise")
    if slugs and request.form.get("mode") == "assignment":
        return _assignment_return(session, platform, picked, slugs)
    if not picked["accept_multiple"]:
        slugs = slugs[:1]
    found = {e.slug: e for e in session.scalars(
        select(Exercise).where(Exercise.slug.in_(slugs), Exercise.published.is_(True), _pickable(picked)))}
    unknown = [slug for slug in slugs if slug not in found]
    if unknown:
        return problem_response(422, "Unknown exercise", f"No published exercise {unknown[0]!r}.")
    token = deep_linking.response_jwt(session, _settings(), platform, picked, [found[s] for s in slugs],
                                      public_url("lti.launch"))
    return _return_to_platform(session, picked, token)


def _assignment_return(session: Session, platform: LtiPlatform, picked: dict[str, Any], slugs: list[str]) -> Response:
    """The picker's exercises as one assignment (service/lti/assignments.py): in the order the
    instructor numbered them (ties: as listed), with the title, rule and points the form gives."""
    try:
        spec, title = assignments.spec_from_picker(request.form, slugs)
    except assignments.BadAssignment as exc:
        return problem_response(422, "Invalid assignment", str(exc))
    found = set(session.scalars(select(Exercise.slug).where(Exercise.slug.in_(spec.slugs),
                                                            Exercise.published.is_(True), _pickable(picked))))
    unknown = [slug for slug in spec.slugs if slug not in found]
    if unknown:
        return problem_response(422, "Unknown exercise", f"No published exercise {unknown[0]!r}.")
    item = deep_linking.assignment_item(title, spec, public_url("lti.launch"))
    token = deep_linking.response_jwt(session, _settings(), platform, picked, [], public_url("lti.launch"), [item])
    return _return_to_platform(session, picked, token)


def _pickable(picked: dict[str, Any]) -> ColumnElement[bool]:
    """The exercises the picker offered: the catalog's and its course's own (a picker token made
    before pickers named their course: the catalog's)."""
    course = picked.get("course")
    return of_course(course if isinstance(course, int) else None).where()


def _return_to_platform(session: Session, picked: dict[str, Any], response_jwt: str) -> Response:
    deep_linking.use_picker(session, picked)
    session.commit()
    return _autopost(picked["return_url"], {"JWT": response_jwt})


def _autopost(action: str, fields: dict[str, Any]) -> Response:
    csp_nonce = secrets.token_urlsafe(16)
    response = Response(render_template("lti/autopost.html", action=action, fields=fields, csp_nonce=csp_nonce))
    target = urlsplit(action)
    response.headers["Content-Security-Policy"] = (f"default-src 'none'; script-src 'nonce-{csp_nonce}'; "
                                                   f"form-action {target.scheme}://{target.netloc}")
    response.headers["Cache-Control"] = "no-store"
    return response


@blp.route("/jwks")
@writes_on_get
def jwks() -> Response:
    """The tool's public keys: platforms verify its deep-linking responses and AGS requests."""
    session = db_session()
    response = jsonify(keys.jwks(session, _settings()))
    session.commit()
    response.headers["Cache-Control"] = "public, max-age=300"
    return response


@blp.route("/picker.css")
def picker_style() -> Response:
    """The exercise picker's styles (a file: the picker allows no inline style)."""
    response = send_from_directory(STATIC_DIR, "picker.css", max_age=0, mimetype="text/css")
    response.headers["Cache-Control"] = "no-cache"
    return response


@blp.route("/storage.js")
def storage_script() -> Response:
    """The script of the storage pages (a file: the pages allow no inline script)."""
    response = send_from_directory(STATIC_DIR, "storage.js", max_age=0, mimetype="text/javascript")
    response.headers["Cache-Control"] = "no-cache"
    return response
