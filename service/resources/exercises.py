from __future__ import annotations

import time
from collections.abc import Callable

from flask import Flask, Response, current_app
from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import select

from ..catalog import public_view
from ..errors import problem_abort
from ..extensions import db_session
from ..models import Exercise, ExerciseTopic
from ..schemas.exercises import (
    ExerciseQuerySchema,
    ExerciseSchema,
    ExerciseSummarySchema,
)
from ..services.attempts import ExerciseNotFound, published_exercise
from .docs import problems
from .pagination import PAGINATION, Query, SelectPage

blp = Blueprint("exercises", __name__, url_prefix="/api/v1/exercises",
                description="The catalog: quiz and code exercises. Public, no key needed.")


@blp.route("")
class ExerciseList(MethodView):
    @blp.arguments(ExerciseQuerySchema, location="query")
    @blp.response(200, ExerciseSummarySchema(many=True))
    @blp.paginate(SelectPage, **PAGINATION)
    def get(self, query):
        """List published exercises, easiest first; filter by topic or kind."""
        stmt = select(Exercise).where(Exercise.published.is_(True))
        if "kind" in query:
            stmt = stmt.where(Exercise.kind == query["kind"])
        if "topic" in query:
            stmt = stmt.where(Exercise.id.in_(select(ExerciseTopic.exercise_id).where(ExerciseTopic.topic == query["topic"])))
        return Query(db_session(), stmt.order_by(Exercise.difficulty, Exercise.slug))


class DetailCache:
    """Each published exercise's detail response, kept for a few seconds by each web process.

    The detail is the most read page (a class opens it at once) and changes only on a catalog
    sync or a publish, so a change shows within `seconds` (EXERCISE_CACHE_SECONDS). Unknown slugs
    are never kept: the cache holds at most one entry per published exercise."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.entries: dict[str, tuple[float, bytes]] = {}

    def get(self, slug: str, load: Callable[[], bytes]) -> bytes:
        now = self.clock()
        entry = self.entries.get(slug)
        if entry is not None and entry[0] > now:
            return entry[1]
        body = load()
        if self.seconds:
            self.entries[slug] = (now + self.seconds, body)
        return body


def init_detail_cache(app: Flask) -> None:
    app.extensions["gradquiz.exercise_details"] = DetailCache(app.config["SETTINGS"].exercise_cache_ttl)


def _detail_json(slug: str) -> bytes:
    try:
        exercise = published_exercise(db_session(), slug)
    except ExerciseNotFound:
        problem_abort(404, f"No exercise with slug {slug!r}.")
    spec = exercise.version.spec
    detail = ExerciseSchema().dump({
        "slug": exercise.slug, "title": exercise.title, "kind": exercise.kind,
        "topic_names": exercise.topic_names, "difficulty": exercise.difficulty,
        "current_version": exercise.current_version, "prompt": spec["prompt"],
        "hints": spec.get("hints", []), "score_policy": spec.get("score_policy", "best"),
        **public_view(exercise.version.content),
    })
    return current_app.json.dumps(detail).encode()


@blp.route("/<slug:slug>")
class ExerciseDetail(MethodView):
    @blp.response(200, ExerciseSchema)
    @problems(blp, (404, "No published exercise has this slug"))
    def get(self, slug: str):
        """One exercise, with everything a learner needs to answer it and nothing that gives it away."""
        body = current_app.extensions["gradquiz.exercise_details"].get(slug, lambda: _detail_json(slug))
        return Response(body, mimetype="application/json")
