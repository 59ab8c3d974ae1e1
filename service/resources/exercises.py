from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, current_app, request
from flask.views import MethodView
from sqlalchemy import select

from ..auth import BEARER, authenticate
from ..catalog import public_view
from ..errors import Problem, problem_abort
from ..extensions import db_session
from ..learner_tokens import LearnerScope
from ..models import Exercise, ExerciseTopic, ExerciseVersion
from ..schemas.exercises import (
    ExerciseDetailQuerySchema,
    ExerciseQuerySchema,
    ExerciseSchema,
    ExerciseSummarySchema,
)
from ..schemas.rules import StandingSchema
from ..services.attempts import ExerciseNotFound, published_exercise
from ..services.exercise_access import CATALOG_ONLY, ExerciseAudience, audience_of, token_audience
from ..services.standing import LearnerCountingScope, standing
from ..services.versions import VersionCache
from ..ttl_cache import TtlCache
from ..variants import personalise_detail, quiz_variant, variant_key, varies_per_learner
from .blueprint import Blueprint
from .docs import UNAUTHORIZED, problems
from .pagination import PAGINATION, Query, SelectPage

blp = Blueprint("exercises", __name__, url_prefix="/api/v1/exercises",
                description="The catalog: quiz and code exercises. Public, no key needed; a learner token (or "
                            "an API key and ?learner=) gets the learner's own variant of an exercise.")


@blp.route("")
class ExerciseList(MethodView):
    @blp.arguments(ExerciseQuerySchema, location="query")
    @blp.response(200, ExerciseSummarySchema(many=True))
    @blp.paginate(SelectPage, **PAGINATION)
    def get(self, query):
        """List published exercises, easiest first; filter by topic or kind."""
        # The public catalog: a course's own exercises are listed to its staff alone (course_exercises.py).
        stmt = select(Exercise).where(Exercise.published.is_(True), Exercise.course_id.is_(None))
        if "kind" in query:
            stmt = stmt.where(Exercise.kind == query["kind"])
        if "topic" in query:
            stmt = stmt.where(Exercise.id.in_(select(ExerciseTopic.exercise_id).where(ExerciseTopic.topic == query["topic"])))
        return Query(db_session(), stmt.order_by(Exercise.difficulty, Exercise.slug))


def init_exercise_caches(app: Flask) -> None:
    """What each web process keeps of each published exercise for EXERCISE_CACHE_SECONDS: its
    detail response (the most read page: a class opens it at once) and its current version (what
    every attempt is graded against); both change only by a sync or a publish. Unknown slugs are
    never kept. Versions themselves never change: each process keeps those it read (VersionCache)."""
    seconds = app.config["SETTINGS"].exercise_cache_ttl
    app.extensions["gradquiz.exercise_details"] = TtlCache(seconds)
    app.extensions["gradquiz.current_versions"] = TtlCache(seconds)
    app.extensions["gradquiz.versions"] = VersionCache()


def _exercise(slug: str, audience: ExerciseAudience) -> Exercise:
    try:
        return published_exercise(db_session(), slug, audience)
    except ExerciseNotFound:
        problem_abort(404, f"No exercise with slug {slug!r}.")


def _detail(exercise: Exercise, version: ExerciseVersion | None = None) -> dict[str, Any]:
    """The shared detail, as every learner may read it (choices as written, {name} placeholders),
    of the current version, or of `version` (a preview: its own title and kind, as written)."""
    current = version is None
    version = exercise.version if version is None else version
    spec = version.spec
    return ExerciseSchema().dump({
        "slug": exercise.slug, "title": exercise.title if current else spec["title"],
        "kind": exercise.kind if current else spec["kind"], "topic_names": exercise.topic_names,
        "difficulty": exercise.difficulty if current else spec["difficulty"],
        "current_version": version.number, "prompt": spec["prompt"],
        "hints": spec.get("hints", []), "score_policy": spec.get("score_policy", "best"),
        "per_learner": varies_per_learner(spec),
        **public_view(version.content),
    })


def version_detail(exercise: Exercise, version: ExerciseVersion, learner: AskedLearner) -> dict[str, Any]:
    """Version `version` of the exercise as `learner` sees it (their variant), without a standing:
    a preview's (resources/preview.py), as learner_detail shows the current version."""
    variant = quiz_variant(current_app.config["SECRET_KEY"], variant_key(learner.client_id, learner.learner),
                           exercise.slug, version.digest, version.spec)
    return personalise_detail(_detail(exercise, version), version.spec, variant, learner.learner)


def _catalog_detail_json(slug: str) -> bytes | None:
    """A catalog exercise's shared detail; None for a slug that is not one (unknown, or a course's)."""
    try:
        exercise = published_exercise(db_session(), slug, CATALOG_ONLY)
    except ExerciseNotFound:
        return None
    return current_app.json.dumps(_detail(exercise)).encode()


def shared_detail_json(slug: str, audience: ExerciseAudience = CATALOG_ONLY) -> bytes:
    """The shared detail's JSON: a catalog exercise's from the process's cache
    (EXERCISE_CACHE_SECONDS), which holds the catalog's alone; a course's exercise, for a caller of
    its course (`audience`), built for each request: a cache by slug would serve it to anyone."""
    if audience.sees(None):
        cached = current_app.extensions["gradquiz.exercise_details"].get(slug, lambda: _catalog_detail_json(slug))
        if cached is not None:
            return cached
        if audience == CATALOG_ONLY:  # no course of its own: nothing more to look up
            problem_abort(404, f"No exercise with slug {slug!r}.")
    return current_app.json.dumps(_detail(_exercise(slug, audience))).encode()


