"""Staff: regrades, overrides with their audit log, publishing exercises."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask import url_for
from flask.views import MethodView
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..auth import BEARER, current_client, require_staff, staff_actor, staff_course_id
from ..database import window
from ..errors import problem_abort
from ..extensions import db_session, dispatch_job
from ..models import Attempt, Exercise, Regrade, RegradeItem
from ..schemas.admin_grades import (
    AdminExerciseSchema,
    ExerciseVersionSchema,
    GradeOverrideSchema,
    OverrideCreateSchema,
    OverridesQuerySchema,
    RegradeCreateSchema,
    RegradeSchema,
    RegradesQuerySchema,
    RegradeSummarySchema,
)
from ..services import catalog_admin, overrides, regrades
from ..services.exercise_access import CATALOG_ONLY, ExerciseAudience
from .blueprint import Blueprint
from .course_scope import NO_COURSE, course_asked, request_audience
from .docs import BODY_PROBLEMS, STAFF_ONLY, UNAUTHORIZED, problems
from .pagination import PAGINATION, OffsetPage, Query, SelectPage

blp = Blueprint("admin_grades", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: regrades, overrides with their audit log, publishing exercises.")
NO_EXERCISE = (404, "No exercise with this slug")
NO_REGRADE = (404, "No regrade with this id")


def _exercise(slug: str, audience: ExerciseAudience | None = None) -> Exercise:
    """The exercise `slug` if the caller sees it (a course's staff: the catalog's and their course's own)."""
    exercise = catalog_admin.find(db_session(), slug, request_audience() if audience is None else audience)
    if exercise is None:
        problem_abort(404, f"No exercise with slug {slug!r}.")
    return exercise


def _regrade(regrade_id: uuid.UUID) -> Regrade:
    """The regrade, if the caller may see it: a course's staff see their course's regrades only
    (not another course's, nor one of every course)."""
    regrade = db_session().get(Regrade, regrade_id)
    own_course = staff_course_id()
    if regrade is None or (own_course is not None and regrade.course_id != own_course):
        problem_abort(404, "No regrade with this id.")
    return regrade


# --- regrades ---------------------------------------------------------------------------------


class RegradesPage(SelectPage):
    """A page of regrades, described with their counts (one grouped query for the page)."""

    @property
    def items(self):
        return regrades.describe_many(self.collection.session, super().items)


@blp.route("/regrades")
class Regrades(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(RegradeCreateSchema)
    @blp.response(202, RegradeSchema, headers={"Location": {"schema": {"type": "string"}}})
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS,
              (404, "No such exercise, course, or attempt (in the course, for a course's staff or with course)"),
              (409, "There is no graded attempt to regrade (the attempt is not graded, or the exercise has none "
                    "in the course)"),
              (422, "Neither or both of exercise and attempt given"))
    def post(self, payload):
        """Regrade every graded attempt of an exercise, or one attempt: a dry run first.

        The attempts are graded again by the grading workers against the exercise's current
        version; nothing changes on them until the regrade is applied. Poll the regrade (its
        `Location`) until its status is `ready`, then look at the diff and apply it. A course's
        staff regrade their course's attempts only; an instructor's or admin's key regrades every
        course's, or one course's with `course`."""
        session = db_session()
        course_id = course_asked(payload.get("course"))
        attempt = None
        if "attempt" in payload:
            attempt = session.get(Attempt, payload["attempt"])
            if attempt is None or (course_id is not None and attempt.course_id != course_id):
                problem_abort(404, "No attempt with this id." if course_id is None
                              else "No attempt with this id in this course.")
            exercise = attempt.exercise
        else:
            exercise = _exercise(payload["exercise"])
        try:
            regrade = regrades.request_regrade(session, exercise, staff_actor(), attempt, course_id)
        except regrades.NothingToRegrade:
            what = ("This attempt is not graded" if attempt is not None
                    else f"Exercise {exercise.slug!r} has no graded attempt"
                    + ("" if course_id is None else " in this course"))
            problem_abort(409, f"{what}: there is nothing to regrade.")
        session.commit()
        if attempt is not None:
            # One item: sent at once. An exercise's items (up to every attempt of a course) are
            # left to the sweeper, which paces them into the broker (service/jobs/dispatch.py).
            dispatch_job(RegradeItem, regrades.first_items(session, regrade, 1)[0])
        return regrades.describe(session, regrade), {"Location": url_for("admin_grades.RegradeDetail",
                                                                          regrade_id=regrade.id)}

    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(RegradesQuerySchema, location="query")
    @blp.response(200, RegradeSummarySchema(many=True))
    @blp.paginate(RegradesPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE)
    def get(self, query):
        """Regrades, newest first, with their progress and summary; `?exercise=` for one exercise's.

        A course's staff see their course's regrades only; `?course=` lists one course's (those
        limited to it: a regrade of every course's attempts is listed without `?course=`)."""
        stmt = select(Regrade)
        course_id = course_asked(query.get("course"))
        if course_id is not None:
            stmt = stmt.where(Regrade.course_id == course_id)
        if "exercise" in query:
            stmt = stmt.join(Regrade.exercise).where(Exercise.slug == query["exercise"], request_audience().where())
        return Query(db_session(), stmt.order_by(Regrade.created_at.desc(), Regrade.id))


@blp.route("/regrades/<uuid:regrade_id>")
class RegradeDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, RegradeSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_REGRADE)
    def get(self, regrade_id: uuid.UUID):
        """A regrade: its progress, then (once ready) how many scores go up, down or stay, and the
        changed attempts, the biggest changes first."""
        return regrades.describe(db_session(), _regrade(regrade_id))


