"""The grading dashboard: static files at /admin that call the admin API.

Plain HTML, CSS and JavaScript modules from service/static/admin (no build step, nothing from
another origin). The page holds no data of its own: it signs in with an admin or instructor API
key, kept in the tab's sessionStorage, and calls /api/v1/admin/... with it. A strict
Content-Security-Policy (no inline script, no other origin) keeps learner-supplied text, such
as learner ids, from ever running as code even if a bug put it into markup.

One module is made here rather than read from the folder: /admin/vocabulary.js, the server's
own names that the page offers as filters and shows as badges (verdicts, statuses, sorts), so
that the page never keeps a copy of them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypeVar

from flask import Blueprint, Response, request, send_from_directory
from werkzeug.wrappers import Response as BaseResponse

from ..models import AttemptStatus
from ..models.attempt import VERDICTS
from ..page_security import secure_page
from ..services import regrades
from ..services.admin_search import DEFAULT_SORT, SORTS

STATIC_DIR = Path(__file__).resolve().parent.parent / "static" / "admin"

blp = Blueprint("dashboard", __name__, url_prefix="/admin")

VOCABULARY = {
    "VERDICTS": list(VERDICTS),
    "STATUSES": [status.value for status in AttemptStatus],
    "REGRADE_STATUSES": [regrades.DRY_RUN, regrades.READY, regrades.APPLYING, regrades.APPLIED],
    "SORTS": list(SORTS),
    "DEFAULT_SORT": DEFAULT_SORT,
}


def vocabulary_module() -> str:
    """The page's ES module of the server's names (JSON is JavaScript)."""
    lines = ["// Made by the server from its own definitions (service/resources/dashboard.py): the page keeps no copy."]
    lines += [f"export const {name} = {json.dumps(value)};" for name, value in VOCABULARY.items()]
    return "\n".join(lines) + "\n"


VOCABULARY_MODULE = vocabulary_module()


R = TypeVar("R", bound=BaseResponse)


def _secure(response: R, cache_control: str = "no-cache") -> R:
    return secure_page(response, cache_control=cache_control)


LAUNCH_BLOCK_ID = "gradquiz-launch"


def course_dashboard_page(handoff: dict, frame_ancestors: list[str]) -> Response:
    """The dashboard as an instructor's LTI launch opens it: the page with what the launch hands it
    (the course staff session, the course, the exercise launched and a token to try it) in a JSON
    block the page reads once; framed only by the platform's origins, never stored."""
    block = json.dumps(handoff).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8").replace(
        "</body>", f'<script type="application/json" id="{LAUNCH_BLOCK_ID}">{block}</script>\n</body>', 1)
    ancestors = " ".join(frame_ancestors) or "'none'"
    return secure_page(Response(page, mimetype="text/html"), cache_control="no-store", frame_ancestors=ancestors)


@blp.route("")
@blp.route("/")
def index() -> BaseResponse:
    # The page itself is never stored: it is where a new deploy's scripts are named.
    return _secure(send_from_directory(STATIC_DIR, "index.html", max_age=0), "no-cache, no-store, must-revalidate")


@blp.route("/vocabulary.js")
def vocabulary() -> BaseResponse:
    response = Response(VOCABULARY_MODULE, mimetype="text/javascript")
    response.set_etag(hashlib.sha256(VOCABULARY_MODULE.encode()).hexdigest())
    return _secure(response.make_conditional(request))


@blp.route("/<path:filename>")
def asset(filename: str) -> BaseResponse:
    # send_from_directory refuses paths that leave the folder (404).
    return _secure(send_from_directory(STATIC_DIR, filename, max_age=0))
