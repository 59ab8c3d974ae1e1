"""Who is calling: API keys (made once, stored hashed) and learner tokens (from LTI launches).

An API key is a client's: an LMS integration, a frontend, an admin. A learner token is handed
out by an LTI launch and speaks for one learner at one exercise, within the API client of the
platform that launched it and the course (LTI context) of the link launched, which every query of
attempts applies (services/attempts.py, token_limits); endpoints a learner may use opt in with
`allow_learner_token`.

A course's staff call the staff (dashboard) API for that course alone, with a course key (`gqc_`,
made by staff, stored hashed) or the short-lived session an instructor's LTI launch opens
(`gqs.`, service/staff_sessions.py); routes behind `require_staff` apply `staff_course_id()`.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import Flask, current_app, g, request
from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from .errors import problem_abort
from .extensions import db_session
from .learner_tokens import LearnerScope, VerifiedTokens
from .models import ApiClient, Course, CourseKey, Role
from .staff_sessions import PREFIX as STAFF_SESSION_PREFIX, read_staff_session
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
    process has seen, kept API_KEY_CACHE_SECONDS: a revoked key stops working within that time;
    and the learner tokens it has verified, each until it expires (VerifiedTokens)."""
    app.extensions["gradquiz.clients"] = TtlCache(app.config["SETTINGS"].api_key_cache_ttl)
    app.extensions["gradquiz.course_keys"] = TtlCache(app.config["SETTINGS"].api_key_cache_ttl)
    app.extensions["gradquiz.learner_tokens"] = VerifiedTokens(app.config["SECRET_KEY"])


def read_token(token: str) -> LearnerScope | None:
    """A learner token's scope (None: not valid, or expired), verified once per process."""
    tokens: VerifiedTokens = current_app.extensions["gradquiz.learner_tokens"]
    return tokens.read(token)


def _client(session: Session, cache_key: str, column: InstrumentedAttribute[Any], value: Any) -> ApiClient | None:
    """The client whose `column` is `value`, from the process's cache when it is on. A cached
    client is detached from every session (its columns loaded): requests of several threads read
    it. (The condition is built on a miss only: a hit needs none.)"""
    cache: TtlCache[str, ApiClient] = current_app.extensions["gradquiz.clients"]
    if not cache.seconds:
        return session.scalar(select(ApiClient).where(column == value))

    def load() -> ApiClient | None:
        client = session.scalar(select(ApiClient).where(column == value))
        if client is not None:
            session.expunge(client)
        return client

    return cache.get(cache_key, load)


COURSE_KEY_PREFIX = "gqc_"


@dataclass(frozen=True)
class CourseStaff:
    """A caller limited to one course's staff work: a course key, or the staff session an
    instructor's LTI launch opened (service/staff_sessions.py)."""

    course_id: int
    # Who acts, for the audit trail (overrides, regrades, rules): the person, or the key's name.
    actor: str
    # "session" (a person, from a launch) or "key".
    via: str
    # When a session ends (Unix time); None for a key.
    expires_at: int | None = None


@dataclass(frozen=True)
class _CourseKeyRow:
    client_id: int
    course_id: int
    name: str


def _course_key(session: Session, key_hash: str) -> _CourseKeyRow | None:
    """The course key with this hash, unrevoked, from the process's cache when it is on
    (API_KEY_CACHE_SECONDS bounds how long a revoked key keeps working, as for API keys)."""
    cache: TtlCache[str, _CourseKeyRow] = current_app.extensions["gradquiz.course_keys"]

    def load() -> _CourseKeyRow | None:
        row = session.execute(select(Course.client_id, CourseKey.course_id, CourseKey.name)
                              .join(Course, Course.id == CourseKey.course_id)
                              .where(CourseKey.key_hash == key_hash, CourseKey.revoked_at.is_(None))).first()
        return None if row is None else _CourseKeyRow(row.client_id, row.course_id, row.name)

    return cache.get(key_hash, load) if cache.seconds else load()


