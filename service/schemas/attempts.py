from __future__ import annotations

import re
from typing import Any

from marshmallow import EXCLUDE, Schema, fields, validate

from .request import NO_NUL_PATTERN, Pattern, RequestSchema
from .rules import PenaltySchema, StandingSchema

# What a learner id (and a course's external id) may not hold: '/', control characters (C0, DEL,
# C1), the line and paragraph separators (U+2028, U+2029) and format characters: the bidi marks,
# embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069), the
# zero-width ones, the soft hyphen... which make one id look like another, or like none, in the
# dashboard. The format characters of the Basic Multilingual Plane are listed (Unicode's Cf): the
# pattern is also the OpenAPI document's, and a JSON Schema pattern has no \p{Cf}.
_NOT_IN_IDS = (r"/\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
               r"\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb")
LEARNER_CHARACTERS = rf"[^{_NOT_IN_IDS}]{{1,255}}"
# Those characters, and not white space alone.
LEARNER_PATTERN = rf"^(?!\s*$){LEARNER_CHARACTERS}$"
LEARNER_ID_ERROR = ("1-255 characters, not only white space, without '/', control, format (such as bidi) "
                    "or line separator characters")
# The validator of every learner id and course external id a request gives.
LEARNER_ID = Pattern(LEARNER_PATTERN, error=LEARNER_ID_ERROR)
MAX_CODE_CHARS = 64 * 1024


def is_learner_id(value: str) -> bool:
    """Whether `value` is a learner id a request may give (a path's, an LTI launch's sub)."""
    return re.fullmatch(LEARNER_PATTERN, value) is not None


learner_field = fields.String(
    validate=LEARNER_ID,
    metadata={"description": "Your own identifier of the learner (unique within your client). Required with an "
                             "API key; with a learner token, the token's learner (and may be left out)"},
)


class AttemptCreateSchema(RequestSchema):
    """A quiz answer (`answer`) or the source of a Function (`code`), never both."""

    # Added to the OpenAPI component: which one is checked against the exercise's kind.
    JSON_SCHEMA = {"oneOf": [{"required": ["answer"]}, {"required": ["code"]}]}

    learner = learner_field
    answer = fields.Raw(
        allow_none=False,
        metadata={"description": "Quiz kinds: a choice id (single_choice), a list of ids (multiple_choice), "
                                 "a string (short_answer), a number or list of numbers (numeric). Which one "
                                 "the exercise takes is checked when it is submitted (422 invalid-answer)",
                  # Never null; of these shapes only (an object or a boolean fits no kind).
                  "anyOf": [{"type": "string", "pattern": NO_NUL_PATTERN}, {"type": "number"},
                            {"type": "array", "items": {"type": "string", "pattern": NO_NUL_PATTERN}},
                            {"type": "array", "items": {"type": "number"}}]},
    )
    code = fields.String(validate=validate.Length(min=1, max=MAX_CODE_CHARS),
                         metadata={"description": "Code kind: Python source defining the Function"})


# What an AttemptView says itself; every other field is its attempt's column.
_OF_THE_VIEW = frozenset({"exercise.slug", "exercise_version.number", "feedback", "report", "explanation", "standing"})


class AttemptSchema(Schema):
    """An attempt as one reader sees it: an AttemptView (services/standing.py)."""

    id = fields.UUID(required=True)
    exercise = fields.String(required=True, attribute="exercise.slug")
    exercise_version = fields.Integer(required=True, attribute="exercise_version.number",
                                      metadata={"description": "The version of the exercise this attempt answered"})
    learner = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(["queued", "running", "graded", "error"]))
    answer = fields.Raw(allow_none=True, metadata={"description": "The quiz answer as submitted (null for code)"})
    code = fields.String(allow_none=True, metadata={"description": "The submitted source (code exercises)"})
    score = fields.Float(allow_none=True, metadata={
        "description": "0 to 1, null until graded: the score that counts, the grader's (raw_score) with the "
                       "attempt's penalties applied, or an instructor's override"})
    raw_score = fields.Float(allow_none=True, attribute="grader_score", metadata={
        "description": "The grader's score before any penalty (null until graded)"})
    correct = fields.Boolean(allow_none=True)
    attempt_number = fields.Integer(allow_none=True, metadata={
        "description": "Its number among the learner's attempts in this assignment (1, 2, ...)"})
    late = fields.Boolean(metadata={"description": "Submitted after the due date and its grace period"})
    penalties = fields.List(fields.Nested(PenaltySchema), allow_none=True, metadata={
        "description": "The penalties applied to its score (null: none)"})
    feedback = fields.List(fields.Dict(), metadata={
        "description": "Quiz kinds: per-choice or per-answer feedback (a correct choice the learner missed is "
                       "named only once the explanation is shown)"})
    report = fields.Dict(allow_none=True, metadata={
        "description": "Code exercises, once graded: status (passed, failed or a verdict such as timeout), "
                       "checks [{name, weight, passed, message}], diagnostics, captured output, timings. "
                       "status internal_error means the grader failed, not the submission."})
    explanation = fields.String(allow_none=True, metadata={
        "description": "Markdown, once graded and when the rules show it (standing.explanation_shown)"})
    created_at = fields.DateTime(required=True, metadata={"description": "When it was submitted (and queued)"})
    started_at = fields.DateTime(allow_none=True, metadata={"description": "When a worker started grading it"})
    graded_at = fields.DateTime(allow_none=True, metadata={"description": "When its grade (or error) was stored"})
    standing = fields.Nested(StandingSchema, allow_none=True, metadata={
        "description": "Where its learner stands at the exercise (attempts left, due date, penalties): in the "
                       "responses about one attempt; null in lists"})

    def get_attribute(self, obj: Any, attr: str, default: Any) -> Any:
        if attr in _OF_THE_VIEW:
            return super().get_attribute(obj, attr, default)
        return getattr(obj.attempt, attr, default)  # a column: an attribute, never a key


MAX_WAIT_SECONDS = 30


class WaitQuerySchema(RequestSchema):
    wait = fields.Float(load_default=0, validate=validate.Range(min=0, max=MAX_WAIT_SECONDS), metadata={
        "description": f"Hold the request up to this many seconds (at most {MAX_WAIT_SECONDS}) until graded"})


class StandingQuerySchema(RequestSchema):
    learner = fields.String(validate=LEARNER_ID,
                            metadata={"description": "The learner (required with an API key; a learner token names its own)"})


class LearnerAttemptsQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    exercise = fields.String(metadata={"description": "Only attempts at this exercise (slug)"})


class BestScoreSchema(Schema):
    exercise = fields.String(required=True)
    attempts = fields.Integer(required=True)
    best_score = fields.Float(allow_none=True, required=True)
    passed = fields.Boolean(required=True, metadata={"description": "Some attempt was fully correct"})


class LearnerHistorySchema(Schema):
    learner = fields.String(required=True)
    best_scores = fields.List(fields.Nested(BestScoreSchema), required=True,
                              metadata={"description": "One entry per exercise attempted (all pages)"})
    attempts = fields.List(fields.Nested(AttemptSchema), required=True,
                           metadata={"description": "This page of attempts, newest first"})
