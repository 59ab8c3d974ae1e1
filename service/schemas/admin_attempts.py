from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from ..models import AttemptStatus
from ..scores import POLICIES
from ..services.admin_search import DEFAULT_SORT, SORTS
from .attempts import ScoringSchema
from .delivery import OutboundDeliverySchema
from .request import QueryDateTime, RequestSchema
from .rosters import MEMBER_STATUSES

MAX_PAGE_LIMIT = 200
# What a cursor looks like (unpadded base64url); only one this search returned is taken.
CURSOR_PATTERN = "^[A-Za-z0-9_-]+$"
DEFAULT_PAGE_LIMIT = 50
STATUSES = [s.value for s in AttemptStatus]


class QuerySchema(RequestSchema):
    """Query parameters, loaded with unknown=RAISE (a misspelt filter is a 422, never an export
    of everything); a blank value (an empty form field) counts as not given."""

    BLANK_IS_MISSING = True

    @pre_load
    def _drop_blanks(self, data, **_kwargs):
        values = {key: data[key] for key in data}
        values = {key: [v for v in value if v != ""] if isinstance(value, list) else value
                  for key, value in values.items()}
        return {key: value for key, value in values.items() if value not in ("", [])}


class AttemptFiltersSchema(QuerySchema):
    """The filters shared by the search and the CSV export; each narrows, all must hold."""

    exercise = fields.String(validate=validate.Length(min=1, max=64),
                             metadata={"description": "The exercise's slug"})
    learner = fields.String(validate=validate.Length(min=1, max=255),
                            metadata={"description": "The learner id, exactly (under any client unless `client`)"})
    client = fields.String(validate=validate.Length(min=1, max=100),
                           metadata={"description": "The name of the API client the attempts came through"})
    course = fields.Integer(validate=validate.Range(min=1, max=2**31 - 1), metadata={
        "description": "Only this course's attempts (its id, GET /api/v1/admin/courses). A course's own staff "
                       "(course key, LTI staff session) always see their course alone"})
    status = fields.String(validate=validate.OneOf(STATUSES),
                           metadata={"description": "queued, running, graded or error (the grader failed)"})
    verdict = fields.String(validate=validate.Length(min=1, max=32), metadata={
        "description": "passed, failed, or a code verdict: timeout, syntax_error, memory_limit, internal_error…"})
    likely_cause = fields.String(validate=validate.Length(min=1, max=64), metadata={
        "description": "The grader's first likely cause of a failure, e.g. wrong_sign"})
    score_min = fields.Float(validate=validate.Range(min=0, max=1), metadata={
        "description": "Score at least this (ungraded attempts never match); not above score_max (422)"})
    score_max = fields.Float(validate=validate.Range(min=0, max=1),
                             metadata={"description": "Score at most this (ungraded attempts never match)"})
    since = QueryDateTime(metadata={
        "description": "Submitted at or after this time: an RFC 3339 date-time, e.g. 2026-03-01T09:00:00Z, whose "
                       "seconds and offset may be left out (then UTC); not after until (422)"})
    until = QueryDateTime(metadata={
        "description": "Submitted before this time (as since)"})

    @validates_schema
    def _ranges(self, data, **_kwargs):
        if data.get("score_min") is not None and data.get("score_max") is not None \
                and data["score_min"] > data["score_max"]:
            raise ValidationError("score_min is above score_max", field_name="score_min")
        if data.get("since") is not None and data.get("until") is not None and data["since"] > data["until"]:
            raise ValidationError("since is after until", field_name="since")


class AttemptExportQuerySchema(AttemptFiltersSchema):
    sort = fields.String(load_default=DEFAULT_SORT, validate=validate.OneOf(SORTS), metadata={
        "description": "-created_at (newest first, the default), created_at, -score (ungraded last) or score "
                       "(ungraded first); ties go by id"})