def learner_detail(slug: str, asked: AskedLearner, audience: ExerciseAudience | None = None) -> dict[str, Any]:
    """The exercise as the learner asked of their client sees it (their choice order, their
    parameters' values), from the current version, with their standing under its rules in their
    counting scope; built for each request, never kept in the process's shared cache. `audience`:
    whose exercises the caller sees (None: the learner token's, `asked.scope`; no token, the catalog)."""
    session = db_session()
    if audience is None:
        audience = CATALOG_ONLY if asked.scope is None else token_audience(session, asked.scope)
    exercise = _exercise(slug, audience)
    version = exercise.version
    where = LearnerCountingScope.of(session, asked.client_id, asked.scope, exercise.id, asked.learner)
    learner_standing = standing(session, where.counting_scope, version.spec.get("rules", {}), asked.learner,
                                exempt=where.exempt, with_runs=exercise.kind == "code")
    return {**version_detail(exercise, version, asked), "standing": StandingSchema().dump(learner_standing)}


@dataclass(frozen=True)
class AskedLearner:
    """Whose variant a request asks for: an API key's learner (`scope` None: the client's own use of
    the exercise), or a learner token's own learner (an instructor's token: another of its course)."""

    client_id: int
    learner: str
    scope: LearnerScope | None = None


@dataclass(frozen=True)
class DetailAsked:
    """What a request for an exercise's detail asks: whose exercises its caller sees, and whose
    variant (None: the shared detail)."""

    audience: ExerciseAudience
    learner: AskedLearner | None


def _learner_asked(query: dict[str, Any], slug: str, named_course: int | None) -> DetailAsked:
    """Whose variant the request asks for (None for the shared detail): a learner token's own
    learner (or, for an instructor's token, ?learner=), an API key's ?learner=; with whose
    exercises the caller sees (services/exercise_access.py; `named_course`: the course a course
    URL names).

    The shared detail stays public: credentials that are not valid (a revoked key, an expired
    token) get it, as no credentials do; only ?learner= needs valid ones (else 401)."""
    if "Authorization" not in request.headers:
        if "learner" in query:
            problem_abort(401, "?learner= needs an API key (or a learner token): send it as "
                               "'Authorization: Bearer <key>'.", headers={"WWW-Authenticate": 'Bearer realm="gradquiz"'})
        return DetailAsked(CATALOG_ONLY, None)
    session = db_session()
    try:
        client, scope, course = authenticate(session, allow_learner_token=True, allow_course_staff=True)
    except Problem as problem:
        if problem.code == 401 and "learner" not in query:
            return DetailAsked(CATALOG_ONLY, None)
        raise
    audience = audience_of(session, client, scope, None if course is None else course.course_id, named_course)
    if course is not None:  # a course's staff read the shared detail; no learner's variant
        return DetailAsked(audience, None)
    if scope is None:
        return DetailAsked(audience, AskedLearner(client.id, query["learner"]) if "learner" in query else None)
    if not scope.allows(slug):
        _exercise(slug, audience)  # one the caller cannot see is not there (404), not refused (403)
        problem_abort(403, f"This learner token is not for exercise {slug!r}.")
    learner = query.get("learner", scope.learner)
    if learner != scope.learner and not scope.is_instructor:
        problem_abort(403, "A learner token reads its own learner's variant only.")
    return DetailAsked(audience, AskedLearner(scope.client_id, learner, scope))


def detail_response(query: dict[str, Any], slug: str, named_course: int | None = None) -> Response:
    """GET /api/v1/exercises/{slug}'s answer; at a course URL (`named_course`), the same for that
    course's own exercises alone (learner_view)."""
    asked = _learner_asked(query, slug, named_course)
    if asked.learner is None:
        response = Response(shared_detail_json(slug, asked.audience), mimetype="application/json")
    else:
        detail = learner_detail(slug, asked.learner, asked.audience)
        response = Response(current_app.json.dumps(detail), mimetype="application/json")
        response.headers["Cache-Control"] = "private, no-store"
    # The body depends on the credentials: a cache must not hand one caller's answer to another.
    response.vary.add("Authorization")
    return response


def learner_view(course_id: int, slug: str, query: dict[str, Any]) -> Response:
    """GET /api/v1/courses/{course_id}/exercises/{slug} for a learner of the course (a learner
    token of it, or the course's client's key with ?learner=): exactly what
    /api/v1/exercises/{slug} answers them, and 404 when the slug is not that course's own published
    exercise or the caller is not in the course. (The route is the course exercises API's, which
    answers its staff itself and a learner with this.)"""
    return detail_response(query, slug, course_id)


@blp.route("/<slug:slug>")
class ExerciseDetail(MethodView):
    @blp.doc(security=[{}, *BEARER])
    @blp.arguments(ExerciseDetailQuerySchema, location="query")
    @blp.response(200, ExerciseSchema)
    @problems(blp, UNAUTHORIZED, (403, "A learner token for another exercise or learner"),
              (404, "No published exercise has this slug (or a course's exercise, to a caller outside that course)"))
    def get(self, query: dict[str, Any], slug: str):
        """One exercise, with everything a learner needs to answer it and nothing that gives it away.

        Without credentials: the shared detail (cached). With a learner token, or an API key and
        `?learner=`: that learner's variant (their order of the choices, their values of the
        parameters), which their answers are graded in; never stored by a cache. A course's own
        exercise is seen only by callers of that course (its learners' tokens, its staff)."""
        return detail_response(query, slug)
