"""A fake LTI 1.3 platform (an LMS) on localhost, the counterpart the LTI tool is tested against.

It follows LTI 1.3 Core, Deep Linking 2.0, Assignment and Grade Services 2.0 and the IMS Security
Framework with real HTTP, real 2048-bit RSA keys and real RS256 JWTs (PyJWT + cryptography):

* OIDC third-party login: `login_initiation()` builds what the platform sends to the tool's login
  endpoint; `authorize()` plays the authorization endpoint the tool redirects back to.
* `id_token()` builds resource link and deep linking launches, and broken ones for negative tests.
  Custom parameters are expanded as LTI Core's variable substitution has a platform do: a value
  `$Name` becomes `variables[Name]` when the test set one, and stays as written otherwise (a
  variable the platform does not support, or a date the assignment does not have).
* HTTP (`with TestPlatform() as platform:`): GET /jwks, POST /token (client credentials with a JWT
  client assertion), the AGS line item container, line items and score endpoints, and the NRPS
  memberships of each course (GET /courses/<context>/memberships, `rosters`, in pages of
  `members_page_size` with `Link: <...>; rel="next"`; launches carry its claim unless nrps=False).
* `read_deep_linking_response()` verifies the tool's LtiDeepLinkingResponse JWT.
* LTI Dynamic Registration, the platform's side: GET /.well-known/openid-configuration (its OpenID
  configuration, `openid_configuration()`, changed by `openid_configuration_overrides` or replaced by
  the page `openid_configuration_page`) and POST /register, which takes the tool's registration with
  `registration_token` as its bearer, records it in `registrations` and answers with `client_id` and
  `deployment_id`. `registration_url(tool_url)` is the address the LMS opens for its admin;
  for a browser, GET /tool-registration is the LMS admin's page showing it in a frame (as Moodle
  and Canvas do) for `tool_registration_url`, which removes the frame when the tool posts
  org.imsglobal.lti.close (the origins it came from in `window.ltiCloseMessages`).
* For a browser (tests/browser): GET /course/<mode> is a course page showing the tool in a frame,
  as an LMS does, its login initiated by the frame's address; GET /auth is the authorization
  endpoint the tool sends the browser to, answering with a form that posts the launch to the
  tool. The platform's storage ("LTI postMessage Storage": lti.capabilities, lti.put_data,
  lti.get_data, answered only for `tool_origin`) is offered with `lti_storage_target` in mode
  "frame" (a hidden sibling frame, /storage-frame, as Canvas does) or "parent" (the course page
  itself); mode "none" offers none. Each page keeps what it was asked in `window.ltiStorageLog`.

Everything the tool sends is recorded (`token_requests`, `scores`, `rejected`, `jwks_requests`). Scores
are checked as Canvas checks them: one older than the timestamp of the last one accepted for the
line item and user is refused (400), and so is a `submitted_at` in the future; `results` keeps the
last accepted per line item and user, `submissions` the LMS submissions made (Canvas's extension
`https://canvas.instructure.com/lti/submission`: `new_submission`, true unless false).
"""

from __future__ import annotations

import html
import json
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DL_CONTENT_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
DL_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_MEMBERSHIPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SUPPORTED_SCOPES = (SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY, SCOPE_RESULT_READONLY, SCOPE_SCORE, SCOPE_MEMBERSHIPS)
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
MEMBERSHIPS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEM_CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ACTIVITY_PROGRESS = ("Initialized", "Started", "InProgress", "Submitted", "Completed")
GRADING_PROGRESS = ("FullyGraded", "Pending", "PendingManual", "Failed", "NotReady")
DEEP_LINK_DATA = "opaque-data-123"
LEARNER_ROLES = ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]
INSTRUCTOR_ROLES = ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]
LINEITEMS_PATH = "/courses/c1/lineitems"
# The default roster of course c1 (NRPS members): learner-1 is the default launch's sub; the
# platform shares e-mail for some members only.
DEFAULT_ROSTER = (
    {"user_id": "learner-1", "status": "Active", "name": "Ada Lovelace", "given_name": "Ada",
     "family_name": "Lovelace", "email": "ada@example.invalid", "roles": LEARNER_ROLES},
    {"user_id": "learner-2", "status": "Active", "given_name": "Grace", "family_name": "Hopper", "roles": LEARNER_ROLES},
    {"user_id": "learner-3", "status": "Active", "name": "Alan Turing", "email": "alan@example.invalid",
     "roles": LEARNER_ROLES},
    {"user_id": "teacher-1", "status": "Active", "name": "Prof. Emmy Noether", "email": "emmy@example.invalid",
     "roles": INSTRUCTOR_ROLES},
)
STORAGE_FRAME = "lti_storage_frame"
STORAGE_MODES = ("frame", "parent", "none")
_DEFAULT: Any = object()  # "use the default line item" for id_token(lineitem=...)


@dataclass
class AuthResponse:
    """The authorization endpoint's answer: the browser auto-posts `form` ({"id_token", "state"})
    to `redirect_uri`; `nonce` is the one the tool sent (and the id_token carries)."""

    redirect_uri: str
    form: dict[str, str]
    nonce: str


class _Html(str):
    """An HTML page to answer with (the other answers are JSON)."""


