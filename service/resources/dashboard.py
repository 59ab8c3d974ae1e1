"""The grading dashboard: static files at /admin that call the admin API.

Plain HTML, CSS and JavaScript from service/static/admin (no build step, nothing from another
origin). The page holds no data of its own: it signs in with an admin or instructor API key,
kept in the tab's sessionStorage, and calls /api/v1/admin/... with it. A strict
Content-Security-Policy (no inline script, no other origin) keeps learner-supplied text, such
as learner ids, from ever running as code even if a bug put it into markup.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, send_from_directory

STATIC_DIR = Path(__file__).resolve().parent.parent / "static" / "admin"

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

blp = Blueprint("dashboard", __name__, url_prefix="/admin")


def _secure(response: Response, cache_control: str = "no-cache") -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    # The files have no content hash in their names: revalidate every time (ETag makes it cheap),
    # so a deploy never pairs a new page with an old script.
    response.headers["Cache-Control"] = cache_control
    return response


@blp.route("")
@blp.route("/")
def index() -> Response:
    # The page itself is never stored: it is where a new deploy's scripts are named.
    return _secure(send_from_directory(STATIC_DIR, "index.html", max_age=0), "no-cache, no-store, must-revalidate")


@blp.route("/<path:filename>")
def asset(filename: str) -> Response:
    # send_from_directory refuses paths that leave the folder (404).
    return _secure(send_from_directory(STATIC_DIR, filename, max_age=0))
