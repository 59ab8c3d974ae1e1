"""The tool's registration URL, which an LMS admin pastes into the LMS (LTI Dynamic Registration,
service/lti/registration.py): GET /lti/register?code=… with the LMS's openid_configuration and
registration_token.

It is a page the LMS shows its admin in a dialog (a frame or a window), so it answers with a
page: what was registered, or why not; the success page tells the LMS to close the dialog. A
caller that does not ask for HTML gets problem+json instead. The page shows nothing to click, so
any page may frame it (the LMS's page is not known before its configuration is read).

Each registration waits on the LMS's answers (up to OUTBOUND_TIMEOUT_SECONDS each): a process makes
at most OUTBOUND_WEB_CALLS at once and answers one more with 503 at once, so slow servers never
hold more than that many of its threads. A failed try is logged (the link's id, never its code
nor the LMS's token), counted (gradquiz_lti_registration_failures) and, the MAX_FAILED_TRIES-th
of a link, uses the link up. The tries are counted with the link, in the database.
"""

from __future__ import annotations

import logging
import math
import secrets
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, render_template, request

from ..config import Settings
from ..errors import problem_response
from ..extensions import db_session, writes_on_get
from ..lti.launch import origin_of
from ..lti.registration import (
    MAX_FAILED_TRIES,
    PlatformConfiguration,
    Registered,
    RegistrationRefused,
    Stored,
    ToolUrls,
    count_failed_try,
    post_registration,
    read_configuration,
    registration_request,
    store,
    usable_link,
)
from ..metrics import instruments
from ..models.lti import ACTIVE, DISABLED, PENDING
from ..outbound.http import CallSlots, OutboundBusy, outbound_policy
from .lti import public_url

blp = Blueprint("lti_registration", __name__, url_prefix="/lti")
log = logging.getLogger(__name__)
TOKEN_LENGTH = 4096  # a registration token is a JWT at most platforms: generous, but bounded
# The failed tries a link may have before the last one, over any link's lifetime (at most 30 days).
SLOTS = "gradquiz.registration_slots"


def init_registration_slots(app: Flask) -> None:
    app.extensions[SLOTS] = CallSlots(app.config["SETTINGS"].outbound_web_calls)


def _settings() -> Settings:
    return current_app.config["SETTINGS"]


@blp.route("/register")
@writes_on_get
def register() -> Response:
    """Register the LMS that opened this URL, as an admin's registration link allows once."""
    session = db_session()
    settings = _settings()
    try:
        link_id = usable_link(session, request.args.get("code")).id
        session.rollback()  # read only so far: no transaction stays open through the LMS's answers
        config_url, token = request.args.get("openid_configuration", ""), request.args.get("registration_token")
        if not config_url:
            raise RegistrationRefused(400, "Not a registration request",
                                      "Paste this link into the LMS's tool registration (LTI Advantage, "
                                      "Dynamic Registration): the LMS opens it with its openid_configuration.")
        if token is not None and not 0 < len(token) <= TOKEN_LENGTH:
            raise RegistrationRefused(400, "Not a registration request", "The registration_token is empty or too long.")
        policy = outbound_policy(settings)
        tool = ToolUrls(public_url("lti.login"), public_url("lti.launch"), public_url("lti.jwks"))
        try:
            with current_app.extensions[SLOTS].hold():
                config = read_configuration(config_url, token, policy=policy,
                                            https_only=settings.env == "production")
                registered = post_registration(config, registration_request(config, tool), token, policy=policy)
        except OutboundBusy:
            raise RegistrationRefused(503, "gradquiz is busy with other registrations",
                                      "Too many registrations are waiting on their LMSs' answers right now: try "
                                      "again in a moment.", retry_after=math.ceil(policy.deadline_seconds)) from None
        stored = store(session, link_id, config, registered, approval=settings.lti_registration_approval)
        session.commit()
    except RegistrationRefused as refused:
        session.rollback()
        if refused.step is not None:
            _failed_try(link_id, refused)
        return _refused(refused)
    log.info("LTI platform %d %s itself through registration link %d (issuer %s, client id %s)",
             stored.platform.id, "registered" if stored.created else "registered again", link_id,
             config.issuer, registered.client_id)
    return _registered(stored, config, registered, config_url)


def _failed_try(link_id: int, refused: RegistrationRefused) -> None:
    """Log and count a failed try of the link; its last uses the link up."""
    log.warning("LTI registration through link %d failed: the LMS's %s, %s", link_id, refused.step, refused.reason)
    instruments().registration_failures.labels(refused.step, refused.reason).inc()
    session = db_session()
    used_up = count_failed_try(session, link_id)
    session.commit()
    if used_up:
        log.warning("LTI registration link %d is used up after %d failed tries", link_id, MAX_FAILED_TRIES)


def _wants_page() -> bool:
    return request.accept_mimetypes.accept_html


def _page(status: int, context: dict[str, Any]) -> Response:
    nonce = secrets.token_urlsafe(16)
    response = Response(render_template("lti/registration.html", csp_nonce=nonce, **context), status=status)
    response.headers["Content-Security-Policy"] = "; ".join([
        "default-src 'none'", f"script-src 'nonce-{nonce}'", f"style-src 'nonce-{nonce}'", "base-uri 'none'",
        "form-action 'none'", "object-src 'none'"])
    response.headers["Referrer-Policy"] = "no-referrer"  # the code is in this page's address
    response.headers["Cache-Control"] = "no-store"
    return response


def _refused(refused: RegistrationRefused) -> Response:
    headers = {"Retry-After": str(refused.retry_after)} if refused.retry_after is not None else {}
    if not _wants_page():
        return problem_response(refused.status, refused.title, refused.detail, headers=headers)
    page = _page(refused.status, {"outcome": "refused", "title": refused.title, "detail": refused.detail,
                                  "facts": [], "close_origins": None})
    page.headers.update(headers)
    return page


def _registered(stored: Stored, config: PlatformConfiguration, registered: Registered, config_url: str) -> Response:
    platform = stored.platform
    pending = platform.status == PENDING
    if platform.status == DISABLED:  # registered again, but an admin had disabled it: it stays so
        title, detail = ("gradquiz's registration is updated, but disabled",
                         "An administrator of gradquiz disabled this LMS: its launches are refused. Ask them why.")
    elif pending:
        title, detail = ("gradquiz is registered, waiting for approval",
                         "An administrator of gradquiz approves this LMS before its first launch. "
                         "Ask them to approve it in the dashboard (LTI platforms).")
    else:
        title = "gradquiz is registered" if stored.created else "gradquiz's registration is updated"
        detail = "Instructors can add gradquiz exercises to their courses."
    if not platform.deployment_ids:
        detail += (" The LMS named no deployment: launches are refused until an administrator of gradquiz adds "
                   "the deployment id the LMS shows for this tool.")
    if not _wants_page():
        answer = jsonify({"platform": platform.id, "status": platform.status, "issuer": platform.issuer,
                          "client_id": platform.client_id, "deployment_ids": platform.deployment_ids})
        answer.status_code = 201 if stored.created else 200
        return answer
    facts = [("LMS", platform.name), ("Issuer", platform.issuer), ("Client id", registered.client_id),
             ("Deployment", registered.deployment_id or "none named"),
             ("Status", "waiting for approval" if pending else platform.status)]
    origins = [origin_of(url) for url in (config_url, config.issuer, config.authorization_endpoint)]
    return _page(201 if stored.created else 200, {
        "outcome": "registered" if platform.status == ACTIVE else "pending", "title": title, "detail": detail, "facts": facts,
        "close_origins": sorted({origin for origin in origins if origin})})
