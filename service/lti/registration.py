"""LTI Dynamic Registration (IMS LTI Dynamic Registration 1.0): an LMS registers the tool itself.

An LMS admin pastes the tool's registration URL into the LMS; the LMS opens it in a frame or a
window with `openid_configuration` (where its OpenID configuration is) and usually a
`registration_token`. The tool reads the configuration, posts its own registration to the LMS's
`registration_endpoint` (with the token as a bearer), gets back its client id and the deployment,
stores the platform as an admin's registration would, and answers with a page that tells the LMS
to close the dialog (postMessage `org.imsglobal.lti.close`).

The registration URL carries a code only an admin can make (`make_link`): the tool cannot tell who
is on the other side, as the registration token is the LMS's, not ours; without the code anybody
could register a platform of their own, launch, and use the graders. A code works once and
expires; it is stored hashed and sits in the URL's query, which the service's access log leaves out.
Failed tries are few (MAX_FAILED_TRIES, counted with the link: count_failed_try).

Whoever holds a code names the URLs the service reads and posts to, so every request follows the
outbound policy (service/outbound/http.py: public addresses only, unless the operator allows a
network; one deadline), and a refusal says which step failed and how (a refused address, no answer
in time, not a valid answer) but never what the other side answered: not its body, nor its status,
nor its JSON, which would make this service a probe of whatever it can reach.

Nothing is written until the LMS has answered the registration; a refusal writes nothing (but for
the link, used up after its last failed try).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import case, select, update
from sqlalchemy.orm import Session

from ..models import LtiPlatform, LtiRegistrationLink
from ..models.base import utcnow
from ..outbound.http import AddressRefused, HttpError, HttpResponse, OutboundPolicy, UnreadableJson, send
from . import claims as c
from .launch import origin_of
from .platforms import find, platform_keys, register

PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
# What the tool asks for: scores and line items (service/lti/passback.py), the course roster (NRPS,
# service/lti/roster.py).
TOOL_SCOPES = (c.SCOPE_LINEITEM, c.SCOPE_SCORE, c.SCOPE_MEMBERSHIPS)
# The id_token claims the tool reads: who launched, and their name (the roster's names at a launch).
# Not e-mail: the tool needs none (an LMS that sends it anyway has it kept with the roster).
TOOL_CLAIMS = ("iss", "sub", "name", "given_name", "family_name")
# Where an instructor picks exercises (Deep Linking), by the names LMSs give them; used only where
# the LMS lists its placements, and only those it lists.
DEEP_LINKING_PLACEMENTS = ("assignment_selection", "link_selection", "ContentArea")
# LMSs' product family codes (the platform configuration's) and how people call them.
PRODUCTS = {"moodle": "Moodle", "canvas": "Canvas", "desire2learn": "Brightspace", "brightspace": "Brightspace",
            "sakai": "Sakai", "blackboard": "Blackboard", "schoology": "Schoology"}
REQUIRED_ENDPOINTS = ("registration_endpoint", "authorization_endpoint", "token_endpoint", "jwks_uri")
NAME_LENGTH = 60  # PlatformSchema's: the name stays editable through the admin API
CODE_BYTES = 24
# What is read of the LMS's configuration and answer (Canvas's lists every placement and variable).
MAX_ANSWER_BYTES = 256 * 1024
# Failed tries of one link (its configuration or registration refused, unreachable or unusable)
# before it is used up: enough to fix a misconfigured LMS and try again, too few to probe with.
MAX_FAILED_TRIES = 5
# The steps that call the LMS, and how one can fail (the labels of the failures' metric).
CONFIGURATION, REGISTRATION = "configuration", "registration"
REFUSED_ADDRESS, NO_ANSWER, INVALID_ANSWER, NOT_ACCEPTED = "refused_address", "no_answer", "invalid_answer", "not_accepted"


class RegistrationRefused(Exception):
    """The registration cannot go on: an HTTP status, a title and what to do, for the LMS admin.
    `step` and `reason` say where a call to the LMS failed (None: no call was made), for the
    log and the metric, and make the refusal a failed try of the link."""

    def __init__(self, status: int, title: str, detail: str, *, step: str | None = None,
                 reason: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail
        self.step, self.reason, self.retry_after = step, reason, retry_after


def _platform_problem(step: str, reason: str, detail: str) -> RegistrationRefused:
    return RegistrationRefused(502, "The LMS's answer cannot be used", detail, step=step, reason=reason)


def _unreachable(step: str, what: str, error: HttpError, policy: OutboundPolicy) -> RegistrationRefused:
    """A call that got no HTTP answer, said without the reason the network gave (refused, reset...)."""
    if isinstance(error, AddressRefused):
        return RegistrationRefused(400 if step == CONFIGURATION else 502, "The LMS's address is refused",
                                   f"The LMS's {what} is not one gradquiz may reach: it must be https:// (in "
                                   "production) and public (not a loopback, private, link-local or metadata "
                                   "address) unless the operator of gradquiz allows its network.",
                                   step=step, reason=REFUSED_ADDRESS)
    return _platform_problem(step, NO_ANSWER, f"The LMS's {what} gave no answer within "
                                              f"{policy.deadline_seconds:g} seconds.")


# -- registration links ------------------------------------------------------------------------


def hash_code(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def make_link(session: Session, label: str, hours: int) -> tuple[LtiRegistrationLink, str]:
    """A new registration link and its code (shown once: only its hash is kept)."""
    code = secrets.token_urlsafe(CODE_BYTES)
    now = utcnow()
    link = LtiRegistrationLink(code_hash=hash_code(code), label=label, created_at=now, failed_tries=0,
                               expires_at=now + timedelta(hours=hours))
    session.add(link)
    session.flush()
    return link, code


def usable_link(session: Session, code: str | None) -> LtiRegistrationLink:
    """The unused, unexpired link of this code."""
    link = session.scalar(select(LtiRegistrationLink).where(LtiRegistrationLink.code_hash == hash_code(code or "")))
    if link is None or link.used_at is not None or link.expires_at <= utcnow():
        raise RegistrationRefused(403, "This registration link does not work",
                                  "The link is unknown, was used already or has expired. Ask the administrator "
                                  "of gradquiz for a new registration link, and paste it into the LMS.")
    return link


def count_failed_try(session: Session, link_id: int) -> bool:
    """Count a failed try of the link, in the session's transaction, in one statement; the
    MAX_FAILED_TRIES-th uses it up (used, with no platform). Whether it did. Stored with the link, so
    every process and every restart counts the same tries."""
    now = utcnow()
    used_up = session.execute(
        update(LtiRegistrationLink).where(LtiRegistrationLink.id == link_id, LtiRegistrationLink.used_at.is_(None))
        .values(failed_tries=LtiRegistrationLink.failed_tries + 1,
                used_at=case((LtiRegistrationLink.failed_tries + 1 >= MAX_FAILED_TRIES, now), else_=None))
        .returning(LtiRegistrationLink.used_at)).scalar_one_or_none()
    return used_up is not None


# -- the platform's OpenID configuration -------------------------------------------------------


@dataclass(frozen=True)
class PlatformConfiguration:
    issuer: str
    registration_endpoint: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    # The LMS's product family code ("moodle", "canvas"...), when it says.
    product: str | None
    # Message type -> the placements the LMS lists for it (empty: none listed); None: it lists no messages.
    messages: dict[str, list[str]] | None
    scopes_supported: list[str] | None
    # Canvas names the account the tool is being installed in.
    account_name: str | None

    def offers(self, message_type: str) -> bool:
        return self.messages is None or message_type in self.messages

    @property
    def display_name(self) -> str:
        """"Moodle at moodle.example.edu", or the issuer's host alone."""
        host = urlsplit(self.issuer).netloc or self.issuer
        product = PRODUCTS.get((self.product or "").lower(), self.product)
        name = f"{product} at {host}" if product else host
        if self.account_name:
            name = f"{self.account_name} ({name})"
        return name[:NAME_LENGTH]