class _Reject(Exception):
    """An HTTP error answer with an OAuth-style JSON body {"error", "error_description"}."""

    def __init__(self, status: int, error: str, description: str, headers: dict[str, str] | None = None):
        super().__init__(description)
        self.status, self.error, self.description, self.headers = status, error, description, headers or {}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _media_type(headers: Message) -> str:
    return (headers.get("Content-Type") or "").split(";")[0].strip().lower()


def _json_object(body: bytes) -> dict:
    try:
        parsed = json.loads(body)
    except ValueError as exc:
        raise _Reject(400, "invalid_request", f"body is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise _Reject(400, "invalid_request", "body is not a JSON object")
    return parsed


def _score_problem(score: dict) -> str | None:  # noqa: C901
    """What makes an AGS score invalid, or None."""
    given, maximum = score.get("scoreGiven"), score.get("scoreMaximum")
    if not isinstance(score.get("userId"), str) or not score["userId"]:
        return "userId must be a non-empty string"
    if score.get("activityProgress") not in ACTIVITY_PROGRESS:
        return f"activityProgress {score.get('activityProgress')!r} is not one of {ACTIVITY_PROGRESS}"
    if score.get("gradingProgress") not in GRADING_PROGRESS:
        return f"gradingProgress {score.get('gradingProgress')!r} is not one of {GRADING_PROGRESS}"
    try:
        if datetime.fromisoformat(score["timestamp"]).tzinfo is None:
            return "timestamp has no time zone"
    except (KeyError, TypeError, ValueError):
        return f"timestamp {score.get('timestamp')!r} is not ISO 8601"
    if given is not None and (not _is_number(given) or given < 0):
        return "scoreGiven must be a number >= 0"
    if given is not None and maximum is None:
        return "scoreMaximum must be present when scoreGiven is"
    if maximum is not None and (not _is_number(maximum) or maximum <= 0):
        return "scoreMaximum must be a number > 0"
    if given is not None and given > maximum:
        return f"scoreGiven {given} exceeds scoreMaximum {maximum}"
    if "comment" in score and not isinstance(score["comment"], (str, type(None))):
        return "comment must be a string"
    submitted = [("submission.submittedAt", (score.get("submission") or {}).get("submittedAt")),
                 ("submitted_at", (score.get(CANVAS_SUBMISSION) or {}).get("submitted_at"))]
    for name, value in submitted:
        if value is None:
            continue
        try:
            at = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            return f"{name} {value!r} is not ISO 8601"
        if at.tzinfo is None or at > datetime.now(UTC) + timedelta(minutes=1):  # Canvas's rule
            return f"{name} {value!r} has no time zone or is in the future"
    new_submission = (score.get(CANVAS_SUBMISSION) or {}).get("new_submission", True)
    if not isinstance(new_submission, bool):
        return "new_submission must be a boolean"
    return None


class TestPlatform:
    """A fake LMS on http://127.0.0.1:<free port>; a context manager that runs its HTTP server.

    Attributes tests read or set: `tool_jwks` (callable returning the tool's JWKS), `fail_next_scores`,
    `variables` (substitution variables and their values at the next launches, e.g.
    {"ResourceLink.submission.endDateTime": "2026-05-01T23:59:00.000-04:00"}), `product_family_code`
    (the tool_platform claim's: "canvas" to play Canvas),
    and the records `token_requests`, `scores`, `rejected` (refused AGS requests: method, path,
    status, reason, body, authorization), `lineitems`, `access_tokens` (token -> {"scopes",
    "expires_at"}; clear it to revoke every token) and `jwks_requests`. NRPS: `rosters` (context id ->
    its members as the memberships endpoint sends them; change it for a learner who leaves),
    `members_page_size`, `fail_memberships_page` (that page answers 500) and the record
    `membership_requests` (path, query, accept, authorization). For the course page:
    `tool_login_url` and `tool_origin` (the tool's address as the browser reaches it; the storage
    answers that origin only) and `launch_claims` (the claims /auth puts in the id_token).
    """

    __test__ = False

    def __init__(self, *, client_id: str = "gradquiz-tool", deployment_id: str = "deployment-1") -> None:
        self.client_id, self.deployment_id = client_id, deployment_id
        self.tool_jwks: Callable[[], dict] | None = None
        self.fail_next_scores = 0
        self.variables: dict[str, str] = {}
        self.product_family_code = "gradquiz-tests"
        self.jwks_requests = 0
        self.token_requests: list[dict] = []
        self.scores: list[dict] = []
        # Per (line item, userId): the latest score accepted and its timestamp; and the LMS
        # submissions scores made (Canvas's `new_submission`, true unless sent false).
        self.results: dict[tuple[str, str], dict] = {}
        self.submissions: list[dict] = []
        self.rejected: list[dict] = []
        self.lineitems: list[dict] = []
        self.access_tokens: dict[str, dict] = {}
        self.rosters: dict[str, list[dict]] = {"c1": [dict(member) for member in DEFAULT_ROSTER]}
        self.members_page_size = 2
        self.fail_memberships_page: int | None = None
        self.membership_requests: list[dict] = []
        self.registration_token = "registration-" + secrets.token_urlsafe(16)
        self.registrations: list[dict] = []
        self.openid_configuration_requests: list[dict] = []
        self.openid_configuration_overrides: dict[str, Any] = {}
        self.openid_configuration_page: str | None = None
        self.tool_registration_url: str | None = None
        self._keys: list[tuple[str, rsa.RSAPrivateKey]] = []
        self._used_jtis: set[str] = set()
        self._logins: dict[tuple[str, str | None], dict[str, str]] = {}
        self.tool_login_url: str | None = None
        self.tool_origin: str | None = None
        self.launch_claims: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.rotate_key()

    # -- lifecycle and endpoints --------------------------------------------------------------

    def __enter__(self) -> TestPlatform:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.platform = self
        self.lineitems = [{"id": self.lineitem_url(), "label": "Autograd quiz", "scoreMaximum": 100,
                           "resourceLinkId": "link-1"}]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="lti-platform", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def issuer(self) -> str:
        """"http://127.0.0.1:<port>", the platform's issuer and base URL (once started)."""
        if self._server is None:
            raise RuntimeError("TestPlatform is not started: use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def login_url(self) -> str:
        """The OIDC authorization endpoint the tool redirects the browser to."""
        return self.issuer + "/auth"

    @property
    def token_url(self) -> str:
        return self.issuer + "/token"

    @property
    def jwks_url(self) -> str:
        return self.issuer + "/jwks"

    @property
    def lineitems_url(self) -> str:
        """The AGS line item container of course c1."""
        return self.issuer + LINEITEMS_PATH

    def memberships_url(self, context: str = "c1") -> str:
        """The NRPS memberships of a course (context id): `rosters[context]`."""
        return f"{self.issuer}/courses/{context}/memberships"

    def lineitem_url(self, name: str = "li1") -> str:
        """A line item URL of course c1 ("li1" exists from the start; others once POSTed)."""
        return f"{self.lineitems_url}/{name}"

    def registration(self) -> dict:
        """What an administrator enters in the tool to register this platform."""
        return {"issuer": self.issuer, "client_id": self.client_id, "deployment_ids": [self.deployment_id],
                "auth_login_url": self.login_url, "auth_token_url": self.token_url, "jwks_url": self.jwks_url}

    # -- dynamic registration -----------------------------------------------------------------------

    @property
    def openid_configuration_url(self) -> str:
        return self.issuer + "/.well-known/openid-configuration"

    def registration_url(self, tool_registration_url: str) -> str:
        """What the LMS opens for its admin: the tool's registration URL (its query kept) with
        openid_configuration and registration_token added, as Moodle and Canvas do."""
        query = urllib.parse.urlencode({"openid_configuration": self.openid_configuration_url,
                                        "registration_token": self.registration_token})
        return tool_registration_url + ("&" if "?" in tool_registration_url else "?") + query

    def openid_configuration(self) -> dict:
        """The platform's OpenID configuration (LTI DR 1.0 §3.4), with `openid_configuration_overrides`
        applied (a value None removes the key)."""
        config: dict[str, Any] = {
            "issuer": self.issuer, "authorization_endpoint": self.login_url, "token_endpoint": self.token_url,
            "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256"], "jwks_uri": self.jwks_url,
            "registration_endpoint": self.issuer + "/register", "scopes_supported": ["openid", *SUPPORTED_SCOPES],
            "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"], "claims_supported": ["sub", "iss", "name", "email"],
            "https://purl.imsglobal.org/spec/lti-platform-configuration": {
                "product_family_code": self.product_family_code, "version": "1.0",
                "messages_supported": [{"type": "LtiResourceLinkRequest"},
                                       {"type": "LtiDeepLinkingRequest", "placements": ["ContentArea"]}]},
        }
        for name, value in self.openid_configuration_overrides.items():
            if value is None:
                config.pop(name, None)
            else:
                config[name] = value
        return config

    # -- keys -----------------------------------------------------------------------------------

    def rotate_key(self) -> None:
        """Sign from now on with a new key under a new kid; earlier keys stay in the JWKS."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with self._lock:
            self._keys.append((f"platform-key-{len(self._keys) + 1}-{secrets.token_hex(4)}", key))

    def jwks(self) -> dict:
        """The platform's public JWKS, every key ever used (also served at GET /jwks)."""
        with self._lock:
            keys = list(self._keys)
        return {"keys": [{**jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True),
                          "kid": kid, "alg": "RS256", "use": "sig"} for kid, key in keys]}

    # -- OIDC launch ------------------------------------------------------------------------------

    def login_initiation(self, target_link_uri: str, *, login_hint: str = "user-1",
                         lti_message_hint: str | None = "hint-1", lti_storage_target: str | None = None) -> dict:
        """The third-party-initiated login parameters the platform sends to the tool's login URL
        (lti_message_hint omitted when None; lti_storage_target, the frame of the platform's
        storage, when given). authorize() accepts only hints issued here."""
        params = {"iss": self.issuer, "login_hint": login_hint, "target_link_uri": target_link_uri,
                  "client_id": self.client_id, "lti_deployment_id": self.deployment_id}
        if lti_message_hint is not None:
            params["lti_message_hint"] = lti_message_hint
        if lti_storage_target is not None:
            params["lti_storage_target"] = lti_storage_target
        self._logins[(login_hint, lti_message_hint)] = params
        return params

    def authorize(self, redirect_location: str, **claims: Any) -> AuthResponse:
        """Play the OIDC authorization endpoint for the tool's redirect URL: check the
        authentication request (AssertionError if wrong) and answer with a signed id_token (and
        the login's lti_storage_target, as platforms that offer their storage send it back).

        `claims` go to id_token(); target_link_uri defaults to the one of the login initiation."""
        url = urllib.parse.urlsplit(redirect_location)
        assert f"{url.scheme}://{url.netloc}{url.path}" == self.login_url, \
            f"tool redirected to {redirect_location!r}, not to the platform's {self.login_url}"
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        assert all(len(values) == 1 for values in query.values()), f"repeated parameters in {query}"
        params = {name: values[0] for name, values in query.items()}
        expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
                    "prompt": "none", "client_id": self.client_id}
        for name, value in expected.items():
            assert params.get(name) == value, f"authentication request: {name}={params.get(name)!r}, expected {value!r}"
        for name in ("redirect_uri", "login_hint", "state", "nonce"):
            assert params.get(name), f"authentication request: {name} is missing"
        login = self._logins.get((params["login_hint"], params.get("lti_message_hint")))
        assert login is not None, (f"authentication request: login_hint={params['login_hint']!r}, lti_message_hint="
                                   f"{params.get('lti_message_hint')!r} do not echo a login_initiation()")
        claims.setdefault("target_link_uri", login["target_link_uri"])
        token = self.id_token(nonce=params["nonce"], **claims)
        form = {"id_token": token, "state": params["state"]}
        if login.get("lti_storage_target"):
            form["lti_storage_target"] = login["lti_storage_target"]
        return AuthResponse(params["redirect_uri"], form, params["nonce"])

    def id_token(self, *, nonce: str, message_type: str = "LtiResourceLinkRequest", sub: str = "learner-1",
                 roles: list[str] = LEARNER_ROLES, resource_link_id: str = "link-1",
                 target_link_uri: str = "http://localhost/lti/launch", custom: dict | None = None,
                 lineitem: str | None = _DEFAULT, deep_link_return_url: str | None = None,
                 kid: str | None = None, key: rsa.RSAPrivateKey | None = None, exp_in: int = 300,
                 iat_offset: int = 0, overrides: dict | None = None, remove: tuple[str, ...] = (),
                 nrps: bool = True) -> str:
        """A complete LTI 1.3 id_token, RS256 with the current key (header kid).

        Resource link launches carry resource_link and the AGS endpoint claim (its "lineitem" is
        `lineitem`, the default line item unless given, omitted when None); LtiDeepLinkingRequest
        carries deep_linking_settings instead; both carry the NRPS claim (course c1's memberships)
        unless `nrps` is False. For broken tokens: `key` signs with another key,
        `kid` replaces the header kid, `iat_offset`/`exp_in` move iat and exp, then `overrides`
        sets and `remove` deletes top-level claims (e.g. LTI + "deployment_id")."""
        iat = int(time.time()) + iat_offset
        claims: dict[str, Any] = {
            "iss": self.issuer, "aud": self.client_id, "azp": self.client_id, "sub": sub,
            "exp": iat + exp_in, "iat": iat, "nonce": nonce, "name": f"User {sub}", "email": f"{sub}@example.invalid",
            LTI + "message_type": message_type, LTI + "version": "1.3.0",
            LTI + "deployment_id": self.deployment_id, LTI + "target_link_uri": target_link_uri,
            LTI + "roles": list(roles),
            LTI + "context": {"id": "c1", "label": "DL101", "title": "Deep Learning 101",
                              "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"]},
            LTI + "launch_presentation": {"document_target": "iframe", "return_url": self.issuer + "/return",
                                          "locale": "en"},
            LTI + "tool_platform": {"guid": "test-platform", "name": "Test Platform", "version": "1.0",
                                    "product_family_code": self.product_family_code},
        }
        if nrps:
            claims[NRPS_CLAIM] = {"context_memberships_url": self.memberships_url("c1"), "service_versions": ["2.0"]}
        if custom is not None:
            claims[LTI + "custom"] = self.expand(custom)
        if message_type == "LtiResourceLinkRequest":
            claims[LTI + "resource_link"] = {"id": resource_link_id, "title": "Autograd quiz"}
            endpoint = {"scope": [SCOPE_LINEITEM, SCOPE_RESULT_READONLY, SCOPE_SCORE], "lineitems": self.lineitems_url}
            if lineitem is not None:
                endpoint["lineitem"] = self.lineitem_url() if lineitem is _DEFAULT else lineitem
            claims[AGS_ENDPOINT] = endpoint
        elif message_type == "LtiDeepLinkingRequest":
            claims[DL_SETTINGS] = {
                "deep_link_return_url": deep_link_return_url or self.issuer + "/deep_link_return",
                "accept_types": ["ltiResourceLink"], "accept_presentation_document_targets": ["iframe", "window"],
                "accept_multiple": True, "auto_create": True, "data": DEEP_LINK_DATA}
        claims.update(overrides or {})
        for name in remove:
            del claims[name]
        with self._lock:
            current_kid, current_key = self._keys[-1]
        return jwt.encode(claims, key or current_key, algorithm="RS256",
                          headers={"kid": current_kid if kid is None else kid})

    def expand(self, custom: dict) -> dict:
        """Custom parameters as this platform sends them: each `$Name` value replaced by
        `variables[Name]` if set, else left as written (LTI 1.3 Core, variable substitution)."""
        with self._lock:
            variables = dict(self.variables)
        return {key: variables.get(value[1:], value) if isinstance(value, str) and value.startswith("$") else value
                for key, value in custom.items()}

    # -- tool JWTs --------------------------------------------------------------------------------

    def _verify_tool_jwt(self, token: str, *, audience: str, required: list[str]) -> dict:
        """Claims of a JWT the tool signed (RS256, key chosen by header kid from tool_jwks())."""
        kid = jwt.get_unverified_header(token).get("kid")
        if self.tool_jwks is None:
            raise jwt.InvalidKeyError("tool_jwks is not set")
        jwk = next((k for k in self.tool_jwks().get("keys", []) if kid and k.get("kid") == kid), None)
        if jwk is None:
            raise jwt.InvalidKeyError(f"the tool's JWKS has no key with kid {kid!r}")
        return jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=["RS256"], audience=audience,
                          issuer=self.client_id, leeway=5, options={"require": required})

    def read_deep_linking_response(self, jwt_token: str, *, data: str | None = DEEP_LINK_DATA) -> dict:
        """Verify the tool's LtiDeepLinkingResponse JWT and return its claims; `data` is what the
        request's deep_linking_settings sent (None: nothing to echo). Raises AssertionError or a
        jwt.PyJWTError."""
        claims = self._verify_tool_jwt(jwt_token, audience=self.issuer, required=["iss", "aud", "exp", "iat", "nonce"])
        for name, value in (("message_type", "LtiDeepLinkingResponse"), ("version", "1.3.0"),
                            ("deployment_id", self.deployment_id)):
            assert claims.get(LTI + name) == value, f"{name} is {claims.get(LTI + name)!r}, expected {value!r}"
        if data is not None:
            assert claims.get(DL_DATA) == data, f"data {claims.get(DL_DATA)!r} does not echo {data!r}"
        items = claims.get(DL_CONTENT_ITEMS, [])
        assert isinstance(items, list), "content_items is not an array"
        for item in items:
            assert isinstance(item, dict) and item.get("type") == "ltiResourceLink", f"content item {item!r} not accepted"
            line_item = item.get("lineItem", {"scoreMaximum": 1})
            assert _is_number(line_item.get("scoreMaximum")) and line_item["scoreMaximum"] > 0, \
                f"lineItem {line_item!r} needs scoreMaximum > 0"
        return claims

    # -- HTTP -------------------------------------------------------------------------------------

    def _handle(self, method: str, target: str, headers: Message, body: bytes) -> tuple[int, dict[str, str], Any]:  # noqa: C901
        """Route one request: (status, headers, JSON payload, _Html page or None)."""
        path, _, query = target.partition("?")
        if method == "GET" and (path.startswith("/course/") or path in ("/storage-frame", "/auth")):
            return self._page(path, target)
        if (method, path) == ("GET", "/tool-registration") and self.tool_registration_url:
            return 200, {"Cache-Control": "no-store"}, _Html(self._tool_registration_page())
        try:
            if (method, path) == ("GET", "/jwks"):
                with self._lock:
                    self.jwks_requests += 1
                return 200, {}, self.jwks()
            if (method, path) == ("POST", "/token"):
                return self._token(headers, body)
            if (method, path) == ("GET", "/.well-known/openid-configuration"):
                with self._lock:
                    self.openid_configuration_requests.append({"authorization": headers.get("Authorization")})
                if self.openid_configuration_page is not None:
                    return 200, {}, _Html(self.openid_configuration_page)
                return 200, {}, self.openid_configuration()
            if (method, path) == ("POST", "/register"):
                return self._register_tool(headers, body)
            if path == LINEITEMS_PATH and method == "GET":
                self._check_bearer(headers, SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY)
                filters = {key: values[0] for key, values in urllib.parse.parse_qs(query).items()}
                fields = {"resource_link_id": "resourceLinkId", "resource_id": "resourceId", "tag": "tag"}
                with self._lock:
                    found = [item for item in self.lineitems if all(item.get(fields[key]) == value
                             for key, value in filters.items() if key in fields)]
                return 200, {"Content-Type": LINEITEM_CONTAINER_TYPE}, found
            if path == LINEITEMS_PATH and method == "POST":
                return self._create_lineitem(headers, body)
            if path.startswith(LINEITEMS_PATH + "/"):
                name, _, tail = path[len(LINEITEMS_PATH) + 1:].partition("/")
                if (method, tail) == ("GET", ""):
                    item = self._lineitem(name)
                    self._check_bearer(headers, SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY)
                    return 200, {"Content-Type": LINEITEM_TYPE}, item
                if (method, tail) == ("POST", "scores"):
                    return self._score(name, headers, body)
            if method == "GET" and path.startswith("/courses/") and path.endswith("/memberships"):
                return self._memberships(path.split("/")[2], query, headers)
            raise _Reject(404, "not_found", f"no {method} {path}")
        except _Reject as exc:
            if path != "/token":
                with self._lock:
                    self.rejected.append({"method": method, "path": path, "status": exc.status, "reason": exc.description,
                                          "body": body.decode(errors="replace"),
                                          "authorization": headers.get("Authorization")})
            return exc.status, exc.headers, {"error": exc.error, "error_description": exc.description}

    # -- the browser's side: course page, storage, authorization endpoint --------------------------

    def _page(self, path: str, target: str) -> tuple[int, dict[str, str], Any]:
        page_headers = {"Cache-Control": "no-store"}
        if path == "/auth":
            try:
                auth = self.authorize(self.issuer + target, **self.launch_claims)
            except AssertionError as exc:
                return 400, page_headers, _Html(f"<!doctype html><title>Refused</title><p>{html.escape(str(exc))}")
            fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                             for k, v in auth.form.items())
            return 200, page_headers, _Html(
                f'<!doctype html><title>Signing in</title><form method="post" action="{html.escape(auth.redirect_uri)}">'
                f"{fields}</form><script>document.forms[0].submit()</script>")
        if path == "/storage-frame":
            return 200, page_headers, _Html(f"<!doctype html><title>storage</title>{self._storage_script(None)}")
        mode = path.removeprefix("/course/")
        if mode not in STORAGE_MODES or self.tool_login_url is None:
            return 404, page_headers, _Html("<!doctype html><title>Not found</title><p>No such course page.")
        storage_target = {"frame": STORAGE_FRAME, "parent": "_parent", "none": None}[mode]
        login = self.login_initiation(self.launch_claims.get("target_link_uri", "http://localhost/lti/launch"),
                                      lti_storage_target=storage_target)
        tool = f"{self.tool_login_url}?{urllib.parse.urlencode(login)}"
        parts = ["<!doctype html><html lang=en><title>Deep Learning 101</title>",
                 "<h1>Deep Learning 101: Autograd quiz</h1>",
                 f'<iframe name="tool" title="Autograd quiz" data-src="{html.escape(tool)}" '
                 'style="width:100%;height:720px;border:1px solid #999"></iframe>']
        if mode != "none":
            parts.append(self._storage_script(STORAGE_FRAME if mode == "frame" else "_parent"))
        # The tool is opened once the storage answers (as an LMS would make sure of).
        start_tool = "var tool = document.querySelector('iframe[name=tool]'); tool.src = tool.dataset.src;"
        if mode == "frame":
            parts.append(f'<iframe name="{STORAGE_FRAME}" src="/storage-frame" title="storage" hidden></iframe>'
                         f"<script>document.querySelector('iframe[name={STORAGE_FRAME}]')"
                         f".addEventListener('load', function () {{ {start_tool} }});</script>")
        else:
            parts.append(f"<script>{start_tool}</script>")
        return 200, page_headers, _Html("".join(parts))

    def _tool_registration_page(self) -> str:
        frame = html.escape(self.registration_url(self.tool_registration_url or ""))
        return f"""<!doctype html><html lang=en><title>Register a tool</title><h1>Register an LTI Advantage tool</h1>
<p id="status">Registering…</p>
<iframe id="registration" title="Tool registration" src="{frame}" style="width:100%;height:420px;border:1px solid #999"></iframe>
<script>
window.ltiCloseMessages = [];
window.addEventListener("message", function (event) {{
  if (!event.data || event.data.subject !== "org.imsglobal.lti.close") return;
  window.ltiCloseMessages.push(event.origin);
  var frame = document.getElementById("registration");
  if (frame) frame.remove();
  document.getElementById("status").textContent = "The tool is registered.";
}});
</script>"""

    def _storage_script(self, capabilities_frame: str | None) -> str:
        """The platform's side of LTI postMessage Storage: data kept per origin for the tool's
        origin only. The course page answers lti.capabilities (naming the storage frame, as Canvas
        does); the page holding the data answers lti.put_data and lti.get_data."""
        answers_storage = capabilities_frame in (None, "_parent")
        frame = json.dumps(capabilities_frame if capabilities_frame != "_parent" else None)
        return f"""<script>
(function () {{
  var allowed = {json.dumps(self.tool_origin)}, frame = {frame}, storage = {json.dumps(answers_storage)};
  var store = {{}};
  window.ltiStorageLog = [];
  window.addEventListener("message", function (event) {{
    var data = event.data;
    if (!data || typeof data !== "object" || typeof data.subject !== "string") return;
    window.ltiStorageLog.push({{subject: data.subject, key: data.key, origin: event.origin}});
    var reply = {{subject: data.subject + ".response", message_id: data.message_id}};
    if (data.subject === "lti.capabilities" && {json.dumps(capabilities_frame is not None)}) {{
      var where = frame ? {{frame: frame}} : {{}};
      reply.supported_messages = [{{subject: "lti.capabilities"}}, Object.assign({{subject: "lti.put_data"}}, where),
                                  Object.assign({{subject: "lti.get_data"}}, where)];
    }} else if ((data.subject === "lti.put_data" || data.subject === "lti.get_data") && storage) {{
      if (event.origin !== allowed) {{
        reply.error = {{code: "unauthorized", message: "not this platform's tool"}};
      }} else if (!data.key) {{
        reply.error = {{code: "bad_request", message: "no key"}};
      }} else if (data.subject === "lti.put_data") {{
        if (typeof data.value === "string" && data.value) store[data.key] = data.value; else delete store[data.key];
        reply.key = data.key;
      }} else {{
        reply.key = data.key;
        if (data.key in store) reply.value = store[data.key];
      }}
    }} else {{
      return;
    }}
    event.source.postMessage(reply, event.origin);
  }});
}})();
</script>"""

    def _token(self, headers: Message, body: bytes) -> tuple[int, dict[str, str], Any]:
        """OAuth 2 client credentials grant with a JWT client assertion (RFC 7523, IMS SF §4.1)."""
        record: dict[str, Any] = {"form": None, "claims": None}
        try:
            if _media_type(headers) != "application/x-www-form-urlencoded":
                raise _Reject(400, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
            query = urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
            form = record["form"] = {key: values[0] for key, values in query.items()}
            if any(len(values) > 1 for values in query.values()):
                raise _Reject(400, "invalid_request", "a parameter is repeated")
            if form.get("grant_type") != "client_credentials":
                raise _Reject(400, "unsupported_grant_type", f"grant_type {form.get('grant_type')!r}")
            if form.get("client_assertion_type") != CLIENT_ASSERTION_TYPE or not form.get("client_assertion"):
                raise _Reject(400, "invalid_request", "client_assertion_type / client_assertion missing or wrong")
            try:
                claims = record["claims"] = self._verify_tool_jwt(
                    form["client_assertion"], audience=self.token_url, required=["iss", "sub", "aud", "exp", "iat", "jti"])
                if claims["sub"] != self.client_id:
                    raise jwt.InvalidTokenError(f"sub {claims['sub']!r} is not the client_id")
            except jwt.PyJWTError as exc:
                raise _Reject(401, "invalid_client", f"client assertion: {exc}") from None
            with self._lock:
                replayed = claims["jti"] in self._used_jtis
                self._used_jtis.add(claims["jti"])
            if replayed:
                raise _Reject(401, "invalid_client", f"client assertion jti {claims['jti']!r} was already used")
            granted = [scope for scope in form.get("scope", "").split() if scope in SUPPORTED_SCOPES]
            if not granted:
                raise _Reject(400, "invalid_scope", f"none of the scopes {form.get('scope')!r} is supported")
            token = secrets.token_urlsafe(24)
            with self._lock:
                self.access_tokens[token] = {"scopes": set(granted), "expires_at": time.time() + 3600}
            record.update(status=200, scope=" ".join(granted))
            return 200, {"Cache-Control": "no-store"}, {"access_token": token, "token_type": "Bearer",
                                                        "expires_in": 3600, "scope": " ".join(granted)}
        except _Reject as exc:
            record.update(status=exc.status, error=exc.error, error_description=exc.description)
            raise
        finally:
            with self._lock:
                self.token_requests.append(record)

    def _check_bearer(self, headers: Message, *scopes: str) -> None:
        """Require an unexpired issued access token granting one of `scopes` (RFC 6750)."""
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        with self._lock:
            grant = self.access_tokens.get(token.strip())
        if scheme.lower() != "bearer" or grant is None or grant["expires_at"] < time.time():
            raise _Reject(401, "invalid_token", "missing, unknown or expired access token",
                          {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        if not grant["scopes"] & set(scopes):
            raise _Reject(403, "insufficient_scope", f"the token grants none of {scopes}",
                          {"WWW-Authenticate": 'Bearer error="insufficient_scope"'})

    def _memberships(self, context: str, query: str, headers: Message) -> tuple[int, dict[str, str], Any]:
        """NRPS 2.0 membership container of a course, a page at a time (?limit, at most
        members_page_size; ?page), the next page in `Link: <...>; rel="next"`."""
        with self._lock:
            self.membership_requests.append({"path": f"/courses/{context}/memberships", "query": query,
                                             "accept": headers.get("Accept"),
                                             "authorization": headers.get("Authorization")})
            roster = [dict(member) for member in self.rosters.get(context, ())] if context in self.rosters else None
        self._check_bearer(headers, SCOPE_MEMBERSHIPS)
        if MEMBERSHIPS_TYPE not in (headers.get("Accept") or ""):
            raise _Reject(406, "invalid_request", f"Accept must name {MEMBERSHIPS_TYPE}")
        if roster is None:
            raise _Reject(404, "not_found", f"no course {context!r}")
        params = {key: values[0] for key, values in urllib.parse.parse_qs(query).items()}
        try:
            limit = min(int(params.get("limit", self.members_page_size)), self.members_page_size)
            page = int(params.get("page", 1))
        except ValueError:
            raise _Reject(400, "invalid_request", "limit and page must be integers") from None
        if limit < 1 or page < 1:
            raise _Reject(400, "invalid_request", "limit and page must be at least 1")
        if page == self.fail_memberships_page:
            raise _Reject(500, "server_error", f"injected failure of page {page}")
        start = (page - 1) * limit
        answer = {"Content-Type": MEMBERSHIPS_TYPE}
        if start + limit < len(roster):
            following = urllib.parse.urlencode({"limit": limit, "page": page + 1})
            answer["Link"] = f'<{self.memberships_url(context)}?{following}>; rel="next"'
        return 200, answer, {"id": self.memberships_url(context), "members": roster[start:start + limit],
                             "context": {"id": context, "label": "DL101", "title": "Deep Learning 101"}}

    def _register_tool(self, headers: Message, body: bytes) -> tuple[int, dict[str, str], Any]:
        """LTI DR 1.0 §3.6: the tool's client registration, authorized by the registration token."""
        if (headers.get("Authorization") or "") != f"Bearer {self.registration_token}":
            raise _Reject(401, "invalid_token", "missing or wrong registration token")
        if _media_type(headers) != "application/json":
            raise _Reject(400, "invalid_client_metadata", "Content-Type must be application/json")
        request = _json_object(body)
        tool = request.get("https://purl.imsglobal.org/spec/lti-tool-configuration")
        expected = {"application_type": "web", "token_endpoint_auth_method": "private_key_jwt"}
        problems = [f"{name} must be {value!r}" for name, value in expected.items() if request.get(name) != value]
        if request.get("response_types") != ["id_token"]:
            problems.append("response_types must be ['id_token']")
        if set(request.get("grant_types") or ()) != {"implicit", "client_credentials"}:
            problems.append("grant_types must be implicit and client_credentials")
        for name in ("initiate_login_uri", "jwks_uri", "client_name"):
            if not isinstance(request.get(name), str) or not request[name]:
                problems.append(f"{name} is missing")
        if not isinstance(request.get("redirect_uris"), list) or not request["redirect_uris"]:
            problems.append("redirect_uris is missing")
        if not isinstance(tool, dict) or not all(tool.get(name) for name in ("domain", "target_link_uri", "messages")):
            problems.append("the LTI tool configuration needs domain, target_link_uri and messages")
        if problems:
            raise _Reject(400, "invalid_client_metadata", "; ".join(problems))
        with self._lock:
            self.registrations.append(request)
        answer = {**request, "client_id": self.client_id,
                  "https://purl.imsglobal.org/spec/lti-tool-configuration": {**tool, "deployment_id": self.deployment_id}}
        return 200, {}, answer

    def _lineitem(self, name: str) -> dict:
        with self._lock:
            item = next((item for item in self.lineitems if item["id"] == self.lineitem_url(name)), None)
        if item is None:
            raise _Reject(404, "not_found", f"no line item {name!r}")
        return item

    def _create_lineitem(self, headers: Message, body: bytes) -> tuple[int, dict[str, str], Any]:
        self._check_bearer(headers, SCOPE_LINEITEM)
        if _media_type(headers) != LINEITEM_TYPE:
            raise _Reject(415, "invalid_request", f"Content-Type must be {LINEITEM_TYPE}")
        item = _json_object(body)
        if not isinstance(item.get("label"), str) or not item["label"].strip():
            raise _Reject(400, "invalid_request", "label must be a non-empty string")
        if not _is_number(item.get("scoreMaximum")) or item["scoreMaximum"] <= 0:
            raise _Reject(400, "invalid_request", "scoreMaximum must be a number > 0")
        with self._lock:
            item["id"] = self.lineitem_url(f"li{len(self.lineitems) + 1}")
            self.lineitems.append(item)
        return 201, {"Content-Type": LINEITEM_TYPE, "Location": item["id"]}, item

    def _score(self, name: str, headers: Message, body: bytes) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            inject = self.fail_next_scores > 0
            if inject:
                self.fail_next_scores -= 1
        if inject:
            raise _Reject(500, "server_error", "injected failure")
        item = self._lineitem(name)
        self._check_bearer(headers, SCOPE_SCORE)
        if _media_type(headers) != SCORE_TYPE:
            raise _Reject(415, "invalid_request", f"Content-Type must be {SCORE_TYPE}")
        score = _json_object(body)
        problem = _score_problem(score)
        if problem:
            raise _Reject(400, "invalid_request", problem)
        timestamp = datetime.fromisoformat(score["timestamp"])
        key = (item["id"], score["userId"])
        with self._lock:
            # As Canvas does: the result keeps the score's timestamp, and a score older than it is refused.
            last = self.results.get(key)
            if last is not None and last["timestamp"] > timestamp:
                raise _Reject(400, "invalid_request", f"Provided timestamp of {score['timestamp']} before last "
                                                      f"updated timestamp of {last['timestamp'].isoformat()}")
            ext = score.get(CANVAS_SUBMISSION) or {}
            if ext.get("new_submission", True):  # Canvas's default: every score makes a new submission
                self.submissions.append({"lineitem": item["id"], "userId": score["userId"],
                                         "submitted_at": ext.get("submitted_at")})
            self.results[key] = {"timestamp": timestamp, "score": score}
            self.scores.append({"lineitem": item["id"], "body": score, "authorization": headers.get("Authorization")})
        return 204, {}, None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default listen backlog (5) stalls bursts of concurrent requests by 1 s
    platform: TestPlatform


class _Handler(BaseHTTPRequestHandler):
    """Hands each request to TestPlatform._handle and writes its JSON answer."""

    server: _Server

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def _answer(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, headers, payload = self.server.platform._handle(method, self.path, self.headers, body)
        if isinstance(payload, _Html):
            data = payload.encode()
            headers = {"Content-Type": "text/html; charset=utf-8", **headers}
        else:
            data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None and not isinstance(payload, _Html):
            headers = {"Content-Type": "application/json", **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""