class AttemptSearchQuerySchema(AttemptExportQuerySchema):
    limit = fields.Integer(load_default=DEFAULT_PAGE_LIMIT, validate=validate.Range(min=1, max=MAX_PAGE_LIMIT),
                           metadata={"description": f"Attempts per page, 1 to {MAX_PAGE_LIMIT}"})
    cursor = fields.String(validate=validate.Length(min=1, max=512), metadata={
        "pattern": CURSOR_PATTERN,
        "description": "The previous page's next_cursor, with the same sort (and the same filters). Opaque: any "
                       "other value, or one made for another sort, is a 400"})


class GradebookQuerySchema(QuerySchema):
    policy = fields.String(load_default="best", validate=validate.OneOf(POLICIES), metadata={
        "description": "best: each learner's best graded score; latest: the score of their latest graded "
                       "attempt (by submission time)"})
    exercise = fields.List(fields.String(validate=validate.Length(min=1, max=64)), metadata={
        "description": "One column per slug, in this order (repeat the parameter); default: every exercise, "
                       "easiest first"})
    client = fields.String(validate=validate.Length(min=1, max=100),
                           metadata={"description": "Only this API client's learners"})
    course = fields.Integer(validate=validate.Range(min=1, max=2**31 - 1), metadata={
        "description": "Only this course's attempts (its id, GET /api/v1/admin/courses). A course's own staff "
                       "(course key, LTI staff session) always see their course alone"})


class AttemptSummarySchema(Schema):
    id = fields.UUID(required=True)
    exercise = fields.String(required=True, metadata={"description": "The exercise's slug"})
    exercise_version = fields.Integer(required=True, metadata={"description": "The version the attempt answered"})
    client = fields.String(required=True, metadata={"description": "The API client it came through"})
    learner = fields.String(required=True)
    learner_name = fields.String(required=True, allow_none=True, metadata={
        "description": "The learner's name in the attempt's course, from the LMS's roster (NRPS) or their own "
                       "launch; null where neither names them"})
    learner_email = fields.String(required=True, allow_none=True,
                                  metadata={"description": "Their e-mail, only where the LMS shares it"})
    learner_status = fields.String(required=True, allow_none=True, validate=validate.OneOf(MEMBER_STATUSES), metadata={
        "description": "active, or left: they left the course (the LMS's roster no longer has them); null where "
                       "the course has no member row for them"})
    status = fields.String(required=True, validate=validate.OneOf(STATUSES))
    verdict = fields.String(allow_none=True, required=True)
    likely_cause = fields.String(allow_none=True, required=True)
    score = fields.Float(allow_none=True, required=True, metadata={"description": "The score that counts"})
    grader_score = fields.Float(allow_none=True, required=True,
                                metadata={"description": "The grader's score, kept under an override"})
    overridden = fields.Boolean(required=True)
    correct = fields.Boolean(allow_none=True)
    created_at = fields.DateTime(required=True)
    started_at = fields.DateTime(allow_none=True)
    graded_at = fields.DateTime(allow_none=True)


class AttemptPageSchema(Schema):
    items = fields.List(fields.Nested(AttemptSummarySchema), required=True)
    next_cursor = fields.String(allow_none=True, required=True, metadata={
        "description": "Pass as ?cursor= for the next page (with the same sort and filters); null: the last page"})


class CheckSchema(Schema):
    name = fields.String(required=True)
    weight = fields.Float(required=True)
    passed = fields.Boolean(required=True)
    message = fields.String(required=True)
    likely_cause = fields.String(allow_none=True)
    torch_message = fields.String(allow_none=True)


class OutputSchema(Schema):
    stdout = fields.String(required=True)
    stderr = fields.String(required=True)
    truncated = fields.Boolean()


