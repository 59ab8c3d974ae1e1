from __future__ import annotations

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
from ..ttl_cache import TtlCache
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


def init_exercise_caches(app: Flask) -> None:
    """What each web process keeps of each published exercise for EXERCISE_CACHE_SECONDS: its
    detail response (the most read page: a class opens it at once) and its current version (what
    every attempt is graded against); both change only by a sync or a publish. Unknown slugs are
    never kept."""
    seconds = app.config["SETTINGS"].exercise_cache_ttl
    app.extensions["gradquiz.exercise_details"] = TtlCache(seconds)
    app.extensions["gradquiz.current_versions"] = TtlCache(seconds)


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
