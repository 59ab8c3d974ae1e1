from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask import Response, jsonify, url_for
from flask.views import MethodView
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from ..auth import BEARER, course_staff, current_client, learner_scope, require_client
from ..database import serialize_transactions
from ..errors import VALIDATION_ERROR, problem_abort
from ..extensions import db_session, dispatch_job
from ..grading.registry import RUN_OPTIONS
from ..grading.runs import exercise_run_inputs
from ..grading.spec import load_code_spec, validate_run_inputs
from ..learner_tokens import LearnerScope
from ..models import AttemptStatus, Exercise, ExerciseVersion, Run
from ..ratelimit import rate_limited
from ..rules import Standing
from ..schemas.attempts import WaitQuerySchema
from ..schemas.runs import RunCreateSchema, RunSchema
from ..services.attempts import ExerciseNotFound, published_exercise, wait_until_finished
from ..services.exercise_access import token_audience
from ..services.preview import NotPreviewable, course_version
from ..services.standing import LearnerCountingScope, scope_course, standing as learner_standing
from .attempts import refused
from .blueprint import Blueprint
from .course_scope import request_audience
from .docs import BODY_PROBLEMS, UNAUTHORIZED, problems

blp = Blueprint("runs", __name__, url_prefix="/api/v1/runs",
                description="'Try it yourself': run code in the grading sandbox, never graded: with an API key, "
                            "a learner token (the learner's own runs), or a course's staff (runs for nobody).")


def _visible(run_id: uuid.UUID):
    """The run, if the caller may see it: a key its client's runs (an admin key every run); a
    learner token its learner's runs in its client, and in its course when it has one (an
    instructor's also its own try-outs, in no course), as token_limits has it for attempts."""
    client, scope, staff = current_client(), learner_scope(), course_staff()
    stmt = select(Run).where(Run.id == run_id)
    if not client.is_admin or scope is not None:
        stmt = stmt.where(Run.client_id == client.id)
    if staff is not None:  # a course's staff: their own runs (no learner's), made in their course
        stmt = stmt.where(Run.learner.is_(None), Run.course_id == staff.course_id)
    if scope is not None:
        stmt = stmt.where(Run.learner == scope.learner)
        course = scope_course(db_session(), scope)
        if course is not None:
            stmt = stmt.where(or_(Run.course_id == course, Run.course_id.is_(None)) if scope.is_instructor
                              else Run.course_id == course)
    return stmt


def _exercise_call(slug: str, number: int | None) -> tuple[Exercise, str, list[dict], frozenset[str]]:
    """The exercise a run names, with the entry point, sample inputs and optional checks its "Run"
    uses: of its current version, or (a course's staff previewing) of version `number`, published
    or not."""
    scope = learner_scope()
    if scope is not None and not scope.allows(slug):
        problem_abort(403, f"This learner token is not for exercise {slug!r}.")
    if number is not None:
        exercise, version = _previewed_version(slug, number)
    else:
        try:
            exercise = published_exercise(db_session(), slug, request_audience())
        except ExerciseNotFound:
            problem_abort(404, f"No exercise with slug {slug!r}.")
        version = exercise.version
    kind = version.spec.get("kind")
    if kind != "code":
        problem_abort(422, f"Exercise {slug!r} is a {kind} exercise: only code exercises run.",
                      type=VALIDATION_ERROR, errors=[{"field": "json.exercise", "message": "not a code exercise"}])
    code_spec, problems = load_code_spec(version.spec)
    if code_spec is None:  # the catalog (or the version's format check) checked it when it was saved
        raise RuntimeError(f"exercise {slug!r} has an invalid [code] table: {problems}")
    return exercise, code_spec.entry_point, exercise_run_inputs(code_spec), code_spec.options


