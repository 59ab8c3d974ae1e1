"""Course exercises (issue 34): a course's staff write, prove, publish and retire exercises of their own.

All under `/api/v1/courses/{course_id}/exercises`, for the course's staff: a course key or staff
session of that course, or an instructor's or admin's key (a course-scoped caller naming another
course is told it does not exist). The work is services/authoring.py's; archives are read in memory
by catalog/archive.py. A course's learners read a published exercise at its URL as they read a
catalog exercise at /api/v1/exercises/{slug}.
"""

from __future__ import annotations

import difflib
from typing import Any

from flask import current_app, request
from flask.views import MethodView
from marshmallow import ValidationError
from sqlalchemy import func, select

from ..auth import BEARER, course_staff, current_client, learner_scope, require_client, require_staff, staff_actor
from ..catalog.archive import ARCHIVE_TYPES, ArchiveLimits, ArchiveRefused, check_file_names, exercise_folders
from ..errors import flatten_messages, problem_abort
from ..extensions import db_session, dispatch_job
from ..models import Course, Exercise, ExerciseProof, ExerciseVersion
from ..ratelimit import refuse_past_limit
from ..schemas.course_exercises import (
    CourseExerciseDetailSchema,
    CourseExerciseSummarySchema,
    DiffQuerySchema,
    DiffSchema,
    DraftsSchema,
    ExerciseDraftSchema,
    ExerciseFilesSchema,
    NewExerciseSchema,
    PublishSchema,
    VersionDetailSchema,
    VersionSummarySchema,
)
from ..services import authoring
from .blueprint import Blueprint
from .course_scope import course_asked
from .docs import BODY_PROBLEMS, ROW_ID, STAFF_ONLY, UNAUTHORIZED, problems
from .exercises import _detail, learner_view

blp = Blueprint("course_exercises", __name__, url_prefix="/api/v1/courses",
                description="Course exercises: a course's staff write exercises of their own (JSON files or an "
                            "archive), each version proven before it is published; visible in that course alone.")

NO_EXERCISE = (404, "No such course (or not the caller's), or no exercise of it with this slug")
RATE_LIMITED = (429, "The course asked for more proofs than PROOFS_RATE_LIMIT allows: retry after Retry-After seconds")
PROOF_SCOPE = "proofs"
EXERCISE = f"/<{ROW_ID}:course_id>/exercises/<slug:slug>"
#: Endpoints whose body may be larger than MAX_REQUEST_BYTES (UPLOAD_MAX_BYTES), and, for the first,
#: an archive rather than JSON (service/__init__.py _check_json_body).
UPLOAD_ENDPOINTS = frozenset({"course_exercises.CourseExercises", "course_exercises.CourseExercise"})
# The archive body is documented in words only: the document's clients (openapi-python-client,
# openapi-typescript) generate no usable call for a body of JSON or bytes.
ARCHIVE_BODY = {
    "description": "The exercise's files as JSON; or, instead, a .zip or .tar.gz archive of exercise folders "
                   "(`<slug>/exercise.toml`, ...; one top folder around them is allowed) sent as application/zip, "
                   "application/gzip or application/octet-stream. At most UPLOAD_MAX_BYTES either way",
    "required": True,
    "content": {"application/json": {"schema": NewExerciseSchema}},
}


def _course(course_id: int) -> Course:
    """The course of the URL, for its staff (course_asked: 404 for another course's staff)."""
    course = db_session().get(Course, course_asked(course_id) or course_id)
    if course is None:
        problem_abort(404, "No course with this id.")
    return course


def _exercise(course: Course, slug: str) -> Exercise:
    try:
        return authoring.course_exercise(db_session(), course.id, slug)
    except authoring.NotCourseExercise as exc:
        problem_abort(404, str(exc))


def _version(exercise: Exercise, number: int) -> ExerciseVersion:
    try:
        return authoring.version_of(db_session(), exercise, number)
    except authoring.NoSuchVersion as exc:
        problem_abort(404, str(exc))


def _urls(course_id: int, slug: str) -> dict[str, str]:
    url = f"/api/v1/courses/{course_id}/exercises/{slug}"
    return {"url": url, "page_url": f"/learn/{slug}", "versions_url": f"{url}/versions"}