def _http_url(value: Any, what: str, *, https_only: bool) -> str:
    if not isinstance(value, str) or not value or len(value) > 2048 or origin_of(value) is None:
        raise _platform_problem(CONFIGURATION, INVALID_ANSWER, f"The LMS's {what} is missing or is not an http(s) URL.")
    if https_only and not value.startswith("https://"):
        raise _platform_problem(CONFIGURATION, INVALID_ANSWER, f"The LMS's {what} is not an https:// URL.")
    return value


def _json_answer(response: HttpResponse) -> dict[str, Any] | None:
    """The answer's JSON object, or None for any other answer (a status not 2xx, not JSON, too large)."""
    if not response.ok:
        return None
    try:
        return response.json_object()
    except UnreadableJson:
        return None


def _messages(platform: dict[str, Any]) -> dict[str, list[str]] | None:
    """messages_supported: objects {type, placements} as the spec has them; plain type names, as
    some Moodle versions send them ("LtiResourceLink" for LtiResourceLinkRequest) are read too."""
    listed = platform.get("messages_supported")
    if not isinstance(listed, list):
        return None
    messages: dict[str, list[str]] = {}
    for item in listed:
        kind, placements = (item.get("type"), item.get("placements")) if isinstance(item, dict) else (item, None)
        if not isinstance(kind, str):
            continue
        kind = c.RESOURCE_LINK_REQUEST if kind == "LtiResourceLink" else kind
        messages[kind] = [p for p in placements if isinstance(p, str)] if isinstance(placements, list) else []
    return messages