class TimingsSchema(Schema):
    created_at = fields.DateTime(required=True, metadata={"description": "Submitted (and queued)"})
    started_at = fields.DateTime(allow_none=True, metadata={"description": "A worker started grading it"})
    graded_at = fields.DateTime(allow_none=True, metadata={"description": "Its grade (or error) was stored"})
    queued_ms = fields.Float(allow_none=True, metadata={"description": "started_at - created_at"})
    grading_ms = fields.Float(allow_none=True, metadata={"description": "graded_at - started_at"})
    report = fields.Dict(required=True, metadata={
        "description": "The judge's own timings (code): child_ms, judge_ms, wait_slot_ms, total_ms…"})


class PassbackStateSchema(OutboundDeliverySchema):
    event_id = fields.Integer(required=True)
    link_id = fields.Integer(required=True)
    sent_score = fields.Dict(allow_none=True, metadata={"description": "The AGS score last sent"})


class DeliveryStateSchema(OutboundDeliverySchema):
    endpoint_id = fields.Integer(required=True)
    event_id = fields.Integer(required=True, metadata={"description": "The event's id (see events)"})
    event_type = fields.String(required=True)


class OverrideEntrySchema(Schema):
    id = fields.Integer(required=True)
    actor = fields.String(required=True)
    old_score = fields.Float(allow_none=True, required=True)
    new_score = fields.Float(required=True)
    reason = fields.String(required=True)
    learner_comment = fields.String(required=True, allow_none=True, metadata={"description": "What the learner was told"})
    created_at = fields.DateTime(required=True)


class EventSchema(Schema):
    id = fields.Integer(required=True)
    type = fields.String(required=True, metadata={"description": "attempt.graded, attempt.regraded, attempt.overridden"})
    created_at = fields.DateTime(required=True)
    data = fields.Dict(required=True, metadata={"description": "The grade as the event saw it: status, score, correct"})


class AttemptDetailSchema(AttemptSummarySchema):
    scoring = fields.Nested(ScoringSchema, allow_none=True, metadata={
        "description": "The scoring policy that made grader_score from its grade (null: made before policies, partial)"})
    exercise_kind = fields.String(required=True)
    exercise_version_digest = fields.String(required=True,
                                            metadata={"description": "SHA-256 of the exercise version's files"})
    tries = fields.Integer(required=True, metadata={"description": "Times a grading worker claimed it"})
    lti_link_id = fields.Integer(allow_none=True)
    request_id = fields.String(allow_none=True, metadata={
        "description": "X-Request-Id of the request that submitted it: its web and worker log lines carry it"})
    answer = fields.Raw(allow_none=True, metadata={"description": "The quiz answer as submitted (null for code)"})
    code = fields.String(allow_none=True, metadata={"description": "The submitted source (code exercises)"})
    report_status = fields.String(allow_none=True, metadata={
        "description": "Code: the report's status (passed, failed, timeout, syntax_error, internal_error…)"})
    grader_version = fields.String(allow_none=True)
    checks = fields.List(fields.Nested(CheckSchema), required=True,
                         metadata={"description": "Code: every check with its weight, result and message"})
    likely_causes = fields.List(fields.String(), required=True)
    diagnostics = fields.List(fields.Dict(), required=True, metadata={
        "description": "Code: the failing input, worst element, numerical and analytical values"})
    error = fields.Dict(allow_none=True, metadata={"description": "Code: the exception the learner's code raised"})
    feedback = fields.List(fields.Raw(), required=True,
                           metadata={"description": "Quiz: per-choice feedback; code: advice per likely cause"})
    output = fields.Nested(OutputSchema, allow_none=True,
                           metadata={"description": "Code: the child's stdout and stderr (capped)"})
    timings = fields.Nested(TimingsSchema, required=True)
    events = fields.List(fields.Nested(EventSchema), required=True)
    webhook_deliveries = fields.List(fields.Nested(DeliveryStateSchema), required=True)
    passbacks = fields.List(fields.Nested(PassbackStateSchema), required=True,
                            metadata={"description": "Scores sent to the LMS (attempts made through LTI)"})
    overrides = fields.List(fields.Nested(OverrideEntrySchema), required=True,
                            metadata={"description": "Manual overrides of its score, oldest first"})