def _draft(outcome_exercise: Exercise, version: ExerciseVersion) -> dict[str, Any]:
    session = db_session()
    urls = _urls(outcome_exercise.course_id or 0, outcome_exercise.slug)
    return {"slug": outcome_exercise.slug, "version": version.number,
            "status": authoring.status_of(outcome_exercise, authoring.ever_published(session, outcome_exercise.id)),
            "proof": authoring.ProofView.of(version), "url": urls["url"], "page_url": urls["page_url"],
            "version_url": f"{urls['versions_url']}/{version.number}"}


def _summaries(course_id: int, slug: str | None = None) -> list[dict[str, Any]]:
    """The course's exercises (or one), with their latest version's number and proof status."""
    session = db_session()
    latest = (select(ExerciseVersion.exercise_id, func.max(ExerciseVersion.number).label("number"),
                     func.count(ExerciseVersion.published_at).label("published"))
              .group_by(ExerciseVersion.exercise_id).subquery())
    stmt = (select(Exercise, latest.c.number, latest.c.published, ExerciseVersion.proof_status)
            .join(latest, latest.c.exercise_id == Exercise.id)
            .join(ExerciseVersion, (ExerciseVersion.exercise_id == Exercise.id) & (ExerciseVersion.number == latest.c.number))
            .where(Exercise.course_id == course_id).order_by(Exercise.slug))
    if slug is not None:
        stmt = stmt.where(Exercise.slug == slug)
    return [{"slug": exercise.slug, "title": exercise.title, "kind": exercise.kind,
             "status": authoring.status_of(exercise, published > 0), "current_version": exercise.current_version,
             "latest_version": number, "latest_proof_status": proof_status, "updated_at": exercise.updated_at,
             "exercise": exercise, **_urls(course_id, exercise.slug)}
            for exercise, number, published, proof_status in session.execute(stmt)]


def _dispatch(jobs: list[ExerciseProof | None]) -> None:
    for job in jobs:
        if job is not None:
            dispatch_job(ExerciseProof, job.id)


def _save(course: Course, folders: dict[str, dict[str, str]], source: str, new: bool) -> list[authoring.DraftOutcome]:
    """Save each folder as a draft, all or nothing: a refused one writes none of them."""
    session = db_session()
    for files in folders.values():
        try:
            check_file_names(files, current_app.config["SETTINGS"].upload_max_files)
        except ArchiveRefused as exc:
            problem_abort(422, f"The files are refused, nothing was saved: {exc}",
                          errors=[{"field": f"json.files.{exc.entry or ''}".rstrip("."), "message": str(exc)}])
    refuse_past_limit(PROOF_SCOPE, f"course:{course.id}", len(folders))
    outcomes = []
    try:
        for slug, files in folders.items():
            outcomes.append(authoring.save_draft(session, course, slug, files, author=staff_actor(), source=source,
                                                 new=new))
    except authoring.SlugTaken as exc:
        session.rollback()
        problem_abort(409, str(exc))
    except authoring.NotCourseExercise as exc:
        session.rollback()
        problem_abort(404, str(exc))
    except authoring.InvalidSlug as exc:
        session.rollback()
        problem_abort(422, str(exc), errors=[{"field": "slug", "message": str(exc)}])
    session.commit()
    _dispatch([outcome.proof_job for outcome in outcomes])
    return outcomes


def _archive_folders() -> dict[str, dict[str, str]]:
    settings = current_app.config["SETTINGS"]
    limits = ArchiveLimits(settings.upload_max_files, settings.upload_max_uncompressed_bytes, settings.upload_max_ratio)
    try:
        return exercise_folders(request.get_data(cache=False), request.content_type or "", limits)
    except ArchiveRefused as exc:
        problem_abort(422, f"The archive is refused, nothing was saved: {exc}", title="Archive refused",
                      errors=[{"field": exc.entry or "(archive)", "message": str(exc)}])


