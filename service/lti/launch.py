"""OIDC third-party login and the launch: every check on the id_token, in one place.

Login (/lti/login) answers the platform's login initiation with a redirect to its
authorization endpoint, carrying a fresh `state` and `nonce`. The state is signed (it names the
platform and the nonce, and expires after STATE_SECONDS), and the launch must come back to the
browser that logged in: the state is bound to it by a cookie (a digest of the state) and, when
the platform offers its storage (`lti_storage_target`, IMS "OIDC Login with LTI Client Side
postMessages"), by the state and nonce kept in the platform's frame, for browsers that block the
cookie of a site in a frame. The launch (/lti/launch) then verifies the id_token completely
before anything is written: signature (RS256, the platform's JWKS), iss, aud, azp, exp/iat, the
nonce (the one this state issued, and never used before), deployment id, message type and LTI
version.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..learner_ids import LEARNER_ID_ERROR, is_learner_id
from ..models import LtiNonce, LtiPlatform
from ..models.base import utcnow
from ..outbound.http import OutboundPolicy
from . import claims as c
from .platforms import UnknownKey, find, platform_keys

STATE_SECONDS = 600
CLOCK_LEEWAY_SECONDS = 60
STATE_COOKIE = "gradquiz_lti_state"
# lti_storage_target: "_parent" or the name of a frame of the platform's page.
STORAGE_TARGET = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
# What the tool keeps in the platform's storage, as the IMS guide's examples name it.
STORAGE_STATE_KEY, STORAGE_NONCE_KEY = "lti_state_", "lti_nonce_"


class LaunchRejected(Exception):
    """The login or launch is refused; the message says why, for the person launching."""


@dataclass(frozen=True)
class Login:
    redirect_url: str
    state: str
    nonce: str
    # What the browser keeps in the state cookie: a digest of the state.
    cookie: str
    # The platform's storage frame (lti_storage_target), when it offered one; and the origin the
    # tool's postMessages are addressed to: its authorization endpoint's.
    storage_target: str | None
    platform_origin: str


@dataclass(frozen=True)
class IssuedState:
    """What a valid state says: the platform that logged in and the nonce this login issued."""

    platform_id: int
    nonce: str


@dataclass(frozen=True)
class StoredState:
    """What the tool's page read back from the platform's storage (lti.get_data) at the launch."""

    state: str
    nonce: str


@dataclass(frozen=True)
class Launch:
    platform: LtiPlatform
    claims: dict[str, Any]

    @property
    def message_type(self) -> str:
        return self.claims[c.MESSAGE_TYPE]

    @property
    def deployment_id(self) -> str:
        return self.claims[c.DEPLOYMENT_ID]

    @property
    def is_instructor(self) -> bool:
        return any(role in c.INSTRUCTOR_ROLES for role in self.claims.get(c.ROLES, []))

    @property
    def custom(self) -> dict[str, Any]:
        custom = self.claims.get(c.CUSTOM)
        return custom if isinstance(custom, dict) else {}


def _serializer(secret_key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt="gradquiz-lti-state")


def cookie_value(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def origin_of(url: str) -> str | None:
    """scheme://host[:port] of an http(s) URL, or None (also for anything a header should not hold)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = parts.netloc.rpartition("@")[2].lower()
    if parts.scheme not in ("http", "https") or not re.fullmatch(r"[a-z0-9.\-\[\]:]+", host or "!"):
        return None
    return f"{parts.scheme}://{host}"


def storage_target(params: dict[str, str]) -> str | None:
    """The login initiation's lti_storage_target, if it is one (anything else: no platform storage)."""
    target = params.get("lti_storage_target")
    return target if target and STORAGE_TARGET.fullmatch(target) else None


