"""For admin clients: the LMS platforms registered for LTI, the tool's keys, and grade passback."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import current_app
from flask.views import MethodView
from sqlalchemy import select

from ..auth import BEARER, require_admin
from ..errors import problem_abort
from ..extensions import db_session
from ..lti import keys, platforms, registration
from ..models import LtiPlatform, LtiRegistrationLink, LtiToolKey, ScorePassback
from ..outbound.runner import resend
from ..schemas.lti import (
    NewRegistrationLinkSchema,
    PassbackSchema,
    PassbacksQuerySchema,
    PlatformSchema,
    PlatformUpdateSchema,
    RegistrationLinkCreateSchema,
    RegistrationLinkSchema,
    ToolKeySchema,
    ToolSchema,
)
from .admin import FORBIDDEN
from .blueprint import Blueprint
from .docs import BIG_ROW_ID, BODY_PROBLEMS, ROW_ID, UNAUTHORIZED, problems
from .lti import public_url
from .pagination import PAGINATION, Query, SelectPage

blp = Blueprint("lti_admin", __name__, url_prefix="/api/v1/admin/lti",
                description="For admin clients only: LMS platforms (LTI 1.3), the tool's keys, grade passback.")
NO_PLATFORM = (404, "No platform with this id")


def _platform(platform_id: int) -> LtiPlatform:
    platform = db_session().get(LtiPlatform, platform_id)
    if platform is None:
        problem_abort(404, "No platform with this id.")
    return platform


@blp.route("/tool")
class Tool(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(200, ToolSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def get(self):
        """The URLs an LMS admin enters when registering this tool."""
        return tool_urls()


def tool_urls() -> dict[str, str]:
    launch = public_url("lti.launch")
    return {"login_url": public_url("lti.login"), "launch_url": launch, "deep_linking_url": launch,
            "jwks_url": public_url("lti.jwks")}


@blp.route("/platforms")
class Platforms(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(200, PlatformSchema(many=True))
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def get(self):
        """Every registered platform, disabled ones included."""
        return db_session().scalars(select(LtiPlatform).order_by(LtiPlatform.id)).all()

    @blp.doc(security=BEARER)
    @require_admin
    @blp.arguments(PlatformSchema)
    @blp.response(201, PlatformSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, *BODY_PROBLEMS, (409, "This issuer and client id are registered already"))
    def post(self, payload):
        """Register a platform with the values from its LTI 1.3 tool registration."""
        session = db_session()
        try:
            platform = platforms.register(session, payload)
        except platforms.PlatformExists as exc:
            problem_abort(409, str(exc))
        session.commit()
        return platform


@blp.route(f"/platforms/<{ROW_ID}:platform_id>")
class PlatformDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(200, PlatformSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, NO_PLATFORM)
    def get(self, platform_id: int):
        """One platform."""
        return _platform(platform_id)

    @blp.doc(security=BEARER)
    @require_admin
    @blp.arguments(PlatformUpdateSchema(partial=True))
    @blp.response(200, PlatformSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, NO_PLATFORM, *BODY_PROBLEMS)
    def patch(self, payload, platform_id: int):
        """Change a platform's name, deployments or URLs (its issuer and client id identify it)."""
        platform = _platform(platform_id)
        platforms.update(platform, payload)
        db_session().commit()
        return platform

    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, NO_PLATFORM)
    def delete(self, platform_id: int):
        """Disable a platform: no more launches, learner tokens or passbacks; attempts stay."""
        platforms.disable(_platform(platform_id))
        db_session().commit()


@blp.route(f"/platforms/<{ROW_ID}:platform_id>/approve")
class ApprovePlatform(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(200, PlatformSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, NO_PLATFORM, (409, "The platform is disabled"))
    def post(self, platform_id: int):
        """Approve a pending platform (one that registered itself while LTI_REGISTRATION_APPROVAL is on):
        its launches work from now on. Approving an active platform changes nothing."""
        platform = _platform(platform_id)
        if platform.disabled_at is not None:
            problem_abort(409, "This platform is disabled: register it again to use it.")
        platforms.approve(platform)
        db_session().commit()
        return platform


@blp.route("/registration-links")
class RegistrationLinks(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(200, RegistrationLinkSchema(many=True))
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def get(self):
        """The registration links made, newest first (their codes are never shown again)."""
        return db_session().scalars(select(LtiRegistrationLink).order_by(LtiRegistrationLink.id.desc())).all()

    @blp.doc(security=BEARER)
    @require_admin
    @blp.arguments(RegistrationLinkCreateSchema)
    @blp.response(201, NewRegistrationLinkSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, *BODY_PROBLEMS)
    def post(self, payload):
        """Make a registration URL for one LMS's admin to paste into the LMS (LTI Dynamic Registration).
        It works once, until it expires; the LMS is active at once, or pending if LTI_REGISTRATION_APPROVAL is on."""
        session = db_session()
        link, code = registration.make_link(session, payload["label"], payload["valid_hours"])
        session.commit()
        return {"id": link.id, "label": link.label, "created_at": link.created_at, "expires_at": link.expires_at,
                "used_at": None, "platform_id": None, "failed_tries": link.failed_tries, "url": registration_url(code)}


def registration_url(code: str) -> str:
    # The code in the query: the access log leaves queries out, and LMSs keep a URL's query when they add theirs.
    return f"{public_url('lti_registration.register')}?{urlencode({'code': code})}"


@blp.route(f"/registration-links/<{ROW_ID}:link_id>")
class RegistrationLinkDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, (404, "No registration link with this id"))
    def delete(self, link_id: int):
        """Withdraw a registration link (a platform it registered stays)."""
        session = db_session()
        link = session.get(LtiRegistrationLink, link_id)
        if link is None:
            problem_abort(404, "No registration link with this id.")
        session.delete(link)
        session.commit()


@blp.route("/keys")
class ToolKeys(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(200, ToolKeySchema(many=True))
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def get(self):
        """The tool's keys, newest last; the unretired one signs."""
        return db_session().scalars(select(LtiToolKey).order_by(LtiToolKey.id)).all()


@blp.route("/keys/rotate")
class RotateKey(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(201, ToolKeySchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def post(self):
        """Make a new signing key; the old one stays in the JWKS for LTI_RETIRED_KEY_SECONDS."""
        return keys.rotate(db_session(), current_app.config["SETTINGS"])


@blp.route("/passbacks")
class Passbacks(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.arguments(PassbacksQuerySchema, location="query")
    @blp.response(200, PassbackSchema(many=True))
    @blp.paginate(SelectPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def get(self, query):
        """Scores sent (or being sent) to LMS gradebooks, newest first, with each one's state."""
        stmt = select(ScorePassback).order_by(ScorePassback.id.desc())
        if "status" in query:
            stmt = stmt.where(ScorePassback.status == query["status"])
        if "attempt" in query:
            stmt = stmt.where(ScorePassback.attempt_id == query["attempt"])
        return Query(db_session(), stmt)


@blp.route(f"/passbacks/<{BIG_ROW_ID}:passback_id>/resend")
class ResendPassback(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(202, PassbackSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, (404, "No passback with this id"))
    def post(self, passback_id: int):
        """Send a passback again (after fixing the platform's registration, say), tries counted afresh."""
        session = db_session()
        passback = session.get(ScorePassback, passback_id)
        if passback is None:
            problem_abort(404, "No passback with this id.")
        resend(session, passback)
        session.commit()
        return passback
