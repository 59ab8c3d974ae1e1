"""Staff: search attempts, one attempt in full, CSV exports."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

from flask import Response, stream_with_context
from flask.views import MethodView
from marshmallow import RAISE

from ..auth import BEARER, require_staff
from ..errors import VALIDATION_ERROR, problem_abort
from ..extensions import db_session
from ..schemas.admin_attempts import (
    CURSOR_PATTERN,
    AttemptDetailSchema,
    AttemptExportQuerySchema,
    AttemptPageSchema,
    AttemptSearchQuerySchema,
    GradebookQuerySchema,
)
from ..services import admin_detail, admin_export, admin_search
from .blueprint import Blueprint
from .course_scope import NO_COURSE, course_asked, request_audience
from .docs import STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("admin_attempts", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: search attempts, one attempt in full, CSV exports.")
INVALID_QUERY = (422, "A query parameter is unknown or out of range")
CURSOR = re.compile(CURSOR_PATTERN)
CSV_RESPONSE = {"type": "string", "description": "text/csv; charset=utf-8, RFC 4180, CRLF line ends"}


def _csv_response(chunks: Iterator[str], name: str) -> Response:
    """Sent as it is produced: the rows come through a server-side cursor and are never all in
    memory (stream_with_context keeps the request's database session open until the end)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    response = Response(stream_with_context(chunks), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.csv"'
    response.headers["Cache-Control"] = "no-store"
    # Proxies (nginx) should pass chunks on as they come instead of buffering the whole export.
    response.headers["X-Accel-Buffering"] = "no"
    return response


def _filters(query: dict) -> admin_search.AttemptFilters:
    """The query's filters, limited to the caller's course when they are a course's staff."""
    return admin_search.AttemptFilters.from_query({**query, "course": course_asked(query.get("course"))})


@blp.route("/attempts")
class AdminAttempts(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(AttemptSearchQuerySchema, location="query", unknown=RAISE)
    @blp.response(200, AttemptPageSchema)
    @problems(blp, (400, "The cursor is not one this API made, or was made for another sort"), UNAUTHORIZED,
              STAFF_ONLY, INVALID_QUERY, NO_COURSE)
    def get(self, query):
        """Search attempts: filters, a sort, and keyset pages (a page costs the same however deep).

        Follow `next_cursor` for the next page, with the same sort and filters."""
        cursor = query.get("cursor")
        try:
            if cursor is not None and not CURSOR.fullmatch(cursor):
                # base64's decoder skips what is not of its alphabet: a made cursor with junk in it
                # would pass, and the document's pattern would not.
                raise admin_search.InvalidCursor("not a cursor returned by this API")
            page = admin_search.search(db_session(), _filters(query),
                                       sort=query["sort"], limit=query["limit"], cursor=cursor)
        except admin_search.InvalidCursor as exc:
            problem_abort(400, f"Invalid cursor: {exc}.", type=VALIDATION_ERROR,
                          errors=[{"field": "query.cursor", "message": str(exc)}])
        return {"items": page.items, "next_cursor": page.next_cursor}


@blp.route("/attempts/<uuid:attempt_id>")
class AdminAttemptDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, AttemptDetailSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (404, "No attempt with this id"))
    def get(self, attempt_id: uuid.UUID):
        """One attempt in full: what was submitted, every check with its message, the output,
        the phase and grader timings, the exercise version, and what became of the grade
        (events, webhook deliveries, LMS passbacks, overrides)."""
        detail = admin_detail.attempt_detail(db_session(), attempt_id, course_asked(None))
        if detail is None:
            problem_abort(404, "No attempt with this id.")
        return detail


@blp.route("/attempts.csv")
class AttemptsCsv(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(AttemptExportQuerySchema, location="query", unknown=RAISE)
    @blp.response(200, CSV_RESPONSE, content_type="text/csv", description=(
        "One row per attempt: " + ", ".join(admin_export.ATTEMPT_CSV_COLUMNS)))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, INVALID_QUERY, NO_COURSE)
    def get(self, query):
        """Every attempt matching the filters (those of the search), as CSV, streamed."""
        filters = _filters(query)
        return _csv_response(admin_export.attempts_csv(db_session(), filters, query["sort"]), "attempts")


@blp.route("/gradebook.csv")
class GradebookCsv(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(GradebookQuerySchema, location="query", unknown=RAISE)
    @blp.response(200, CSV_RESPONSE, content_type="text/csv",
                  description="client, learner, then one column per exercise slug: the score, empty when none")
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, (422, "An unknown exercise slug or policy"), NO_COURSE)
    def get(self, query):
        """The gradebook as CSV, streamed: one row per (client, learner), one column per exercise,
        the best score or the latest graded attempt's."""
        session = db_session()
        slugs = query.get("exercise")
        try:
            exercises = admin_export.gradebook_exercises(session, slugs, request_audience())
        except admin_export.UnknownExercises as exc:
            problem_abort(422, f"Unknown exercise: {', '.join(exc.slugs)}.", title="Validation failed",
                          type=VALIDATION_ERROR,
                          errors=[{"field": "query.exercise", "message": f"no exercise {slug!r}"} for slug in exc.slugs])
        chunks = admin_export.gradebook_csv(session, exercises, query["policy"], query.get("client"),
                                            all_exercises=not slugs, course_id=course_asked(query.get("course")))
        return _csv_response(chunks, f"gradebook-{query['policy']}")