def begin_login(session: Session, secret_key: str, params: dict[str, str], redirect_uri: str) -> Login:
    """The redirect answering a platform's login initiation (iss, login_hint, target_link_uri,
    and optionally lti_message_hint, client_id, lti_deployment_id)."""
    for name in ("iss", "login_hint", "target_link_uri"):
        if not params.get(name):
            raise LaunchRejected(f"The login initiation lacks '{name}'.")
    platform = _platform(session, params["iss"], params.get("client_id"))
    deployment = params.get("lti_deployment_id")
    if deployment and deployment not in platform.deployment_ids:
        raise LaunchRejected(f"Deployment {deployment!r} is not registered for this platform.")
    nonce = secrets.token_urlsafe(24)
    state = _serializer(secret_key).dumps({"platform": platform.id, "nonce": nonce})
    platform_origin = origin_of(platform.auth_login_url)
    if platform_origin is None:
        raise LaunchRejected("The platform's authorization URL is not an http(s) URL.")
    query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
             "client_id": platform.client_id, "redirect_uri": redirect_uri, "login_hint": params["login_hint"],
             "state": state, "nonce": nonce}
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    separator = "&" if "?" in platform.auth_login_url else "?"
    return Login(platform.auth_login_url + separator + urlencode(query), state, nonce, cookie_value(state),
                 storage_target(params), platform_origin)


def _platform(session: Session, issuer: str, client_id: str | None) -> LtiPlatform:
    if client_id:
        platform = find(session, issuer, client_id)
    else:  # client_id is optional in the login initiation: fine when the issuer has one registration
        platforms = session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == issuer)).all()
        platform = platforms[0] if len(platforms) == 1 else None
    if platform is None:
        raise LaunchRejected(f"No platform is registered with issuer {issuer!r}"
                             + (f" and client id {client_id!r}." if client_id else "."))
    return usable(platform)


def usable(platform: LtiPlatform | None) -> LtiPlatform:
    """The platform, if it may log in and launch: neither disabled nor waiting for approval."""
    if platform is None or platform.disabled_at is not None:
        raise LaunchRejected("This platform's registration is disabled.")
    if platform.approved_at is None:
        raise LaunchRejected("This LMS registered itself with gradquiz and waits for an administrator of gradquiz "
                             "to approve it (in the dashboard's LTI platforms). Launch again once it is approved.")
    return platform


def read_state(secret_key: str, state: str | None) -> IssuedState:
    """The platform and nonce of a state this tool issued less than STATE_SECONDS ago."""
    if not state:
        raise LaunchRejected("The launch lacks its state.")
    try:
        issued = _serializer(secret_key).loads(state, max_age=STATE_SECONDS)
    except BadData:
        raise LaunchRejected("The launch's state is not one this tool issued, or it expired: launch again.") from None
    return IssuedState(issued["platform"], issued["nonce"])


def bound_by_cookie(state: str, state_cookie: str | None) -> bool:
    return state_cookie is not None and hmac.compare_digest(state_cookie.encode(), cookie_value(state).encode())


def _bound_by_storage(state: str, issued: IssuedState, stored: StoredState | None) -> bool:
    return (stored is not None and hmac.compare_digest(stored.state.encode(), state.encode())
            and hmac.compare_digest(stored.nonce.encode(), issued.nonce.encode()))


def verify_launch(session: Session, secret_key: str, id_token: str | None, state: str | None,
                  state_cookie: str | None, stored: StoredState | None = None, *,
                  policy: OutboundPolicy) -> Launch:
    """Every check on a launch; uses up its nonce (in the session's transaction). Raises
    LaunchRejected, having written nothing, on any failure.

    The launch must come back to the browser that logged in: its state cookie matches, or
    `stored` (what the tool's own page read from the platform's storage; the caller makes sure it
    came from that page) holds this state and its nonce."""
    if not id_token or not state:
        raise LaunchRejected("The launch lacks its id_token or state.")
    issued = read_state(secret_key, state)
    if not bound_by_cookie(state, state_cookie) and not _bound_by_storage(state, issued, stored):
        raise LaunchRejected("The launch did not come back to the browser that started it (neither the state "
                             "cookie nor the LMS's storage holds its state). If the LMS shows the exercise in a "
                             "frame, allow this site's cookies or open it in a new window.")
    platform = usable(session.get(LtiPlatform, issued.platform_id))
    claims = _verified_claims(platform, id_token, policy)
    if not hmac.compare_digest(str(claims["nonce"]), issued.nonce):
        raise LaunchRejected("The id_token's nonce is not the one this login issued.")
    _check_lti_claims(platform, claims)
    _use_nonce(session, platform, claims["nonce"], claims["exp"])
    return Launch(platform, claims)