def _caller(session: Session, key: str) -> tuple[ApiClient | None, LearnerScope | None, CourseStaff | None]:
    """Who the presented key or token speaks for, by its kind (its prefix); 401 when it is not valid."""
    scope = course = None
    client: ApiClient | None
    if key.startswith(KEY_PREFIX):
        key_hash = hash_key(key)
        client = _client(session, key_hash, ApiClient.key_hash, key_hash)
    elif key.startswith(COURSE_KEY_PREFIX):
        row = _course_key(session, hash_key(key))
        if row is None:
            problem_abort(401, "The course key is not valid.", headers=INVALID_CREDENTIALS)
        course = CourseStaff(row.course_id, f"course key {row.name!r}", "key")
        client = _client(session, f"id:{row.client_id}", ApiClient.id, row.client_id)
    elif key.startswith(STAFF_SESSION_PREFIX):
        staff = read_staff_session(current_app.config["SECRET_KEY"], key)
        if staff is None:
            problem_abort(401, "The course staff session is not valid or has ended: launch the tool from the "
                               "course again.", headers=INVALID_CREDENTIALS)
        course = CourseStaff(staff.course_id, f"{staff.name or staff.user} (LTI)"[:100], "session", staff.expires_at)
        client = _client(session, f"id:{staff.client_id}", ApiClient.id, staff.client_id)
    else:
        scope = read_token(key)
        if scope is None:
            problem_abort(401, "The API key or learner token is not valid (a learner token lasts "
                               "LEARNER_TOKEN_SECONDS: launch the exercise again).", headers=INVALID_CREDENTIALS)
        client = _client(session, f"id:{scope.client_id}", ApiClient.id, scope.client_id)
    return client, scope, course


def authenticate(session: Session, allow_learner_token: bool = False,
                 allow_course_staff: bool = False) -> tuple[ApiClient, LearnerScope | None, CourseStaff | None]:
    """The calling client, with the learner scope when a learner token was presented and the
    course when a course key or a course staff session was; else a 401 problem (403 where that
    kind of caller may not call). Never logs or echoes the key or token."""
    key = _presented_key()
    if key is None:
        problem_abort(401, "An API key is required: send it as 'Authorization: Bearer <key>'.",
                      headers={"WWW-Authenticate": 'Bearer realm="gradquiz"'})
    client, scope, course = _caller(session, key)
    if client is None or client.revoked_at is not None:
        problem_abort(401, "The API key is not valid.", headers=INVALID_CREDENTIALS)
    if scope is not None and client.is_admin:
        # A learner belongs to one client of learners: an admin's client reads every client's data, so a
        # token of it (issued before an admin key had to name the client) would too.
        problem_abort(401, "This learner token is not valid: it names no client of learners.",
                      headers=INVALID_CREDENTIALS)
    if scope is not None and not allow_learner_token:
        problem_abort(403, "A learner token cannot call this endpoint; it needs an API key.")
    if course is not None and not allow_course_staff:
        problem_abort(403, "A course key or course staff session can call only the staff API of its course.")
    return client, scope, course


def _sign_in(allow_learner_token: bool = False, allow_course_staff: bool = False) -> None:
    g.client, g.learner_scope, g.course_staff = authenticate(db_session(), allow_learner_token, allow_course_staff)
    g.staff_course_id = None if g.course_staff is None else g.course_staff.course_id


def require_client(view: F | None = None, *, allow_learner_token: bool = False,
                   allow_course_staff: bool = False) -> Any:
    """Views behind it run with `g.client` set to the authenticated client, and `g.learner_scope`
    to the learner token's scope (None for an API key)."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _sign_in(allow_learner_token, allow_course_staff)
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate(view) if view is not None else decorate


def require_admin(view: F) -> F:
    """Like require_client, and the client must have the admin role (else 403)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _sign_in()
        if not g.client.is_admin:
            problem_abort(403, "This endpoint is for admin clients only.")
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def require_staff(view: F | None = None, *, every_course: bool = False) -> Any:
    """Like require_client, and the caller must be staff: an instructor or admin key (every
    course), or a course key or course staff session (its course only: `staff_course_id()`).
    `every_course`: the route acts beyond one course (the catalog, a client's rules), so a
    course's staff may not call it (403)."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _sign_in(allow_course_staff=True)
            if g.course_staff is not None:
                if every_course:
                    problem_abort(403, "This endpoint acts beyond one course: it needs an instructor or admin key.")
            elif not g.client.is_staff:
                problem_abort(403, "This endpoint is for instructor and admin clients only.")
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate(view) if view is not None else decorate


def current_client() -> ApiClient:
    return g.client


def learner_scope() -> LearnerScope | None:
    """The learner token's scope, or None when the caller presented an API key."""
    return g.get("learner_scope")


def course_staff() -> CourseStaff | None:
    """The course a course key or course staff session is limited to; None for any other caller."""
    return g.get("course_staff")


def staff_actor() -> str:
    """Who a staff action is recorded as done by: the person or course key, else the client's name."""
    staff = course_staff()
    return staff.actor if staff is not None else current_client().name


def staff_course_id() -> int | None:
    """The one course a staff caller is limited to (a course key, or the staff session an
    instructor's LTI launch opened), or None for an instructor or admin API key, which sees every
    course. Every staff route that reads or changes a course's data applies it."""
    return g.get("staff_course_id")

