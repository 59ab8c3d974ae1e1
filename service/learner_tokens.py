"""Learner tokens: what an LTI launch hands the frontend so it can use the normal API.

A token is a JWT (HS256, keyed from SECRET_KEY) that speaks for one learner at one exercise,
within the API client of the platform that launched it. It is short-lived (LEARNER_TOKEN_SECONDS)
and never stored: revoking the platform's client revokes its tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

import jwt

TOKEN_ISSUER, TOKEN_AUDIENCE = "gradquiz", "gradquiz-api"
LEARNER, INSTRUCTOR = "learner", "instructor"


@dataclass(frozen=True)
class LearnerScope:
    """What a learner token allows: `learner`'s attempts at `exercise`, in client `client_id`.
    An instructor's token also reads the other learners' attempts at that exercise there."""

    client_id: int
    learner: str
    exercise: str
    role: str
    # The LTI resource link launched: a learner's attempts send their score back to it.
    link_id: int | None

    @property
    def is_instructor(self) -> bool:
        return self.role == INSTRUCTOR


def _token_key(secret_key: str) -> bytes:
    return hmac.new(secret_key.encode(), b"gradquiz learner tokens", hashlib.sha256).digest()


def issue_learner_token(secret_key: str, scope: LearnerScope, lifetime_seconds: int) -> str:
    now = int(time.time())
    return jwt.encode({"iss": TOKEN_ISSUER, "aud": TOKEN_AUDIENCE, "iat": now, "exp": now + lifetime_seconds,
                       "sub": scope.learner, "cid": scope.client_id, "exercise": scope.exercise,
                       "role": scope.role, "link": scope.link_id}, _token_key(secret_key), algorithm="HS256")


def read_learner_token(secret_key: str, token: str) -> LearnerScope | None:
    """The token's scope, or None when it is not a valid, unexpired learner token."""
    try:
        claims = jwt.decode(token, _token_key(secret_key), algorithms=["HS256"], audience=TOKEN_AUDIENCE,
                            issuer=TOKEN_ISSUER, options={"require": ["exp", "iat", "sub", "cid", "exercise", "role"]})
    except jwt.InvalidTokenError:
        return None
    return LearnerScope(client_id=claims["cid"], learner=claims["sub"], exercise=claims["exercise"],
                        role=claims["role"], link_id=claims.get("link"))