def _verified_claims(platform: LtiPlatform, id_token: str, policy: OutboundPolicy) -> dict[str, Any]:  # noqa: C901
    try:
        header = jwt.get_unverified_header(id_token)
    except jwt.InvalidTokenError:
        raise LaunchRejected("The id_token is not a JWT.") from None
    if header.get("alg") != "RS256":
        raise LaunchRejected("The id_token must be signed with RS256.")
    if not header.get("kid"):
        raise LaunchRejected("The id_token's header has no kid.")
    try:
        key = platform_keys.key(platform, header["kid"], policy)
    except UnknownKey as exc:
        raise LaunchRejected(f"The id_token's signing key is unknown: {exc}.") from None
    try:
        claims = jwt.decode(id_token, key, algorithms=["RS256"], audience=platform.client_id, issuer=platform.issuer,
                            leeway=CLOCK_LEEWAY_SECONDS, options={"require": ["iss", "aud", "exp", "iat", "nonce", "sub"]})
    except jwt.InvalidSignatureError:
        raise LaunchRejected("The id_token's signature does not verify with the platform's key.") from None
    except jwt.ExpiredSignatureError:
        raise LaunchRejected("The id_token has expired.") from None
    except jwt.InvalidAudienceError:
        raise LaunchRejected(f"The id_token is not for this tool (aud must include {platform.client_id!r}).") from None
    except jwt.InvalidIssuerError:
        raise LaunchRejected("The id_token's issuer is not the platform that logged in.") from None
    except jwt.MissingRequiredClaimError as exc:
        raise LaunchRejected(f"The id_token lacks the {exc.claim!r} claim.") from None
    except jwt.InvalidTokenError as exc:
        raise LaunchRejected(f"The id_token is not valid: {exc}.") from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != platform.client_id:
        raise LaunchRejected("The id_token's azp must be this tool's client id.")
    return claims


def _check_lti_claims(platform: LtiPlatform, claims: dict[str, Any]) -> None:  # noqa: C901
    if claims.get(c.VERSION) != c.LTI_VERSION:
        raise LaunchRejected(f"Only LTI {c.LTI_VERSION} launches are supported.")
    deployment = claims.get(c.DEPLOYMENT_ID)
    if not deployment:
        raise LaunchRejected("The id_token lacks the deployment_id claim.")
    if deployment not in platform.deployment_ids:
        raise LaunchRejected(f"Deployment {deployment!r} is not registered for this platform.")
    if not isinstance(claims.get(c.ROLES), list):
        raise LaunchRejected("The id_token lacks the roles claim.")
    sub = claims["sub"]
    # The learner id of the launch's attempts, as the API takes one (LTI: at most 255 ASCII characters).
    if not isinstance(sub, str) or not is_learner_id(sub):
        raise LaunchRejected(f"The id_token's sub must be a learner id: {LEARNER_ID_ERROR}.")
    message_type = claims.get(c.MESSAGE_TYPE)
    if message_type == c.RESOURCE_LINK_REQUEST:
        link = claims.get(c.RESOURCE_LINK)
        if not isinstance(link, dict) or not link.get("id"):
            raise LaunchRejected("A resource link launch needs the resource_link claim with an id.")
        if not claims.get(c.TARGET_LINK_URI):
            raise LaunchRejected("The id_token lacks the target_link_uri claim.")
    elif message_type == c.DEEP_LINKING_REQUEST:
        settings = claims.get(c.DEEP_LINKING_SETTINGS)
        if not isinstance(settings, dict) or not settings.get("deep_link_return_url"):
            raise LaunchRejected("A deep linking request needs deep_linking_settings with a deep_link_return_url.")
    else:
        raise LaunchRejected(f"Message type {message_type!r} is not supported.")


def spend_nonce(session: Session, platform_id: int, nonce: str, expires_at: datetime) -> bool:
    """Record `nonce` of the platform as used until `expires_at` (rows past theirs go); False if it
    was used already (a replay). Two requests at once: the second waits for the first's commit, then fails."""
    session.execute(delete(LtiNonce).where(LtiNonce.expires_at < utcnow()))
    try:
        with session.begin_nested():
            session.add(LtiNonce(platform_id=platform_id, nonce=nonce[:255], expires_at=expires_at))
    except IntegrityError:
        return False
    return True


def _use_nonce(session: Session, platform: LtiPlatform, nonce: str, expires: int) -> None:
    expires_at = datetime.fromtimestamp(expires, UTC) + timedelta(seconds=CLOCK_LEEWAY_SECONDS)
    if not spend_nonce(session, platform.id, nonce, expires_at):
        raise LaunchRejected("This id_token was already used (a replayed launch): launch again.")