def _previewed_version(slug: str, number: int) -> tuple[Exercise, ExerciseVersion]:
    """Version `number` of a course's exercise, for its staff (a course's, or a staff key): a learner
    or a client's key may not name a version (403); another course's exercise is a 404."""
    if learner_scope() is not None or (course_staff() is None and not current_client().is_staff):
        problem_abort(403, "Only a course's staff run a version of its exercise (a preview).")
    session = db_session()
    exercise = session.scalar(select(Exercise).where(Exercise.slug == slug, Exercise.course_id.is_not(None),
                                                     request_audience().where()))
    if exercise is None or exercise.course_id is None:
        problem_abort(404, f"No exercise with slug {slug!r}.")
    try:
        return course_version(session, exercise.course_id, slug, number)
    except ExerciseNotFound:
        problem_abort(404, f"Exercise {slug!r} has no version {number}.")
    except NotPreviewable as exc:
        problem_abort(422, str(exc), type=VALIDATION_ERROR, errors=[{"field": "json.version", "message": str(exc)}])


@dataclass(frozen=True)
class RunPlace:
    """Where a learner token's run counts: the exercise whose rules (`runs`, `max_runs`) it spends,
    if any, and the course it is made in."""

    exercise: Exercise | None
    course_id: int | None


def _check_run_rules(session: Session, client_id: int, exercise: Exercise, scope: LearnerScope) -> tuple[Standing, int | None]:
    """A learner's standing for a run at `exercise`, and the course the run counts in; the standing
    says if its rules allow no run now (runs, max_runs)."""
    where = LearnerCountingScope.of(session, client_id, scope, exercise.id)
    # Two runs sent at once at the last allowed one: the second reads the standing after the first
    # has committed its run (runs have no number whose unique index would refuse it, as attempts do).
    serialize_transactions(session, "runs", client_id, exercise.id, scope.learner)
    standing = learner_standing(session, where.counting_scope, exercise.version.spec.get("rules", {}), scope.learner,
                                exempt=where.exempt, with_runs=True)
    return standing, where.counting_scope.course_id


def _run_place(session: Session, client_id: int, scope: LearnerScope, exercise: Exercise | None) -> RunPlace:
    """Where a learner token's run counts, refused (problem+json /problems/attempt-refused/
    runs-not-allowed or .../no-runs-left) when the rules allow it no run now.

    A page's Run (`exercise`) counts at its exercise. A free run (its own entry point and inputs)
    can try any exercise's Function, so it follows the rules of the code exercises the token
    reaches: refused when every one of them refuses a run, and counted at the exercise when the
    token reaches one (an LTI launch's token). A token for every exercise (its client's choice) and
    an instructor's are bound by no exercise's rules."""
    if exercise is not None:
        standing, course_id = _check_run_rules(session, client_id, exercise, scope)
        refusal = standing.run_refusal()
        if refusal is not None:
            refused(refusal, standing)
        return RunPlace(exercise, course_id)
    if scope.exercises is None or scope.is_instructor:
        return RunPlace(None, None if scope.is_instructor else scope_course(session, scope))
    reached = session.scalars(select(Exercise).where(Exercise.slug.in_(scope.exercises), Exercise.kind == "code",
                                                     Exercise.published.is_(True), token_audience(session, scope).where())
                              .order_by(Exercise.slug)).all()
    if not reached:
        return RunPlace(None, scope_course(session, scope))
    refusals = []
    for candidate in reached:
        standing, course_id = _check_run_rules(session, client_id, candidate, scope)
        refusal = standing.run_refusal()
        if refusal is None:
            return RunPlace(candidate if len(reached) == 1 else None, course_id)
        refusals.append((refusal, standing))
    refused(*refusals[0])


