"""Per-client rate limits, on the `limits` library (Flask-Limiter's engine).

Checked inside the views, after authentication, so the limit is per client and not per address.
Memory storage counts per web process; set RATE_LIMIT_STORAGE=redis://… to share counts.
"""

from __future__ import annotations

import math
import time

from flask import Flask, current_app
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from .errors import problem_abort


class RateLimits:
    def __init__(self, storage_uri: str) -> None:
        self.limiter = MovingWindowRateLimiter(storage_from_string(storage_uri))

    def check(self, scope: str, rule: str, client_id: int) -> None:
        """Count one request; a 429 problem with Retry-After once the client is over `rule`."""
        limit = parse(rule)
        if self.limiter.hit(limit, scope, str(client_id)):
            return
        reset_at, _remaining = self.limiter.get_window_stats(limit, scope, str(client_id))
        retry_after = max(1, math.ceil(reset_at - time.time()))
        problem_abort(429, f"Too many {scope} requests: at most {rule}. Retry in {retry_after} s.",
                      headers={"Retry-After": str(retry_after)})


def init_rate_limits(app: Flask) -> None:
    app.extensions["gradquiz.rate_limits"] = RateLimits(app.config["SETTINGS"].rate_limit_storage)


def check_rate_limit(scope: str, rule: str, client_id: int) -> None:
    current_app.extensions["gradquiz.rate_limits"].check(scope, rule, client_id)
