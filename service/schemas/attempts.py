from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, Schema, fields, validate

from ..learner_ids import LEARNER_ID_ERROR, LEARNER_PATTERN
from ..rules import SCORING_POLICIES
from .diagnosis import DiagnosisSchema, attempt_diagnosis
from .request import NO_NUL_PATTERN, Pattern, RequestSchema
from .rules import PenaltySchema, StandingSchema

# The validator of every learner id and course external id a request gives.
LEARNER_ID = Pattern(LEARNER_PATTERN, error=LEARNER_ID_ERROR)
MAX_CODE_CHARS = 64 * 1024

learner_field = fields.String(
    validate=LEARNER_ID,
    metadata={"description": "Your own identifier of the learner (unique within your client). Required with an "
                             "API key; with a learner token, the token's learner (and may be left out)"},
)


def _answer(*, required: bool = False) -> fields.Raw:
    return fields.Raw(
        required=required, allow_none=False,
        metadata={"description": "Quiz kinds: a choice id (single_choice), a list of ids (multiple_choice), "
                                 "a string (short_answer), a number or list of numbers (numeric). Which one "
                                 "the exercise takes is checked when it is submitted (422 invalid-answer)",
                  # Never null; of these shapes only (an object or a boolean fits no kind).
                  "anyOf": [{"type": "string", "pattern": NO_NUL_PATTERN}, {"type": "number"},
                            {"type": "array", "items": {"type": "string", "pattern": NO_NUL_PATTERN}},
                            {"type": "array", "items": {"type": "number"}}]},
    )


def _code(*, required: bool = False) -> fields.String:
    return fields.String(required=required, validate=validate.Length(min=1, max=MAX_CODE_CHARS),
                         metadata={"description": "Code kind: Python source defining the Function"})


class QuizAttemptCreateSchema(RequestSchema):
    """A quiz answer."""

    learner = learner_field
    answer = _answer(required=True)


class CodeAttemptCreateSchema(RequestSchema):
    """The source of a Function, for a code exercise."""

    learner = learner_field
    code = _code(required=True)


class AttemptCreateSchema(RequestSchema):
    """A quiz answer (`answer`) or the source of a Function (`code`), never both.

    The document gives the body as one of ONE_OF, so that a generated client has a type for each;
    the server checks it with this one schema, where both fields are optional: which one is
    missing is known only from the exercise's kind (422 invalid-answer, json.answer or json.code)."""

    ONE_OF = (QuizAttemptCreateSchema, CodeAttemptCreateSchema)

    learner = learner_field
    answer = _answer()
    code = _code()


# What an AttemptView says itself; every other field is its attempt's column.
_OF_THE_VIEW = frozenset({"exercise.slug", "exercise_version.number", "feedback", "report", "explanation", "standing",
                          "scoring"})