@blp.route("")
class Runs(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True, allow_course_staff=True)
    @rate_limited("runs")
    @blp.arguments(RunCreateSchema)
    @blp.response(200, RunSchema, description="The run finished within `wait` seconds")
    @blp.alt_response(202, schema=RunSchema, headers={"Location": {"schema": {"type": "string"}}},
                      description="Still queued or running: follow Location")
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS,
              (403, "A learner token for another exercise, or the exercise's rules allow no run "
                    "(/problems/attempt-refused/runs-not-allowed); `version` from anyone but staff"),
              (404, "No published exercise has the slug in `exercise`"),
              (409, "The learner has used all the runs the exercise's rules allow (/problems/attempt-refused/no-runs-left)"),
              (422, "Not valid: the inputs, a non-code exercise, or entry_point/inputs beside exercise"),
              (429, "Too many runs by this caller (a key, or one learner); see Retry-After"))
    def post(self, payload):
        """Run code in the sandbox; with a Function name and inputs, gradcheck it too.

        With `exercise` (a code exercise's slug), the run uses that exercise's entry point and
        sample inputs, as its page's "Run" button does. With a learner token, the run is the
        learner's: only they (and the client's key) see it, and the rate limit counts per learner.
        A learner token's free run (no `exercise`) follows the rules of the code exercises the
        token reaches: refused when none of them allows a run now, and counted against `max_runs`
        when the token reaches one. A course's staff (a course key or staff session) run for no
        learner, in their course: only they see it; with `exercise` and `version`, that version of
        their course's exercise, a draft too (a preview's "Run")."""
        client, scope = current_client(), learner_scope()
        entry_point, inputs = payload.get("entry_point"), payload.get("inputs")
        exercise = None
        options = {name for name in RUN_OPTIONS if payload[name]}
        if "version" in payload and payload.get("exercise") is None:
            problem_abort(422, "A version is of an exercise: name it in `exercise`.", type=VALIDATION_ERROR,
                          errors=[{"field": "json.version", "message": "only with exercise"}])
        if payload.get("exercise") is not None:
            given = [name for name in ("entry_point", "inputs") if name in payload]
            if given:
                problem_abort(422, "An exercise's run uses its own entry point and inputs: leave them out.",
                              type=VALIDATION_ERROR, errors=[{"field": f"json.{name}", "message": "not with exercise"}
                                                              for name in given])
            exercise, entry_point, inputs, exercise_options = _exercise_call(payload["exercise"], payload.get("version"))
            options |= exercise_options
        if (entry_point is None) != (inputs is None):
            missing = "inputs" if inputs is None else "entry_point"
            problem_abort(422, "Give both entry_point and inputs, or neither.", type=VALIDATION_ERROR,
                          errors=[{"field": f"json.{missing}", "message": "required with the other"}])
        if inputs is not None:
            problems = validate_run_inputs(inputs)
            if problems:
                problem_abort(422, "The input specs are not valid.", type=VALIDATION_ERROR,
                              errors=[{"field": f"json.{f}", "message": m} for f, m in problems])
        session = db_session()
        if scope is not None:
            place = _run_place(session, client.id, scope, exercise)
        else:  # a key's run, or a course's staff's (in their course, for no learner: it counts for nobody)
            staff = course_staff()
            place = RunPlace(exercise, None if staff is None else staff.course_id)
        run = Run(id=uuid.uuid4(), client_id=client.id, learner=None if scope is None else scope.learner,
                  exercise=place.exercise, course_id=place.course_id, code=payload["code"], entry_point=entry_point,
                  inputs=inputs, status=AttemptStatus.QUEUED.value, **{name: name in options for name in RUN_OPTIONS})
        session.add(run)
        session.commit()
        dispatch_job(Run, run.id)
        waited = wait_until_finished(session, Run, _visible(run.id), payload["wait"])
        assert waited is not None  # just made, and visible to whoever made it
        return _run_response(waited)


@blp.route("/<uuid:run_id>")
class RunDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True, allow_course_staff=True)
    @blp.arguments(WaitQuerySchema, location="query")
    @blp.response(200, RunSchema)
    @problems(blp, UNAUTHORIZED, (404, "No run with this id is visible to the caller"))
    def get(self, query, run_id: uuid.UUID):
        """One run and its result; `?wait=N` holds the answer until it has finished."""
        run = wait_until_finished(db_session(), Run, _visible(run_id), query["wait"])
        if run is None:
            problem_abort(404, "No such run.")
        return run


def _run_response(run: Run) -> Response:
    response = jsonify(RunSchema().dump(run))
    response.status_code = 200 if run.finished else 202
    response.headers["Location"] = url_for("runs.RunDetail", run_id=run.id)
    return response
