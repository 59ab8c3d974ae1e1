"""Course staff sessions: what an instructor's LTI launch hands the dashboard instead of a key.

An instructor, teaching assistant or content developer who launches the tool from their course is
signed in to the dashboard for that course alone: a short-lived signed token (HS256, keyed from
SECRET_KEY apart from learner tokens), never stored, that names the course, the platform's API
client and the person. It is sent as `Authorization: Bearer gqs.<jwt>` and read by service/auth.py.
Disabling the platform (its client revoked) ends its sessions; nothing else can, so they are short
(STAFF_SESSION_SECONDS): the instructor launches again.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

import jwt

PREFIX = "gqs."
_ISSUER, _AUDIENCE = "gradquiz", "gradquiz-staff"


@dataclass(frozen=True)
class StaffSession:
    client_id: int
    course_id: int
    # The LTI user id (sub) and the name the launch gave, for the audit trail of what they do.
    user: str
    name: str | None
    expires_at: int


def _key(secret_key: str) -> bytes:
    return hmac.new(secret_key.encode(), b"gradquiz course staff sessions", hashlib.sha256).digest()


def mint_staff_session(secret_key: str, client_id: int, course_id: int, user: str, name: str | None,
                       lifetime_seconds: int) -> tuple[str, StaffSession]:
    now = int(time.time())
    session = StaffSession(client_id, course_id, user, name, now + lifetime_seconds)
    claims = {"iss": _ISSUER, "aud": _AUDIENCE, "iat": now, "exp": session.expires_at, "sub": user, "name": name,
              "cid": client_id, "crs": course_id, "jti": secrets.token_urlsafe(9)}
    return PREFIX + jwt.encode(claims, _key(secret_key), algorithm="HS256"), session


def read_staff_session(secret_key: str, token: str) -> StaffSession | None:
    """The session a `gqs.` token names, or None when it is not valid or has expired."""
    if not token.startswith(PREFIX):
        return None
    try:
        claims = jwt.decode(token[len(PREFIX):], _key(secret_key), algorithms=["HS256"], audience=_AUDIENCE,
                            issuer=_ISSUER, options={"require": ["exp", "iat", "sub", "cid", "crs"]})
    except jwt.InvalidTokenError:
        return None
    name = claims.get("name")
    if (not isinstance(claims["cid"], int) or not isinstance(claims["crs"], int) or not isinstance(claims["sub"], str)
            or not (name is None or isinstance(name, str))):
        return None
    return StaffSession(claims["cid"], claims["crs"], claims["sub"], name, claims["exp"])