@blp.route(f"/<{ROW_ID}:course_id>/exercises")
class CourseExercises(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, CourseExerciseSummarySchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No such course, or not the caller's"))
    def get(self, course_id: int):
        """The course's own exercises, with their status (draft, published, unpublished) and their latest
        version's proof."""
        return _summaries(_course(course_id).id)

    @blp.doc(security=BEARER, requestBody=ARCHIVE_BODY)
    @require_staff
    @blp.response(201, DraftsSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No such course, or not the caller's"),
              (400, "The body is not valid JSON"), (413, "The body is larger than UPLOAD_MAX_BYTES"),
              (415, "The body is neither JSON nor a zip or gzip archive"),
              (409, "A slug is taken (by the catalog or any course): nothing was saved"),
              (422, "A slug that cannot name an exercise, a body without files, or an archive refused (a path "
                    "that leaves its folder, an absolute path, a link, a device, a name twice, too many files, "
                    "too large once uncompressed): nothing was saved"), RATE_LIMITED)
    def post(self, course_id: int):
        """New exercises of the course, each a draft version: from JSON `{"slug", "files"}`, or from a .zip or
        .tar.gz body holding exercise folders. Each version's format is checked at once; a quiz is proven at
        once, a code exercise's proof is queued for the grading sandbox (poll its `version_url`). Publish a
        proven version with POST …/{slug}/publish."""
        course = _course(course_id)
        if request.mimetype in ARCHIVE_TYPES:
            outcomes = _save(course, _archive_folders(), "upload", new=True)
        else:
            try:
                payload = NewExerciseSchema().load(_json_body())
            except ValidationError as exc:
                problem_abort(422, "The body is not a new exercise: see `errors`.",
                              errors=flatten_messages({"json": exc.messages}))
            outcomes = _save(course, {payload["slug"]: payload["files"]}, payload["source"], new=True)
        return {"exercises": [_draft(outcome.exercise, outcome.version) for outcome in outcomes]}


def _json_body() -> Any:
    body = request.get_json(silent=True)
    if body is None:
        problem_abort(400, "The body is not valid JSON.")
    return body


@blp.route(EXERCISE)
class CourseExercise(MethodView):
    @blp.doc(security=BEARER)
    @require_client(allow_learner_token=True, allow_course_staff=True)
    @blp.response(200, CourseExerciseDetailSchema)
    @problems(blp, UNAUTHORIZED, (403, "An API key that is not staff's, or a learner token for another exercise"),
              NO_EXERCISE)
    def get(self, course_id: int, slug: str):
        """For the course's staff: the exercise as its current version shows it to a learner, with its status
        and versions. For a learner of the course (a learner token of it): the learner's detail, as
        GET /api/v1/exercises/{slug} gives it, once published."""
        scope = learner_scope()
        if scope is not None:
            return learner_view(course_id, slug, {})
        if course_staff() is None and not current_client().is_staff:
            problem_abort(403, "This endpoint is for the course's staff and learners.")
        course = _course(course_id)
        summary = _summaries(course.id, _exercise(course, slug).slug)[0]
        exercise = summary.pop("exercise")
        shown = _detail(exercise) if exercise.version.content.get("spec") else {}
        return {"version": exercise.current_version, "topic_names": exercise.topic_names,
                "difficulty": exercise.difficulty, **shown, **summary}

    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(ExerciseFilesSchema)
    @blp.response(201, ExerciseDraftSchema)
    @blp.alt_response(200, schema=ExerciseDraftSchema, description="The files are an existing version's: that version")
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE, *BODY_PROBLEMS, (422, "No files"), RATE_LIMITED)
    def put(self, payload: dict[str, Any], course_id: int, slug: str):
        """A new draft version of the exercise from its files (proven as on POST); the same files as an existing
        version answer that version (200). Learners keep the published version until another is published."""
        course = _course(course_id)
        outcome = _save(course, {slug: payload["files"]}, payload["source"], new=False)[0]
        return _draft(outcome.exercise, outcome.version), 201 if outcome.created else 200

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE,
              (409, "Learners have answered it, or an LTI link places it: unpublish it instead"))
    def delete(self, course_id: int, slug: str):
        """Delete an exercise no learner has answered, with its versions."""
        session = db_session()
        exercise = _exercise(_course(course_id), slug)
        try:
            authoring.delete_exercise(session, exercise)
        except authoring.HasAttempts as exc:
            session.rollback()
            problem_abort(409, str(exc))
        session.commit()


@blp.route(f"{EXERCISE}/versions")
class CourseExerciseVersions(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, VersionSummarySchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE)
    def get(self, course_id: int, slug: str):
        """The exercise's versions, newest first: who wrote each, how (api, upload, dashboard, git), when, its
        proof, and when it was last published."""
        exercise = _exercise(_course(course_id), slug)
        versions = db_session().scalars(select(ExerciseVersion).where(ExerciseVersion.exercise_id == exercise.id)
                                        .order_by(ExerciseVersion.number.desc()))
        return [{"version": v.number, "author": v.author, "source": v.source, "created_at": v.created_at,
                 "proof_status": v.proof_status, "published_at": v.published_at, "note": v.note,
                 "current": v.number == exercise.current_version} for v in versions]


