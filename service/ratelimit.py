"""Per-caller rate limits on the endpoints that start work: attempts and runs (Flask-Limiter).

The limit is checked after authentication (the decorator sits under `require_client`), so it
counts per caller, never per address: a whole class behind one campus NAT is not one caller. A
caller is an API key, or one learner of an LMS platform when a learner token is used (a
platform's learners share its client). Counts live in RATE_LIMIT_STORAGE: memory:// counts per
web process; redis://… shares them between processes and machines. Should Redis go away, each
process counts in memory until it is back, rather than refusing or failing every submission.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from flask import Flask, Response, current_app, g
from flask_limiter import Limiter, RouteLimit
from flask_limiter.errors import RateLimitExceeded

from .errors import problem_response


def _caller() -> str:
    scope = g.get("learner_scope")
    if scope is not None:
        return f"client:{g.client.id}:learner:{scope.learner}"
    return f"client:{g.client.id}"


# One limiter per process, configured by init_rate_limits (Flask-Limiter's decorators are bound to
# an instance when the views are defined).
limiter = Limiter(key_func=_caller, strategy="moving-window", key_prefix="gradquiz", headers_enabled=False,
                  in_memory_fallback_enabled=True)


def rate_limited(scope: str) -> RouteLimit:
    """Count each call against the setting `<scope>_rate_limit` (e.g. "600/minute")."""
    return limiter.limit(lambda: getattr(current_app.config["SETTINGS"], f"{scope}_rate_limit"), scope=scope,
                         error_message=f"Too many {scope}: at most")


def _too_many_requests(error: RateLimitExceeded) -> Response:
    current = limiter.current_limit
    retry_after = max(1, math.ceil(current.reset_at - time.time())) if current else 1
    return problem_response(429, "Too Many Requests",
                            f"{error.description} {error.limit.limit}. Retry in {retry_after} s.",
                            headers={"Retry-After": str(retry_after)})


def _is_limiters(hook: Callable) -> bool:
    return getattr(hook, "__self__", None) is limiter or (isinstance(hook, partial) and limiter in hook.args)


def init_rate_limits(app: Flask) -> None:
    app.config.setdefault("RATELIMIT_STORAGE_URI", app.config["SETTINGS"].rate_limit_storage)
    limiter.init_app(app)
    # Flask-Limiter also hooks every request of the app, for default and application-wide limits
    # and X-RateLimit headers; this service has neither, and those hooks cost more per request than
    # all of Flask (bench/api_load.py). The decorated views check their limits themselves.
    all_hooks: tuple[dict[Any, list[Any]], ...] = (app.before_request_funcs, app.after_request_funcs,
                                                   app.teardown_request_funcs)
    for hooks in all_hooks:
        hooks[None] = [hook for hook in hooks[None] if not _is_limiters(hook)]
    app.register_error_handler(RateLimitExceeded, _too_many_requests)