@blp.route("/regrades/<uuid:regrade_id>/apply")
class ApplyRegrade(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, RegradeSchema)
    @blp.alt_response(202, schema=RegradeSchema, description="Being applied: the grading workers finish it "
                                                             "(status applying; poll the regrade)")
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_REGRADE,
              (409, "The regrade is not ready: its items are still being graded"))
    def post(self, regrade_id: uuid.UUID):
        """Store the regrade's new grades on the attempts whose score changed.

        Each changed attempt gets its new grader score, verdict, feedback and report, and an
        `attempt.regraded` event (webhooks, LTI grade passback, statistics); an attempt an
        instructor overrode keeps its score (`kept_overrides` counts them). Applied in chunks of
        100 attempts per transaction: 200 once done; a regrade too big to apply within a few
        seconds answers 202 (status `applying`) and the grading workers finish it. Applying again
        resumes where it stopped and applies nothing twice; applying an applied regrade changes
        nothing."""
        session = db_session()
        regrade = _regrade(regrade_id)
        try:
            finished = regrades.apply(session, regrade, staff_actor(), seconds=regrades.APPLY_REQUEST_SECONDS)
        except regrades.NotReady:
            problem_abort(409, "This regrade is not ready: its attempts are still being graded (see 'graded' of "
                               "'total'). Apply it once its status is 'ready'.")
        return regrades.describe(session, regrade), 200 if finished else 202


# --- overrides --------------------------------------------------------------------------------


@blp.route("/attempts/<uuid:attempt_id>/override")
class OverrideAttempt(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(OverrideCreateSchema)
    @blp.response(201, GradeOverrideSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, (404, "No attempt with this id"),
              (409, "The attempt is not graded: it has no score to override"),
              (422, "No score from 0 to 1, or no reason"))
    def post(self, payload, attempt_id: uuid.UUID):
        """Set the score that counts by hand, with a reason.

        The grader's score stays beside it (`grader_score`), the override goes into the audit
        log, and an `attempt.overridden` event sends the new score to webhooks and the LMS (with
        `learner_comment`, if given, as the score's comment; the reason stays with staff)."""
        session = db_session()
        attempt = overrides.locked_attempt(session, attempt_id)
        course_id = course_asked(None)
        if attempt is None or (course_id is not None and attempt.course_id != course_id):
            problem_abort(404, "No attempt with this id.")
        try:
            entry = overrides.override(session, attempt, current_client(), payload["score"], payload["reason"],
                                       learner_comment=payload.get("learner_comment"), actor=staff_actor())
        except overrides.NotGraded:
            problem_abort(409, f"This attempt is {attempt.status}, not graded: it has no score to override.")
        session.commit()
        return overrides.describe(entry, attempt.learner, attempt.exercise.slug)


@dataclass(frozen=True)
class AuditLogQuery:
    session: Session
    attempt_id: uuid.UUID | None
    exercise_id: int | None
    course_id: int | None


class AuditLogPage(OffsetPage):
    collection: AuditLogQuery

    def _statement(self):
        return overrides.audit_log(self.collection.attempt_id, self.collection.exercise_id, self.collection.course_id)

    def rows(self, offset: int, size: int) -> list:
        rows = self.collection.session.execute(window(self._statement(), size, offset))
        return [overrides.describe(entry, learner, slug) for entry, learner, slug in rows]

    @property
    def item_count(self) -> int:
        return SelectPage(Query(self.collection.session, self._statement()), self.page_params).item_count


@blp.route("/overrides")
class Overrides(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(OverridesQuerySchema, location="query")
    @blp.response(200, GradeOverrideSchema(many=True))
    @blp.paginate(AuditLogPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE)
    def get(self, query):
        """The audit log of overrides, newest first: who, when, the old and new score, and why."""
        exercise_id = _exercise(query["exercise"]).id if "exercise" in query else None
        return AuditLogQuery(db_session(), query.get("attempt"), exercise_id, course_asked(None))


# --- exercises --------------------------------------------------------------------------------


@blp.route("/exercises")
class AdminExercises(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, AdminExerciseSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY)
    def get(self):
        """Every exercise, unpublished ones too, by slug, with its current version."""
        return catalog_admin.all_exercises(db_session(), request_audience())


@blp.route("/exercises/<slug:slug>/versions")
class ExerciseVersions(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, ExerciseVersionSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE)
    def get(self, slug: str):
        """The exercise's versions, newest first, with how many attempts answered each (a course's
        staff: in their course)."""
        session = db_session()
        return catalog_admin.versions(session, _exercise(slug), course_asked(None))


@blp.route("/exercises/<slug:slug>/publish")
class PublishExercise(MethodView):
    @blp.doc(security=BEARER)
    @require_staff(every_course=True)
    @blp.response(200, AdminExerciseSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE)
    def post(self, slug: str):
        """List the exercise in the public catalog and accept attempts at it again (idempotent).

        An exercise whose folder was removed from the catalog is unpublished again by the next sync. A
        course's own exercise is published by its course (/api/v1/courses/{course_id}/exercises), once proven."""
        exercise = _exercise(slug, CATALOG_ONLY)
        catalog_admin.publish(exercise)
        db_session().commit()
        return exercise


@blp.route("/exercises/<slug:slug>/unpublish")
class UnpublishExercise(MethodView):
    @blp.doc(security=BEARER)
    @require_staff(every_course=True)
    @blp.response(200, AdminExerciseSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE)
    def post(self, slug: str):
        """Hide the exercise from the public catalog and refuse new attempts at it (idempotent).

        Its attempts stay readable, and catalog syncs keep it unpublished until it is published here."""
        exercise = _exercise(slug, CATALOG_ONLY)
        catalog_admin.unpublish(exercise, current_client().name)
        db_session().commit()
        return exercise