@blp.route(f"{EXERCISE}/versions/<{ROW_ID}:number>")
class CourseExerciseVersion(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, VersionDetailSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No such course, exercise or version"))
    def get(self, course_id: int, slug: str, number: int):
        """One version: its files as written (exercise.toml included) and its proof."""
        version = _version(_exercise(_course(course_id), slug), number)
        return {"version": version.number, "author": version.author, "source": version.source,
                "created_at": version.created_at, "note": version.note, "files": authoring.version_files(version),
                "proof": authoring.ProofView.of(version)}


@blp.route(f"{EXERCISE}/versions/<{ROW_ID}:number>/prove")
class CourseExerciseProof(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(202, ExerciseDraftSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No such course, exercise or version"), RATE_LIMITED)
    def post(self, course_id: int, slug: str, number: int):
        """Prove the version again (after the grader changed, or a proof the workers gave up on): a code
        exercise's proof is queued; a quiz's is done at once."""
        session, course = db_session(), _course(course_id)
        exercise = _exercise(course, slug)
        version = _version(exercise, number)
        refuse_past_limit(PROOF_SCOPE, f"course:{course.id}")
        job = authoring.reprove(session, course, exercise, version, requested_by=staff_actor())
        session.commit()
        _dispatch([job])
        return _draft(exercise, version)


def _not_proven(exc: authoring.NotProven) -> None:
    errors = [{"field": f"{p.file}: {p.field}", "message": p.message} for p in exc.problems]
    problem_abort(409, str(exc), title="Not proven", errors=errors)


@blp.route(f"{EXERCISE}/publish")
class CourseExercisePublish(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(PublishSchema)
    @blp.response(200, CourseExerciseSummarySchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No such course, exercise or version"), *BODY_PROBLEMS,
              (409, "The version is not proven: its proof failed (`errors` lists its problems, each `file: field`) "
                    "or is still queued or running"))
    def post(self, payload: dict[str, Any], course_id: int, slug: str):
        """Publish a proven version (default: the latest): the course's learners get it from now on; their
        attempts keep the version they answered. Publishing an older proven version is the way back."""
        session, course = db_session(), _course(course_id)
        exercise = _exercise(course, slug)
        try:
            authoring.publish(session, exercise, payload.get("version"), actor=staff_actor())
        except authoring.NoSuchVersion as exc:
            problem_abort(404, str(exc))
        except authoring.NotProven as exc:
            _not_proven(exc)
        session.commit()
        return _summaries(course.id, slug)[0]


@blp.route(f"{EXERCISE}/unpublish")
class CourseExerciseUnpublish(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, CourseExerciseSummarySchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_EXERCISE)
    def post(self, course_id: int, slug: str):
        """Hide the exercise from the course's learners (idempotent); its attempts stay. Publish again at will."""
        session, course = db_session(), _course(course_id)
        authoring.unpublish(session, _exercise(course, slug), actor=staff_actor())
        session.commit()
        return _summaries(course.id, slug)[0]


@blp.route(f"{EXERCISE}/diff")
class CourseExerciseDiff(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(DiffQuerySchema, location="query")
    @blp.response(200, DiffSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No such course, exercise or version"),
              (422, "`from` or `to` missing or not a version number"))
    def get(self, query: dict[str, Any], course_id: int, slug: str):
        """What changed between two versions, file by file, as unified diffs."""
        exercise = _exercise(_course(course_id), slug)
        old = authoring.version_files(_version(exercise, query["from_"]))
        new = authoring.version_files(_version(exercise, query["to"]))
        files = []
        for path in sorted(old.keys() | new.keys()):
            if old.get(path) == new.get(path):
                continue
            status = "added" if path not in old else "removed" if path not in new else "changed"
            diff = difflib.unified_diff(old.get(path, "").splitlines(keepends=True),
                                        new.get(path, "").splitlines(keepends=True),
                                        fromfile=f"v{query['from_']}/{path}", tofile=f"v{query['to']}/{path}")
            files.append({"path": path, "status": status, "diff": "".join(diff)})
        return {"from_": query["from_"], "to": query["to"], "files": files}

