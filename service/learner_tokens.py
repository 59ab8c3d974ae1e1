"""Learner tokens: what a browser holds to act for one learner through the normal API.

A token is a JWT (HS256, keyed from SECRET_KEY) that speaks for one learner within one API
client, at the exercises it names (or at every exercise). Two things hand them out: an LTI launch
(one exercise and the resource link launched, in the platform's own client) and
`POST /api/v1/learner-tokens`, called by a client's own server with its key, so that a browser
frontend never holds the key. A token is short-lived (LEARNER_TOKEN_SECONDS) and never stored:
revoking the client revokes its tokens.

A token carries the start of its session (`sst`: when the first token of the chain was issued).
`POST /api/v1/learner-tokens/refresh` trades a valid token for a fresh one with the same scope and
session start, until LEARNER_SESSION_MAX_SECONDS after it: a learner who works two hours keeps
the page, and a token copied out of a browser cannot be renewed for ever.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jwt

TOKEN_ISSUER, TOKEN_AUDIENCE = "gradquiz", "gradquiz-api"
LEARNER, INSTRUCTOR = "learner", "instructor"
ROLES = (LEARNER, INSTRUCTOR)
# The most exercises one token names: the token travels in a header (8 KiB is a common limit).
MAX_TOKEN_EXERCISES = 50
_REQUIRED = object()


@dataclass(frozen=True, init=False)
class LearnerScope:
    """What a learner token allows: `learner`'s attempts and runs in client `client_id`, at the
    exercises `exercises` (None: every exercise). An instructor's token (an LTI instructor's
    launch) also reads the other learners' attempts at its exercise there, in its course."""

    client_id: int
    learner: str
    exercises: tuple[str, ...] | None
    role: str
    # The LTI resource link launched: a learner's attempts send their score back to it, and it names
    # the token's course (the link's LTI context), beyond which the token reads nothing
    # (services/attempts.py, token_limits). None: a token with no course (POST /learner-tokens).
    link_id: int | None
    # The course the learner acts in (the link's, or one a client named at POST /learner-tokens):
    # their attempts belong to it, and the token reads nothing of another course.
    course_id: int | None
    # When the session began (Unix time of the first token of the chain); None: now, at issue.
    session_started: int | None

    def __init__(self, client_id: int, learner: str, exercises: Iterable[str] | str | None = _REQUIRED,  # type: ignore[assignment]
                 role: str = LEARNER, link_id: int | None = None, session_started: int | None = None, *,
                 exercise: str | None = None, course_id: int | None = None) -> None:
        # `exercise=` (or a slug in exercises' place) is the one-exercise scope of an LTI launch.
        if exercise is not None:
            if exercises is not _REQUIRED:
                raise TypeError("give exercises or exercise, not both")
            exercises = (exercise,)
        if exercises is _REQUIRED:
            raise TypeError("LearnerScope needs exercises (a list of slugs, or None for every exercise)")
        if isinstance(exercises, str):
            exercises = (exercises,)
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        for name, value in (("client_id", client_id), ("learner", learner),
                            ("exercises", None if exercises is None else tuple(exercises)), ("role", role),
                            ("link_id", link_id), ("course_id", course_id), ("session_started", session_started)):
            object.__setattr__(self, name, value)

    @property
    def is_instructor(self) -> bool:
        return self.role == INSTRUCTOR

    def allows(self, slug: str) -> bool:
        """Whether the token may act at exercise `slug`."""
        return self.exercises is None or slug in self.exercises


@dataclass(frozen=True)
class IssuedToken:
    token: str
    # Unix times: when this token stops working, and when its session does (no renewal after).
    expires_at: int
    session_expires_at: int

    @property
    def expires_in(self) -> int:
        return max(0, self.expires_at - int(time.time()))


class SessionOver(Exception):
    """The token's session is older than the maximum session age: it cannot be renewed."""


def _token_key(secret_key: str) -> bytes:
    return hmac.new(secret_key.encode(), b"gradquiz learner tokens", hashlib.sha256).digest()


