"""API keys: made once, stored hashed, checked on every request that needs one."""

from __future__ import annotations

import functools
import hashlib
import secrets
from typing import Any, Callable, TypeVar

from flask import g, request
from sqlalchemy import select
from sqlalchemy.orm import Session

from .errors import problem_abort
from .extensions import db_session
from .models import ApiClient, Role

KEY_PREFIX = "gq_"
F = TypeVar("F", bound=Callable[..., Any])


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_client(session: Session, name: str, role: Role) -> tuple[ApiClient, str]:
    """A new client and its key; the key itself is returned once and never stored."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    client = ApiClient(name=name, role=role.value, key_hash=hash_key(key), key_prefix=key[:10])
    session.add(client)
    session.flush()
    return client, key


def _presented_key() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


def authenticate(session: Session) -> ApiClient:
    """The calling client, or a 401 problem. Never logs or echoes the key."""
    key = _presented_key()
    if key is None:
        problem_abort(401, "An API key is required: send it as 'Authorization: Bearer <key>'.",
                      headers={"WWW-Authenticate": 'Bearer realm="gradquiz"'})
    client = session.scalar(select(ApiClient).where(ApiClient.key_hash == hash_key(key)))
    if client is None or client.revoked_at is not None:
        problem_abort(401, "The API key is not valid.",
                      headers={"WWW-Authenticate": 'Bearer realm="gradquiz", error="invalid_token"'})
    return client


def require_client(view: F) -> F:
    """Views behind it run with `g.client` set to the authenticated client."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.client = authenticate(db_session())
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def require_admin(view: F) -> F:
    """Like require_client, and the client must have the admin role (else 403)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.client = authenticate(db_session())
        if not g.client.is_admin:
            problem_abort(403, "This endpoint is for admin clients only.")
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def current_client() -> ApiClient:
    return g.client