def read_configuration(url: str, registration_token: str | None, *, policy: OutboundPolicy,
                       https_only: bool) -> PlatformConfiguration:
    """The LMS's OpenID configuration, checked: its issuer must be of the URL's origin (as LTI DR
    1.0 asks: the configuration is the issuer's own), and every endpoint the tool needs must be there."""
    url_origin = origin_of(url)
    if url_origin is None or (https_only and not url.startswith("https://")):
        raise RegistrationRefused(400, "Not a registration request",
                                  "openid_configuration must be the " + ("https://" if https_only else "http(s)")
                                  + " URL of the LMS's OpenID configuration.")
    headers = {"Accept": "application/json"}
    if registration_token:  # Canvas asks for it here too
        headers["Authorization"] = f"Bearer {registration_token}"
    try:
        response = send("GET", url, policy, headers=headers, max_bytes=MAX_ANSWER_BYTES)
    except HttpError as exc:
        raise _unreachable(CONFIGURATION, "OpenID configuration URL", exc, policy) from None
    config = _json_answer(response)
    if config is None:
        raise _platform_problem(CONFIGURATION, INVALID_ANSWER,
                                "The LMS's OpenID configuration URL did not answer with an OpenID configuration "
                                f"(a JSON object of at most {MAX_ANSWER_BYTES // 1024} KiB).")
    issuer = config.get("issuer")
    if not isinstance(issuer, str) or len(issuer) > 255 or origin_of(issuer) is None:
        raise _platform_problem(CONFIGURATION, INVALID_ANSWER, "The LMS's OpenID configuration has no issuer "
                                                               "(an http(s) URL of at most 255 characters).")
    if origin_of(issuer) != url_origin:
        raise _platform_problem(CONFIGURATION, INVALID_ANSWER, "The LMS's OpenID configuration names an issuer "
                                f"which is not of the configuration's own origin {url_origin!r}.")
    endpoints = {name: _http_url(config.get(name), name, https_only=https_only) for name in REQUIRED_ENDPOINTS}
    platform = config.get(PLATFORM_CONFIGURATION)
    platform = platform if isinstance(platform, dict) else {}
    product, account = platform.get("product_family_code"), platform.get("https://canvas.instructure.com/lti/account_name")
    scopes = config.get("scopes_supported")
    return PlatformConfiguration(
        issuer=issuer, **endpoints, product=product if isinstance(product, str) and product else None,
        messages=_messages(platform), account_name=account if isinstance(account, str) and account else None,
        scopes_supported=[s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else None)


# -- the tool's registration ------------------------------------------------------------------


@dataclass(frozen=True)
class ToolUrls:
    """The tool as this LMS reaches it."""

    login_url: str
    launch_url: str
    jwks_url: str
    name: str = "gradquiz"


def registration_request(config: PlatformConfiguration, tool: ToolUrls) -> dict[str, Any]:
    """The tool's client registration (OpenID Connect Dynamic Client Registration with the LTI
    tool configuration), asking only for what this LMS says it has when it says."""
    scopes = [s for s in TOOL_SCOPES if config.scopes_supported is None or s in config.scopes_supported]
    messages: list[dict[str, Any]] = [{"type": c.RESOURCE_LINK_REQUEST, "target_link_uri": tool.launch_url,
                                       "label": tool.name}]
    if config.offers(c.DEEP_LINKING_REQUEST):
        picking: dict[str, Any] = {"type": c.DEEP_LINKING_REQUEST, "target_link_uri": tool.launch_url,
                                   "label": f"{tool.name} exercises"}
        listed = (config.messages or {}).get(c.DEEP_LINKING_REQUEST)
        placements = [p for p in DEEP_LINKING_PLACEMENTS if listed and p in listed]
        if placements:
            picking["placements"] = placements
        messages.append(picking)
    tool_configuration: dict[str, Any] = {
        "domain": urlsplit(tool.launch_url).netloc.rpartition("@")[2],
        "target_link_uri": tool.launch_url,
        "description": "PyTorch autograd exercises, graded at once, scores sent to the gradebook.",
        "claims": list(TOOL_CLAIMS),
        "messages": messages,
    }
    if (config.product or "").lower() == "canvas":
        tool_configuration["https://canvas.instructure.com/lti/privacy_level"] = "name_only"  # else Canvas sends no names
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": tool.login_url,
        "redirect_uris": [tool.launch_url],
        "client_name": tool.name,
        "jwks_uri": tool.jwks_url,
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(scopes),
        TOOL_CONFIGURATION: tool_configuration,
    }