def mint_learner_token(secret_key: str, scope: LearnerScope, lifetime_seconds: int,
                       max_session_seconds: int | None = None, *, now: int | None = None) -> IssuedToken:
    """A token for `scope`, valid `lifetime_seconds` but never past the session's end
    (`max_session_seconds` after `scope.session_started`; default: no session limit beyond the
    lifetime). Raises SessionOver when the session has already ended."""
    now = int(time.time()) if now is None else now
    started = now if scope.session_started is None else scope.session_started
    session_ends = started + (max_session_seconds if max_session_seconds is not None else lifetime_seconds)
    expires = min(now + lifetime_seconds, session_ends)
    if expires <= now:
        raise SessionOver("This session is over: it began more than LEARNER_SESSION_MAX_SECONDS ago.")
    claims: dict[str, Any] = {"iss": TOKEN_ISSUER, "aud": TOKEN_AUDIENCE, "iat": now, "exp": expires,
                              "sub": scope.learner, "cid": scope.client_id, "role": scope.role,
                              "exercises": None if scope.exercises is None else list(scope.exercises),
                              "link": scope.link_id, "crs": scope.course_id, "sst": started,
                              # Each token its own: a renewal within the same second is still a new token.
                              "jti": secrets.token_urlsafe(9)}
    token = jwt.encode(claims, _token_key(secret_key), algorithm="HS256")
    return IssuedToken(token, expires, session_ends)


def issue_learner_token(secret_key: str, scope: LearnerScope, lifetime_seconds: int,
                        max_session_seconds: int | None = None) -> str:
    """The token alone (see mint_learner_token)."""
    return mint_learner_token(secret_key, scope, lifetime_seconds, max_session_seconds).token


def _exercises(claims: dict[str, Any]) -> tuple[str, ...] | None | bool:
    """The token's exercises, or False when the claims name none in a valid form. A token
    issued before tokens could name several exercises has `exercise`, one slug."""
    if "exercises" in claims:
        value = claims["exercises"]
        if value is None:
            return None
        if isinstance(value, list) and 0 < len(value) <= MAX_TOKEN_EXERCISES and all(isinstance(s, str) for s in value):
            return tuple(value)
        return False
    value = claims.get("exercise")
    return (value,) if isinstance(value, str) else False


def read_learner_token(secret_key: str, token: str) -> LearnerScope | None:
    """The token's scope, or None when it is not a valid, unexpired learner token."""
    verified = _verify(secret_key, token)
    return None if verified is None else verified[0]


def _verify(secret_key: str, token: str) -> tuple[LearnerScope, int] | None:
    """The token's scope and its `exp`, or None when it is not a valid, unexpired learner token."""
    try:
        claims = jwt.decode(token, _token_key(secret_key), algorithms=["HS256"], audience=TOKEN_AUDIENCE,
                            issuer=TOKEN_ISSUER, options={"require": ["exp", "iat", "sub", "cid", "role"]})
    except jwt.InvalidTokenError:
        return None
    exercises = _exercises(claims)
    link, course, started = claims.get("link"), claims.get("crs"), claims.get("sst", claims["iat"])
    if (exercises is False or claims["role"] not in ROLES or not isinstance(claims["sub"], str)
            or not isinstance(claims["cid"], int) or not isinstance(started, int)
            or not (link is None or isinstance(link, int)) or not (course is None or isinstance(course, int))):
        return None
    scope = LearnerScope(client_id=claims["cid"], learner=claims["sub"], exercises=exercises,  # type: ignore[arg-type]
                         role=claims["role"], link_id=link, session_started=started, course_id=course)
    return scope, int(claims["exp"])


class VerifiedTokens:
    """The learner tokens a web process has verified, each kept until its `exp`: a learner's page
    sends the same token with every request, and PyJWT's parsing and HMAC were part of what a
    learner's history cost beyond an API key's (docs/performance.md). Kept by the token's whole
    text, signature included, so
    only those very bytes, verified under this secret, are found; nothing a token says is trusted
    past its `exp`, as jwt.decode would refuse it then. At most `max_entries` (the active learners
    of a process), then it starts again empty; an invalid token is never kept."""

    def __init__(self, secret_key: str, *, max_entries: int = 2048, clock: Any = time.time) -> None:
        self.secret_key = secret_key
        self.max_entries = max_entries
        self.clock = clock
        self.entries: dict[str, tuple[LearnerScope, int]] = {}

    def read(self, token: str) -> LearnerScope | None:
        """As read_learner_token."""
        entry = self.entries.get(token)
        if entry is None:
            entry = _verify(self.secret_key, token)
            if entry is None:
                return None
            if len(self.entries) >= self.max_entries:
                self.entries = {}
            self.entries[token] = entry
        scope, expires = entry
        if self.clock() >= expires:  # jwt.decode refuses from `exp` on (no leeway)
            self.entries.pop(token, None)
            return None
        return scope
