"""Per-caller rate limits on the endpoints that start work: attempts and runs (and, per course,
course exercises' proofs: `refuse_past_limit`).

The limit is checked after authentication (the decorator sits under `require_client`), so it
counts per caller, never per address: a whole class behind one campus NAT is not one caller. A
caller is an API key, or one learner of an LMS platform when a learner token is used (a
platform's learners share its client). Limits are moving windows ("600/minute;20/second", parsed
by `limits`). RATE_LIMIT_STORAGE memory:// counts per web process; redis://… shares the counts
between processes and machines (`limits`' Redis moving window). Should Redis go away, each
process counts in memory until it is back, rather than refusing or failing every submission.

Not Flask-Limiter, nor `limits`' own memory storage: that storage starts a new expiry thread every
10 ms under load, and Flask-Limiter hooks every request of the app (the hooks had to be taken out
of Flask's lists). Not for speed: the CPU of a POST under load did not change (docs/performance.md).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app, g
from limits import RateLimitItem, parse_many
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from .errors import problem_abort, problem_response

log = logging.getLogger(__name__)
KEY_PREFIX = "gradquiz"
# After the shared storage fails, each process counts in memory this long before trying it again.
SHARED_RETRY_SECONDS = 10.0


def _caller() -> str:
    scope = g.get("learner_scope")
    if scope is not None:
        return f"client:{g.client.id}:learner:{scope.learner}"
    return f"client:{g.client.id}"


@functools.lru_cache(maxsize=64)
def parsed_limits(text: str) -> tuple[RateLimitItem, ...]:
    return tuple(parse_many(text))


class MemoryWindows:
    """Moving windows in this process: per key, the times of the hits inside its window. A hit
    drops the hits that left the window and is counted if fewer than the limit remain; keys idle
    past their window are swept once a minute. No thread of its own."""

    SWEEP_SECONDS = 60.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._windows: dict[str, tuple[float, deque[float]]] = {}
        self._lock = threading.Lock()
        self._sweep_at = clock() + self.SWEEP_SECONDS

    def hit(self, limit: RateLimitItem, key: str) -> float | None:
        """Count a hit of `key` against `limit`: None if counted, else the seconds until it would be."""
        now, seconds = self.clock(), limit.get_expiry()
        with self._lock:
            entry = self._windows.get(key)
            if entry is None:
                entry = self._windows[key] = (seconds, deque())
            hits = entry[1]
            while hits and hits[0] <= now - seconds:
                hits.popleft()
            if len(hits) >= limit.amount:
                return hits[0] + seconds - now
            hits.append(now)
            if now >= self._sweep_at:
                self._sweep_at = now + self.SWEEP_SECONDS
                self._windows = {k: (s, h) for k, (s, h) in self._windows.items() if h and h[-1] > now - s}
        return None


class SharedWindows:
    """Moving windows in a shared storage (Redis), one round trip a hit."""

    def __init__(self, uri: str) -> None:
        self.limiter = MovingWindowRateLimiter(storage_from_string(uri, wrap_exceptions=True))

    def hit(self, limit: RateLimitItem, identifiers: tuple[str, ...]) -> float | None:
        if self.limiter.hit(limit, *identifiers):
            return None
        return self.limiter.get_window_stats(limit, *identifiers).reset_time - time.time()


@dataclass(frozen=True)
class Exceeded:
    limit: RateLimitItem
    retry_after_seconds: int


class RateLimits:
    """The process's counts: shared ones when RATE_LIMIT_STORAGE names a storage, in memory while
    it fails (tried again every SHARED_RETRY_SECONDS) or when it is memory://."""

    def __init__(self, storage_uri: str) -> None:
        self.memory = MemoryWindows()
        self.shared = None if storage_uri.startswith("memory://") else SharedWindows(storage_uri)
        self.shared_down_until = 0.0

    def exceeded(self, limits: tuple[RateLimitItem, ...], scope: str, caller: str) -> Exceeded | None:
        """Count one call of `caller` at `scope` against each limit; the first one it exceeds."""
        identifiers = (KEY_PREFIX, scope, caller)
        for limit in limits:
            wait = self._hit(limit, identifiers)
            if wait is not None:
                return Exceeded(limit, max(1, math.ceil(wait)))
        return None

    def _hit(self, limit: RateLimitItem, identifiers: tuple[str, ...]) -> float | None:
        if self.shared is not None and time.monotonic() >= self.shared_down_until:
            try:
                return self.shared.hit(limit, identifiers)
            except StorageError as exc:
                self.shared_down_until = time.monotonic() + SHARED_RETRY_SECONDS
                log.warning("rate-limit storage unreachable (%s); counting in this process for %.0f s",
                            type(exc.storage_error).__name__, SHARED_RETRY_SECONDS)
        return self.memory.hit(limit, limit.key_for(*identifiers))


def rate_limited(scope: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Count each call against the setting `<scope>_rate_limit` (e.g. "600/minute"); past it, a 429
    with Retry-After, and the view does not run."""
    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            limits = parsed_limits(getattr(current_app.config["SETTINGS"], f"{scope}_rate_limit"))
            exceeded = current_app.extensions["gradquiz.rate_limits"].exceeded(limits, scope, _caller())
            if exceeded is None:
                return view(*args, **kwargs)
            retry = exceeded.retry_after_seconds
            return problem_response(429, "Too Many Requests",
                                    f"Too many {scope.replace('_', ' ')}: at most {exceeded.limit}. Retry in {retry} s.",
                                    headers={"Retry-After": str(retry)})

        return wrapper

    return decorate


def refuse_past_limit(scope: str, caller: str, hits: int = 1) -> None:
    """Count `hits` calls of `caller` (e.g. "course:7": a limit per course, whoever of it calls)
    against the setting `<scope>_rate_limit`; past it, abort with a 429 and Retry-After."""
    limits = parsed_limits(getattr(current_app.config["SETTINGS"], f"{scope}_rate_limit"))
    rate_limits = current_app.extensions["gradquiz.rate_limits"]
    for _hit in range(hits):
        exceeded = rate_limits.exceeded(limits, scope, caller)
        if exceeded is not None:
            retry = exceeded.retry_after_seconds
            problem_abort(429, f"Too many {scope.replace('_', ' ')}: at most {exceeded.limit}. Retry in {retry} s.",
                          title="Too Many Requests", headers={"Retry-After": str(retry)})


def init_rate_limits(app: Flask) -> None:
    app.extensions["gradquiz.rate_limits"] = RateLimits(app.config["SETTINGS"].rate_limit_storage)