class ScoringSchema(Schema):
    """The scoring policy an attempt was graded under (the `scoring` rule when it was submitted) and
    what it did to the score."""

    policy = fields.String(required=True, validate=validate.OneOf(SCORING_POLICIES), metadata={
        "description": "partial (the passed checks' weights added up), all_or_nothing (1 when every check "
                       "passed or the answer is correct, else 0) or gate (partial, but at most `cap` when a "
                       "check of backward failed)"})
    cap = fields.Float(required=True, allow_none=True, metadata={
        "description": "gate, code exercises: the most an attempt whose backward failed a check scores; null otherwise"})
    capped = fields.Boolean(required=True, metadata={
        "description": "The policy made raw_score lower than checks_score"})
    checks_score = fields.Float(required=True, allow_none=True, metadata={
        "description": "The score before the policy: the weights of the passed checks added up (the report's "
                       "score), or a quiz answer's own score; null until graded"})


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
        "description": "The grader's score before any penalty, under the attempt's scoring policy (`scoring`; "
                       "null until graded)"})
    correct = fields.Boolean(allow_none=True)
    attempt_number = fields.Integer(allow_none=True, metadata={
        "description": "Its number among the learner's attempts in this assignment (1, 2, ...)"})
    late = fields.Boolean(metadata={"description": "Submitted after the due date and its grace period"})
    penalties = fields.List(fields.Nested(PenaltySchema), allow_none=True, metadata={
        "description": "The penalties applied to its score (null: none)"})
    scoring = fields.Nested(ScoringSchema, allow_none=True, metadata={
        "description": "The scoring policy that made raw_score from its grade (null: an attempt made before "
                       "scoring policies, graded as partial)"})
    feedback = fields.List(fields.Dict(), metadata={
        "description": "Quiz kinds: per-choice or per-answer feedback (a correct choice the learner missed is "
                       "named only once the explanation is shown)"})
    report = fields.Dict(allow_none=True, metadata={
        "description": "Code exercises, once graded: status (passed, failed or a verdict such as timeout), "
                       "checks [{name, weight, passed, message}], diagnostics, captured output, timings. "
                       "status internal_error means the grader failed, not the submission."})
    diagnosis = fields.Nested(DiagnosisSchema, allow_none=True, metadata={
        "description": "Code exercises, once graded: what the result opens with, made from the report (one verdict "
                       "line, the likely cause with what to do, one failing case in the learner's terms); null for "
                       "quiz kinds and until graded"})
    explanation = fields.String(allow_none=True, metadata={
        "description": "Markdown, once graded and when the rules show it (standing.explanation_shown)"})
    created_at = fields.DateTime(required=True, metadata={"description": "When it was submitted (and queued)"})
    started_at = fields.DateTime(allow_none=True, metadata={"description": "When a worker started grading it"})
    graded_at = fields.DateTime(allow_none=True, metadata={"description": "When its grade (or error) was stored"})
    standing = fields.Nested(StandingSchema, allow_none=True, metadata={
        "description": "Where its learner stands at the exercise (attempts left, due date, penalties): in the "
                       "responses about one attempt; null in lists"})

    def get_attribute(self, obj: Any, attr: str, default: Any) -> Any:
        if attr == "diagnosis":
            return attempt_diagnosis(obj.attempt, obj.report)
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


class LearnerQuerySchema(StandingQuerySchema):
    """The learner whose attempts a page lists (required with an API key; a learner token names its own)."""

    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator


class LearnerAttemptsQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    exercise = fields.String(metadata={"description": "Only attempts at this exercise (slug)"})


class BestScoreSchema(Schema):
    exercise = fields.String(required=True)
    attempts = fields.Integer(required=True)
    best_score = fields.Float(allow_none=True, required=True)
    passed = fields.Boolean(required=True, metadata={"description": "Some attempt was fully correct"})


class ListedAttemptDumps(fields.Nested):
    """AttemptSchema's dump of a listed attempt's view, made once per process for each version of
    its row (services/versions.py row_version) and what its reader is shown of it: the dump is
    its row's values, its version's content (never changed), its exercise's slug and whether the
    explanation is shown, so a version of the row dumps the same until it is written again. The
    learner page reloads the history after each submission, with one new attempt among those it
    showed; marshmallow's dump was a fifth of a history's CPU (issue 37). A row without a version
    (SQLite) is dumped each time. At most `max_entries` dumps, past which it starts again empty:
    a quiz attempt's dump holds 2.5-5 KB, a code attempt's its source and report besides (their
    JSON 2-3.5 KB for ClampFn), so some 5-10 MB in each web process, whose target is 100 MB."""

    def __init__(self, *args: Any, max_entries: int = 1_024, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_entries = max_entries
        self._dumps: dict[tuple[Any, ...], Any] = {}

    # Nested names its first argument unlike Field does: no signature satisfies both for mypy.
    def _serialize(self, nested_obj: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        attempt = nested_obj.attempt  # an AttemptView (services/standing.py)
        version = getattr(attempt, "row_version", None)
        if version is None or nested_obj.standing is not None:
            return super()._serialize(nested_obj, attr, obj, **kwargs)
        key = (attempt.id, version, nested_obj.explanation_shown, nested_obj.exercise.slug, nested_obj.exercise_version.id)
        dumped = self._dumps.get(key)
        if dumped is None:
            dumped = super()._serialize(nested_obj, attr, obj, **kwargs)
            if len(self._dumps) >= self.max_entries:
                self._dumps = {}
            self._dumps[key] = dumped
        return dumped


class LearnerHistorySchema(Schema):
    learner = fields.String(required=True)
    best_scores = fields.List(fields.Nested(BestScoreSchema), required=True,
                              metadata={"description": "One entry per exercise attempted (all pages)"})
    attempts = fields.List(ListedAttemptDumps(AttemptSchema), required=True,
                           metadata={"description": "This page of attempts, newest first"})