@dataclass(frozen=True)
class Registered:
    """What the LMS answered: the tool's client id there, and the deployment it made (if it says)."""

    client_id: str
    deployment_id: str | None


def _identifier(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= 255 else None


def post_registration(config: PlatformConfiguration, body: dict[str, Any], registration_token: str | None,
                      *, policy: OutboundPolicy) -> Registered:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if registration_token:
        headers["Authorization"] = f"Bearer {registration_token}"
    try:
        response = send("POST", config.registration_endpoint, policy, body=json.dumps(body).encode(),
                        headers=headers, max_bytes=MAX_ANSWER_BYTES)
    except HttpError as exc:
        raise _unreachable(REGISTRATION, "registration endpoint", exc, policy) from None
    if not response.ok:
        raise _platform_problem(REGISTRATION, NOT_ACCEPTED, "The LMS did not accept the registration. A registration "
                                "token is good for one registration, for a short while: start the registration "
                                "again from the LMS.")
    answer = _json_answer(response)
    client_id = _identifier(answer.get("client_id")) if answer is not None else None
    if answer is None or client_id is None:
        raise _platform_problem(REGISTRATION, INVALID_ANSWER, "The LMS's registration endpoint did not answer with a "
                                f"registration (a JSON object with a client_id, at most {MAX_ANSWER_BYTES // 1024} KiB).")
    tool = answer.get(TOOL_CONFIGURATION)
    deployment = _identifier(tool.get("deployment_id")) if isinstance(tool, dict) else None
    return Registered(client_id, deployment)


# -- storing the platform -----------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    platform: LtiPlatform
    # False: the LMS registered again an issuer and client id the tool knew (updated in place).
    created: bool


def store(session: Session, link_id: int, config: PlatformConfiguration, registered: Registered,
          *, approval: bool) -> Stored:
    """The platform, new (pending when `approval`) or updated in place if this issuer and client
    id are registered already (its deployments kept, the new one added; its status unchanged),
    and the link used up by it, in the session's transaction."""
    values = {"issuer": config.issuer, "client_id": registered.client_id, "auth_login_url": config.authorization_endpoint,
              "auth_token_url": config.token_endpoint, "jwks_url": config.jwks_uri}
    platform = find(session, config.issuer, registered.client_id)
    created = platform is None
    if platform is None:
        platform = register(session, {**values, "name": config.display_name,
                                      "deployment_ids": [registered.deployment_id] if registered.deployment_id else []},
                            approved=not approval)
    else:
        for name in ("auth_login_url", "auth_token_url", "jwks_url"):
            setattr(platform, name, values[name])
        if registered.deployment_id and registered.deployment_id not in platform.deployment_ids:
            platform.deployment_ids = [*platform.deployment_ids, registered.deployment_id]  # a new list: JSON is saved on change
        session.flush()
        platform_keys.forget(platform.id)
    now = utcnow()
    claimed = session.execute(update(LtiRegistrationLink).where(
        LtiRegistrationLink.id == link_id, LtiRegistrationLink.used_at.is_(None),
        LtiRegistrationLink.expires_at > now).values(used_at=now, platform_id=platform.id))
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        raise RegistrationRefused(409, "This registration link does not work",
                                  "The link was used by another registration a moment ago, or has just expired: ask "
                                  "the administrator of gradquiz for a new registration link.")
    return Stored(platform, created)
