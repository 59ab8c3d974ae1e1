"""The learner's pages: the lessons at /learn (the first) and /learn/{folder} (the others, such as
/learn/beyond), and one page per exercise at /learn/{slug}.

The pages are clients of the public API and nothing else: what they do, any frontend can do.
The server sends the exercise's detail (the JSON of GET /api/v1/exercises/{slug}: the learner's
own variant when a launch names the learner, else the shared one) inside the page, and the page's
script (which asks the API for the signed-in learner's variant when the shared one came and the
exercise varies per learner) (frontend/src/learn/, bundled into service/static/vendor/learn/)
renders it, runs code (POST /api/v1/runs) and submits attempts (POST .../attempts) with a learner
token. The token comes from an LTI launch (`render_exercise_page(slug, launch=...)` embeds it in a
JSON block), from the address's fragment (`#token=...`, never sent to a server), or from the
tab's sessionStorage; it is never in a URL a server sees.

The pages have the dashboard's Content-Security-Policy (own origin only, no inline script) except
that an LMS or a frontend may show them in a frame (`frame-ancestors`, LEARN_FRAME_ANCESTORS).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, render_template

from ..auth import read_token
from ..extensions import db_session
from ..learner_tokens import LearnerScope
from ..resources.exercises import AskedLearner, learner_detail, shared_detail_json
from ..services.attempts import ExerciseNotFound, published_exercise
from ..services.exercise_access import CATALOG_ONLY, ExerciseAudience, token_audience
from .lesson import Way, exercise_way, lesson_at, render_lesson_page
from .pages import API_BASE, page_response

blp = Blueprint("learn", __name__)


def _launch_scope(launch: dict | None) -> LearnerScope | None:
    token = (launch or {}).get("token")
    return read_token(token) if isinstance(token, str) else None


def _exercise_detail(slug: str, scope: LearnerScope | None, audience: ExerciseAudience) -> dict[str, Any]:
    # The public API's own detail, so the page shows exactly what GET /api/v1/exercises/{slug}
    # answers: with a launch's valid token for this exercise, what it answers that token (the
    # learner's variant, never kept in the shared cache); else the shared detail (and its cache).
    if scope is not None and scope.allows(slug):
        return learner_detail(slug, AskedLearner(scope.client_id, scope.learner, scope), audience)
    return json.loads(shared_detail_json(slug, audience))


def _launch_way(way: Way, scope: LearnerScope | None) -> Way:
    """A launch's page links only the neighbours its token may answer: an LMS launched this exercise
    (or an assignment's few), and a lesson neighbour beyond them would be a page its learner cannot
    answer, out of the LMS's gradebook; the assignment page (/learn/assignment) is their way on."""
    if scope is None or scope.exercises is None:
        return way
    return replace(way, previous=way.previous if way.previous and scope.allows(way.previous.slug) else None,
                   next=way.next if way.next and scope.allows(way.next.slug) else None, end=None)


LAUNCH_FIELDS = ("token", "expires_in", "expires_at", "exercise", "learner", "role", "api", "refresh", "refresh_url",
                 "assignment")


def render_exercise_page(slug: str, *, launch: dict | None = None) -> Response:
    """The exercise page of `slug`; without a published exercise the caller may see, the shell.

    `launch` is what an LTI launch hands the page: `token` (a learner token), `expires_in` (seconds)
    or `expires_at` (epoch seconds), `exercise`, `learner`, `role`, `api` (the API's base URL) and
    `refresh` (the token refresh URL). It is embedded as JSON in the page (never in a URL), and the
    page is then sent with `Cache-Control: no-store`. A course's own exercise is embedded only for a
    launch of that course (services/exercise_access.py). The page's breadcrumb and its previous and
    next exercise come from the lesson (lesson.exercise_way); a launch's, only those its token may answer.
    """
    scope = _launch_scope(launch)
    audience = CATALOG_ONLY if scope is None else token_audience(db_session(), scope)
    try:
        exercise = published_exercise(db_session(), slug, audience)
    except ExerciseNotFound:
        return shell_page(slug)
    detail = _exercise_detail(exercise.slug, scope, audience)
    handoff = None
    if launch is not None:
        handoff = {key: launch[key] for key in LAUNCH_FIELDS if launch.get(key) is not None}
    html = render_template("learn/exercise.html", exercise=detail, launch=handoff, api_base=API_BASE,
                           way=_launch_way(exercise_way(exercise), scope))
    return page_response(html, private=handoff is not None)


def shell_page(slug: str) -> Response:
    """The page of a slug that is no published exercise this request may see: a 404 saying "not
    found", the same for a slug that does not exist and for a course's own exercise (whose detail
    the server shows no one without a launch of its course). Its script asks the API for
    `exercise_api` with the learner token it holds (the address's fragment, the tab's
    sessionStorage) and shows the exercise if that token may see it."""
    shell = {"slug": slug, "exercise_api": f"{API_BASE}/exercises/{quote(slug, safe='')}", "preview": False}
    html = render_template("learn/shell.html", shell=shell, api_base=API_BASE,
                           message=f"There is no published exercise called “{slug}”.")
    return page_response(html, 404)


def render_preview_page(course_id: int, slug: str, number: int) -> Response:
    """The preview of version `number` of a course's exercise, as its learners would see it, for
    its staff (the dashboard's "Preview as a learner"): a shell whose script reads the staff
    session from the address's fragment (`#token=`, never sent here) and asks `exercise_api` (the
    preview detail, staff only) for the exercise; its attempts go to the detail's `attempts_url`
    and are never counted (resources/preview.py). Nothing about the exercise is in the page."""
    base = f"{API_BASE}/courses/{course_id}/exercises/{quote(slug, safe='')}/versions/{number}/preview"
    shell = {"slug": slug, "exercise_api": base, "preview": True}
    html = render_template("learn/shell.html", shell=shell, api_base=API_BASE, preview=True,
                           message="A preview of a draft, as a learner would see it: its attempts are never counted.")
    return page_response(html, private=True)


def render_assignment_page(*, launch: dict | None = None) -> Response:
    """The page of the assignment a learner token was launched for: its exercises in order, each
    one's status and the assignment's score, read by its script from GET /api/v1/assignment with
    the token; each exercise opens in this tab with the same token (kept in the tab's
    sessionStorage, as on the exercise page). `launch` is what an LTI launch hands over (see
    render_exercise_page), embedded as JSON in the page, then sent with `Cache-Control: no-store`."""
    handoff = None
    if launch is not None:
        handoff = {key: launch[key] for key in LAUNCH_FIELDS if launch.get(key) is not None}
    html = render_template("learn/assignment.html", launch=handoff, api_base=API_BASE)
    return page_response(html, private=handoff is not None)


# The assignment's page: the same for every assignment (the token says which); a static path, so it
# wins over <path:slug> below (no exercise can be called "assignment": the catalog refuses that slug).
@blp.route("/learn/assignment")
def assignment_page() -> Response:
    return render_assignment_page()


# Static parts first (as /learn/assignment): it wins over <path:slug> below; a slug has no slash.
@blp.route("/learn/preview/<int:course_id>/<slug:slug>/<int:number>")
def preview_page(course_id: int, slug: str, number: int) -> Response:
    return render_preview_page(course_id, slug, number)


# <path:>: anything under /learn/ is a page (a 404 page for a slug with a slash), never problem+json.
# A lesson after the first is served at /learn/<its folder> (lesson.toml's followed_by): a slug no
# exercise may take (catalog.loader.RESERVED_SLUGS), so it wins here.
@blp.route("/learn/<path:slug>")
def exercise_page(slug: str) -> Response:
    lesson = lesson_at(slug)
    if lesson is not None:
        return render_lesson_page(lesson)
    return render_exercise_page(slug)


@blp.route("/learn")
def lesson_page() -> Response:
    return render_lesson_page()
