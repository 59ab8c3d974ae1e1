"""Who is calling: API keys (made once, stored hashed) and learner tokens (from LTI launches).

An API key is a client's: an LMS integration, a frontend, an admin. A learner token is handed
out by an LTI launch and speaks for one learner at one exercise, within the API client of the
platform that launched it and the course (LTI context) of the link launched, which every query of
attempts applies (services/attempts.py, token_limits); endpoints a learner may use opt in with
`allow_learner_token`.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, current_app, g, request
from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from .errors import problem_abort
from .extensions import db_session
from .learner_tokens import LearnerScope, read_learner_token
from .models import ApiClient, Role
from .ttl_cache import TtlCache

KEY_PREFIX = "gq_"
# The OpenAPI security requirement of every endpoint that takes a key or a learner token as
# `Authorization: Bearer` (the scheme, bearerAuth, is declared in create_app's API_SPEC_OPTIONS).
BEARER: list[dict[str, list[str]]] = [{"bearerAuth": []}]
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


INVALID_CREDENTIALS = {"WWW-Authenticate": 'Bearer realm="gradquiz", error="invalid_token"'}


def init_client_cache(app: Flask) -> None:
    """The clients of the keys (by the key's hash, never the key) and learner tokens each web
    process has seen, kept API_KEY_CACHE_SECONDS: a revoked key stops working within that time."""
    app.extensions["gradquiz.clients"] = TtlCache(app.config["SETTINGS"].api_key_cache_ttl)


def _client(session: Session, cache_key: str, where: ColumnElement[bool]) -> ApiClient | None:
    """The client matching `where`, from the process's cache when it is on. A cached client is
    detached from every session (its columns loaded): requests of several threads read it."""
    cache: TtlCache[str, ApiClient] = current_app.extensions["gradquiz.clients"]
    if not cache.seconds:
        return session.scalar(select(ApiClient).where(where))

    def load() -> ApiClient | None:
        client = session.scalar(select(ApiClient).where(where))
        if client is not None:
            session.expunge(client)
        return client

    return cache.get(cache_key, load)


def authenticate(session: Session, allow_learner_token: bool = False) -> tuple[ApiClient, LearnerScope | None]:
    """The calling client, with the learner scope when a learner token was presented; else a
    401 problem (403 for a learner token where only API keys may call). Never logs or echoes
    the key or token."""
    key = _presented_key()
    if key is None:
        problem_abort(401, "An API key is required: send it as 'Authorization: Bearer <key>'.",
                      headers={"WWW-Authenticate": 'Bearer realm="gradquiz"'})
    scope = None
    if key.startswith(KEY_PREFIX):
        key_hash = hash_key(key)
        client = _client(session, key_hash, ApiClient.key_hash == key_hash)
    else:
        scope = read_learner_token(current_app.config["SECRET_KEY"], key)
        if scope is None:
            problem_abort(401, "The API key or learner token is not valid (a learner token lasts "
                               "LEARNER_TOKEN_SECONDS: launch the exercise again).", headers=INVALID_CREDENTIALS)
        client = _client(session, f"id:{scope.client_id}", ApiClient.id == scope.client_id)
    if client is None or client.revoked_at is not None:
        problem_abort(401, "The API key is not valid.", headers=INVALID_CREDENTIALS)
    if scope is not None and not allow_learner_token:
        problem_abort(403, "A learner token cannot call this endpoint; it needs an API key.")
    return client, scope


def require_client(view: F | None = None, *, allow_learner_token: bool = False) -> Any:
    """Views behind it run with `g.client` set to the authenticated client, and `g.learner_scope`
    to the learner token's scope (None for an API key)."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            g.client, g.learner_scope = authenticate(db_session(), allow_learner_token)
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate(view) if view is not None else decorate


def require_admin(view: F) -> F:
    """Like require_client, and the client must have the admin role (else 403)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.client, g.learner_scope = authenticate(db_session())
        if not g.client.is_admin:
            problem_abort(403, "This endpoint is for admin clients only.")
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def require_staff(view: F) -> F:
    """Like require_client, and the client must be an instructor or an admin (else 403)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.client, g.learner_scope = authenticate(db_session())
        if not g.client.is_staff:
            problem_abort(403, "This endpoint is for instructor and admin clients only.")
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def current_client() -> ApiClient:
    return g.client


def learner_scope() -> LearnerScope | None:
    """The learner token's scope, or None when the caller presented an API key."""
    return g.get("learner_scope")


def staff_course_id() -> int | None:
    """The one course a staff caller is limited to (a course key, or the staff session an
    instructor's LTI launch opened), or None for an instructor or admin API key, which sees every
    course. Every staff route that reads or changes a course's data applies it."""
    return g.get("staff_course_id")

