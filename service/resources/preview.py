"""Previews (issue 34): a course's staff see a version of its exercise, and answer it, as a learner
would, before publishing it ("Preview as a learner"); preview attempts are graded like attempts and
counted nowhere (services/preview.py)."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Response, jsonify, url_for
from flask.views import MethodView
from sqlalchemy import select

from ..auth import BEARER, current_client, require_staff, staff_actor, staff_course_id
from ..errors import INVALID_ANSWER, problem_abort
from ..extensions import db_session, dispatch_job
from ..models import Exercise, ExerciseVersion, PreviewAttempt
from ..ratelimit import rate_limited
from ..schemas.attempts import WaitQuerySchema
from ..schemas.preview import PreviewAttemptSchema, PreviewDetailSchema
from ..services.attempts import ExerciseNotFound, InvalidAnswer, wait_until_finished
from ..services.preview import NotPreviewable, course_version, new_preview, preview_learner, preview_view
from .attempts import takes_attempts
from .blueprint import Blueprint
from .course_scope import course_asked
from .docs import BODY_PROBLEMS, ROW_ID, STAFF_ONLY, UNAUTHORIZED, problems
from .exercises import AskedLearner, version_detail

blp = Blueprint("preview", __name__, url_prefix="/api/v1",
                description="Previews: a course's staff answer a version of its exercise as a learner would; never counted.")

VERSION_PATH = f"/courses/<{ROW_ID}:course_id>/exercises/<slug:slug>/versions/<int:number>/preview"
NO_VERSION = (404, "No such course, or the course has no exercise with this slug and version")
NOT_PREVIEWABLE = (409, "The version's files have format problems (its proof names them): nothing to preview")
PREVIEW_SCHEMA = PreviewAttemptSchema()


def _version(course_id: int, slug: str, number: int) -> tuple[Exercise, ExerciseVersion]:
    course_asked(course_id)  # a course's staff, of this course; anyone, of a course that exists
    try:
        return course_version(db_session(), course_id, slug, number)
    except ExerciseNotFound:
        problem_abort(404, f"This course has no exercise {slug!r} with a version {number}.")
    except NotPreviewable as exc:
        problem_abort(409, str(exc))


def _previewer() -> AskedLearner:
    return AskedLearner(current_client().id, preview_learner(staff_actor()))


@blp.route(VERSION_PATH)
class VersionPreview(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, PreviewDetailSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_VERSION, NOT_PREVIEWABLE)
    def get(self, course_id: int, slug: str, number: int):
        """Version `number` of a course's exercise as a learner sees it (the previewer's own
        variant, `learner` preview:<actor>), published or not, with where to answer it."""
        exercise, version = _version(course_id, slug, number)
        detail = version_detail(exercise, version, _previewer())
        attempts_url = url_for("preview.VersionPreviewAttempts", course_id=course_id, slug=slug, number=number)
        response = jsonify({**detail, "preview": True, "attempts_url": attempts_url})
        response.headers["Cache-Control"] = "private, no-store"
        return response


@blp.route(VERSION_PATH + "/attempts")
class VersionPreviewAttempts(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @rate_limited("attempts")
    @takes_attempts(blp, PreviewAttemptSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_VERSION, NOT_PREVIEWABLE,
              (422, "The answer does not fit the exercise"), (429, "Too many attempts by this caller; see Retry-After"))
    def post(self, payload: dict[str, Any], course_id: int, slug: str, number: int):
        """Answer version `number` as a learner would (the body of POST /api/v1/exercises/{slug}/attempts,
        without `learner`): graded like an attempt, and never counted (no attempt, no event, no
        passback, no statistics)."""
        exercise, version = _version(course_id, slug, number)
        session = db_session()
        try:
            preview = new_preview(session, current_client(), course_id, exercise, version, staff_actor(),
                                  payload.get("answer"), payload.get("code"))
        except InvalidAnswer as exc:
            problem_abort(422, str(exc), title="Invalid answer", type=INVALID_ANSWER,
                          errors=[{"field": f"json.{exc.field}", "message": str(exc)}])
        session.commit()
        queued = not preview.finished
        if queued:
            dispatch_job(PreviewAttempt, preview.id)
        return _preview_response(preview, exercise, version, 202 if queued else 201)


@blp.route("/preview-attempts/<uuid:preview_id>")
class PreviewAttemptDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(WaitQuerySchema, location="query")
    @blp.response(200, PreviewAttemptSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No preview attempt with this id in the caller's course"))
    def get(self, query: dict[str, Any], preview_id: uuid.UUID):
        """A preview attempt, with its grade and feedback; `?wait=N` holds the answer until it is graded."""
        visible = select(PreviewAttempt).where(PreviewAttempt.id == preview_id)
        course = staff_course_id()
        if course is not None:
            visible = visible.where(PreviewAttempt.course_id == course)
        session = db_session()
        preview = wait_until_finished(session, PreviewAttempt, visible, query["wait"])
        if preview is None:
            problem_abort(404, "No such preview attempt.")
        version = preview.exercise_version
        return _preview_response(preview, version.exercise, version, 200)


def _preview_response(preview: PreviewAttempt, exercise: Exercise, version: ExerciseVersion, status: int) -> Response:
    url = url_for("preview.PreviewAttemptDetail", preview_id=preview.id)
    response = jsonify(PREVIEW_SCHEMA.dump(preview_view(preview, exercise, version, url)))
    response.status_code = status
    if status == 202:
        response.headers["Location"] = url
    return response
