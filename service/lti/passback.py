"""Assignment and Grade Services: a learner's score, sent to the line item of the link they
launched, by the outbound runner (off the request path, retried, kept across restarts).

The score sent is the learner's score at that link under the exercise's policy ("best", the
default, or "latest", set as `score_policy` in exercise.toml), computed when it is sent: a
retry after a newer grade sends the newer score. Access tokens come from the platform's token
endpoint (OAuth2 client credentials with a JWT client assertion signed by the tool's key) and
are cached per platform until shortly before they expire.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from sqlalchemy.orm import Session

from .. import scores
from ..config import Settings
from ..models import Attempt, ScorePassback
from ..outbound.http import HttpError, HttpResponse, send
from ..outbound.runner import Outcome, SendStep
from . import claims as c, keys
from .deep_linking import SCORE_MAXIMUM

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_MARGIN_SECONDS = 60


def learner_score(session: Session, attempt: Attempt, link_id: int) -> float | None:
    """The score that counts for the attempt's learner at this link under the exercise's policy
    (service/scores.py: as the gradebook export and the statistics count it)."""
    policy = scores.policy_of(attempt.exercise.version.spec)
    return session.scalar(scores.score_query(policy, Attempt.client_id == attempt.client_id,
                                             Attempt.learner == attempt.learner, Attempt.lti_link_id == link_id))


def scores_url(lineitem_url: str) -> str:
    """The line item's /scores endpoint (the line item URL may carry a query string)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def _timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class AccessTokens:
    """AGS access tokens per platform registration and scope, fetched with a signed client
    assertion and cached; one fetch at a time, so concurrent passbacks share one token."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, token_url: str, client_id: str, scope: str, assertion: str, timeout: float) -> str:
        with self._lock:
            cached = self._tokens.get((token_url, client_id, scope))
            if cached is not None and cached[1] > time.monotonic():
                return cached[0]
            form = {"grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
                    "client_assertion": assertion, "scope": scope}
            response = send("POST", token_url, body=urlencode(form).encode(), timeout=timeout, headers={
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


class TokenRefused(Exception):
    def __init__(self, response: HttpResponse) -> None:
        super().__init__(f"the platform's token endpoint answered {response.status}: {response.body[:200]!r}")
        self.response = response


access_tokens = AccessTokens()


class ScorePassbacks:
    """The outbound runner's kind for score passbacks."""

    model = ScorePassback

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def prepare(self, session: Session, row: ScorePassback) -> SendStep | Outcome:
        link, attempt = row.link, row.attempt
        platform = link.platform
        if platform.disabled_at is not None:
            return Outcome(False, error="the platform's registration is disabled", permanent=True)
        # A link made with Deep Linking comes with its line item; one added by hand may need
        # one found or made in the course's line item container.
        can_make_lineitem = bool(link.lineitems_url) and c.SCOPE_LINEITEM in link.ags_scopes
        if c.SCOPE_SCORE not in link.ags_scopes or not (link.lineitem_url or can_make_lineitem):
            return Outcome(False, permanent=True, error="the platform's launches grant no line item with the "
                                                        "score scope for this link")
        score = learner_score(session, attempt, link.id)
        if score is None:
            return Outcome(False, permanent=True, error="the learner has no graded attempt at this link")
        body = {"userId": attempt.learner, "scoreGiven": round(score * SCORE_MAXIMUM, 4),
                "scoreMaximum": SCORE_MAXIMUM, "activityProgress": "Completed",
                "gradingProgress": "FullyGraded", "timestamp": _timestamp()}
        # The assertion is signed now (the key is read from the database); it lives 5 minutes.
        assertion = keys.sign(session, self.settings, {"iss": platform.client_id, "sub": platform.client_id,
                                                       "aud": platform.auth_token_url})
        new_lineitem = {"scoreMaximum": SCORE_MAXIMUM, "label": link.exercise.title,
                        "resourceId": link.exercise.slug, "resourceLinkId": link.resource_link_id}
        token_url, client_id = platform.auth_token_url, platform.client_id
        lineitem_url, lineitems_url = link.lineitem_url, link.lineitems_url
        scope = c.SCOPE_SCORE if lineitem_url else f"{c.SCOPE_LINEITEM} {c.SCOPE_SCORE}"
        timeout = self.settings.outbound_timeout_seconds

        def post_score() -> Outcome:
            try:
                token = access_tokens.get(token_url, client_id, scope, assertion, timeout)
                headers = {"Authorization": f"Bearer {token}"}
                if lineitem_url:
                    lineitem = lineitem_url
                else:
                    assert lineitems_url  # prepare() sends only for a link with one or the other
                    lineitem = _find_or_make_lineitem(lineitems_url, new_lineitem, headers, timeout)
                response = send("POST", scores_url(lineitem), body=json.dumps(body).encode(), timeout=timeout,
                                headers={**headers, "Content-Type": c.SCORE_MEDIA_TYPE})
            except TokenRefused as exc:
                return Outcome(False, status_code=exc.response.status, error=str(exc))
            except (HttpError, LineItemRefused) as exc:
                return Outcome(False, error=str(exc))
            if response.status == 401:
                access_tokens.forget(token_url, client_id)  # revoked or expired early: the next try gets a new one
            return Outcome(response.ok, status_code=response.status, values={"sent_score": body},
                           error=None if response.ok else f"the platform answered {response.status}: "
                                                          f"{response.body[:200]!r}")

        return post_score


class LineItemRefused(Exception):
    pass


def _find_or_make_lineitem(lineitems_url: str, new_lineitem: dict[str, Any], headers: dict[str, str],
                           timeout: float) -> str:
    """The line item of this resource link in the container, made if there is none."""
    parts = urlsplit(lineitems_url)
    query = "&".join(filter(None, [parts.query, urlencode({"resource_link_id": new_lineitem["resourceLinkId"]})]))
    found = send("GET", urlunsplit(parts._replace(query=query)), timeout=timeout,
                 headers={**headers, "Accept": c.LINEITEMS_MEDIA_TYPE})
    if found.ok and (items := json.loads(found.body)):
        return items[0]["id"]
    made = send("POST", lineitems_url, body=json.dumps(new_lineitem).encode(), timeout=timeout,
                headers={**headers, "Content-Type": c.LINEITEM_MEDIA_TYPE, "Accept": c.LINEITEM_MEDIA_TYPE})
    if not made.ok:
        raise LineItemRefused(f"the platform refused to make a line item ({made.status}): {made.body[:200]!r}")
    return json.loads(made.body)["id"]
