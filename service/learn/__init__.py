"""The learner's pages: the lesson at /learn and one page per exercise at /learn/{slug}.

The pages are clients of the public API and nothing else: what they do, any frontend can do.
The server sends the exercise's public detail (the JSON of GET /api/v1/exercises/{slug}) inside
the page, and the page's script (frontend/src/learn/, bundled into service/static/vendor/learn/)
renders it, runs code (POST /api/v1/runs) and submits attempts (POST .../attempts) with a learner
token. The token comes from an LTI launch (`render_exercise_page(slug, launch=...)` embeds it in a
JSON block), from the address's fragment (`#token=...`, never sent to a server), or from the
tab's sessionStorage; it is never in a URL a server sees.

The pages have the dashboard's Content-Security-Policy (own origin only, no inline script) except
that an LMS or a frontend may show them in a frame (`frame-ancestors`, LEARN_FRAME_ANCESTORS).
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Response, current_app, render_template

from ..extensions import db_session
from ..services.attempts import ExerciseNotFound, published_exercise

blp = Blueprint("learn", __name__)

# Framing: LMSs show tools in iframes, and a frontend may embed the page; the token is never a
# cookie, so a page in a foreign frame acts only with the token that frame handed it.
DEFAULT_FRAME_ANCESTORS = "*"


def content_security_policy() -> str:
    ancestors = current_app.config.get("LEARN_FRAME_ANCESTORS", DEFAULT_FRAME_ANCESTORS)
    return "; ".join([
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        f"frame-ancestors {ancestors}",
    ])


def _page(html: str, status: int = 200, *, private: bool = False) -> Response:
    response = Response(html, status=status, mimetype="text/html")
    response.headers["Content-Security-Policy"] = content_security_policy()
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    # A page that holds a learner token is never stored; the others are revalidated each time.
    response.headers["Cache-Control"] = "no-store" if private else "no-cache"
    return response


def not_found_page(message: str) -> Response:
    return _page(render_template("learn/not_found.html", message=message), 404)


def _exercise_detail(slug: str) -> dict[str, Any]:
    # The public API's own detail (and its per-process cache), so the page shows exactly what
    # GET /api/v1/exercises/{slug} answers.
    from ..resources.exercises import _detail_json

    body = current_app.extensions["gradquiz.exercise_details"].get(slug, lambda: _detail_json(slug))
    return json.loads(body)


API_BASE = "/api/v1"
LAUNCH_FIELDS = ("token", "expires_in", "expires_at", "exercise", "learner", "role", "api", "refresh", "refresh_url")


def render_exercise_page(slug: str, *, launch: dict | None = None) -> Response:
    """The exercise page of `slug`, or a 404 page when no published exercise has it.

    `launch` is what an LTI launch hands the page: `token` (a learner token), `expires_in` (seconds)
    or `expires_at` (epoch seconds), `exercise`, `learner`, `role`, `api` (the API's base URL) and
    `refresh` (the token refresh URL). It is embedded as JSON in the page (never in a URL), and the
    page is then sent with `Cache-Control: no-store`.
    """
    try:
        exercise = published_exercise(db_session(), slug)
    except ExerciseNotFound:
        return not_found_page(f"There is no published exercise called “{slug}”.")
    detail = _exercise_detail(exercise.slug)
    handoff = None
    if launch is not None:
        handoff = {key: launch[key] for key in LAUNCH_FIELDS if launch.get(key) is not None}
    html = render_template("learn/exercise.html", exercise=detail, launch=handoff, api_base=API_BASE)
    return _page(html, private=handoff is not None)


# <path:>: anything under /learn/ is a page (a 404 page for a slug with a slash), never problem+json.
@blp.route("/learn/<path:slug>")
def exercise_page(slug: str) -> Response:
    return render_exercise_page(slug)


@blp.route("/learn")
def lesson_page() -> Response:
    from .lesson import render_lesson_page

    return render_lesson_page()
