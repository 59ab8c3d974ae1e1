"""Access tokens for the platform's services (AGS scores and line items, NRPS rosters).

The IMS Security Framework's client credentials grant: the tool posts a JWT client assertion,
signed with its own key, to the platform's token endpoint and gets a bearer token for the scopes
it asks for. Tokens are cached per platform registration and scope until shortly before they
expire; one fetch at a time, so concurrent senders share one token.

A token is fetched in two steps, as the outbound runner works: `token_request` reads what is
needed (the platform, the tool's signing key) in a database session; `TokenRequest.token()`
makes the HTTP call with no session open. A token is a credential: it goes in the
Authorization header of the platform's requests and nowhere else (never a log, error or URL).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from sqlalchemy.orm import Session

from ..config import Settings
from ..models import LtiPlatform
from ..outbound.http import HttpResponse, OutboundPolicy, outbound_policy, send
from . import keys

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_MARGIN_SECONDS = 60


class TokenRefused(Exception):
    """The token endpoint refused: its status and the start of its answer (which never holds a
    token of ours: it gave none)."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__(f"the platform's token endpoint answered {response.status}: {response.body[:200]!r}")
        self.response = response


class AccessTokens:
    """Access tokens per (token endpoint, client id, scope), fetched with a signed client
    assertion and cached until TOKEN_MARGIN_SECONDS before they expire."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, token_url: str, client_id: str, scope: str, assertion: str, policy: OutboundPolicy) -> str:
        with self._lock:
            cached = self._tokens.get((token_url, client_id, scope))
            if cached is not None and cached[1] > time.monotonic():
                return cached[0]
            form = {"grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
                    "client_assertion": assertion, "scope": scope}
            response = send("POST", token_url, policy, body=urlencode(form).encode(), headers={
                "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
            if not response.ok:
                raise TokenRefused(response)
            body = json.loads(response.body)
            lifetime = float(body.get("expires_in", 3600))
            self._tokens[(token_url, client_id, scope)] = (
                body["access_token"], time.monotonic() + max(lifetime - TOKEN_MARGIN_SECONDS, 0))
            return body["access_token"]

    def forget(self, token_url: str, client_id: str) -> None:
        with self._lock:
            for key in [k for k in self._tokens if k[:2] == (token_url, client_id)]:
                del self._tokens[key]


access_tokens = AccessTokens()


@dataclass(frozen=True)
class TokenRequest:
    """What fetching one platform's token for `scope` needs, read in a session; `token()` and
    `forget()` run without one."""

    token_url: str
    client_id: str
    scope: str
    assertion: str
    policy: OutboundPolicy

    def token(self) -> str:
        """The bearer token (cached, or fetched now). Raises TokenRefused, or HttpError when the
        endpoint cannot be reached."""
        return access_tokens.get(self.token_url, self.client_id, self.scope, self.assertion, self.policy)

    def forget(self) -> None:
        """Drop the platform's cached tokens (one was refused: revoked, or expired early)."""
        access_tokens.forget(self.token_url, self.client_id)


def token_request(session: Session, settings: Settings, platform: LtiPlatform, scope: str) -> TokenRequest:
    """The request for a token of `platform` granting `scope` (space-separated scopes). The
    assertion is signed now (the tool's key is read from the database); it lives 5 minutes."""
    assertion = keys.sign(session, settings, {"iss": platform.client_id, "sub": platform.client_id,
                                              "aud": platform.auth_token_url})
    return TokenRequest(platform.auth_token_url, platform.client_id, scope, assertion,
                        outbound_policy(settings))
