"""The assessment rules as staff and exercise authors write them: one schema for an exercise.toml
[rules] table (service/catalog/loader.py), the admin API's body, and its documentation."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from ..rules import LATE_POLICIES, SHOW_EXPLANATION
from .request import RequestSchema

FRACTION = validate.Range(min=0, max=1)


class RulesSchema(RequestSchema):
    """Every key is optional: a layer sets only what it changes (service/rules.py)."""

    max_attempts = fields.Integer(allow_none=True, validate=validate.Range(min=1, max=1000), metadata={
        "description": "Attempts a learner has (null: unlimited). Attempts the grader failed on are not counted."})
    attempt_penalty = fields.Float(validate=FRACTION, metadata={
        "description": "The fraction of the score taken off per attempt after the first: 0.1 counts the second "
                       "attempt at most 90%, the third 80%. Not with attempt_maxima."})
    attempt_maxima = fields.List(fields.Float(validate=FRACTION), allow_none=True,
                                 validate=validate.Length(min=1, max=100), metadata={
        "description": "The most each attempt counts, in order, as fractions (the last stands for every later "
                       "attempt): [1, 0.8, 0.5]. Not with attempt_penalty."})
    available_from = fields.AwareDateTime(allow_none=True, metadata={
        "description": "When attempts open (ISO 8601 with a time zone). The LMS's date wins where it sends one."})
    due_at = fields.AwareDateTime(allow_none=True, metadata={
        "description": "The due date (ISO 8601 with a time zone). The LMS's date wins where it sends one; a learner's "
                       "extension wins over both."})
    grace_minutes = fields.Integer(validate=validate.Range(min=0, max=7 * 24 * 60), metadata={
        "description": "Minutes after due_at during which an attempt is still on time"})
    late = fields.String(validate=validate.OneOf(LATE_POLICIES), metadata={
        "description": "After due_at (and the grace): refuse attempts, or accept them marked late (with late_penalty)"})
    late_penalty = fields.Float(validate=FRACTION, metadata={
        "description": "With late = accept: the fraction taken off a late attempt's score"})
    show_explanation = fields.String(validate=validate.OneOf(SHOW_EXPLANATION), metadata={
        "description": "When the explanation (for code, the walk-through of the reference) is shown to a learner: "
                       "always (once graded), after_pass (once they passed, or can no longer submit), "
                       "after_attempts (once they can no longer submit), after_due (once the due date and grace "
                       "passed)"})
    runs = fields.Boolean(metadata={"description": "Whether the exercise page's Run is allowed (code exercises)"})
    max_runs = fields.Integer(allow_none=True, validate=validate.Range(min=0, max=100_000), metadata={
        "description": "Runs a learner has at this exercise (null: unlimited)"})

    @pre_load
    def _toml_datetimes(self, data: Any, **_kwargs: Any) -> Any:
        # exercise.toml writes dates as TOML datetimes: read them as the API's ISO strings.
        if isinstance(data, dict):
            return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in data.items()}
        return data

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if "attempt_maxima" in data and "attempt_penalty" in data:
            raise ValidationError("Give attempt_penalty or attempt_maxima, not both.", "attempt_maxima")
        opens, due = data.get("available_from"), data.get("due_at")
        if opens is not None and due is not None and opens >= due:
            raise ValidationError("Must be before due_at.", "available_from")


def rules_json(loaded: dict[str, Any]) -> dict[str, Any]:
    """A loaded rules layer as stored (JSON): dates as ISO strings."""
    return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in loaded.items()}


class RulesOutSchema(Schema):
    """Rules in force (every key), as the API shows them."""

    max_attempts = fields.Integer(allow_none=True, required=True)
    attempt_penalty = fields.Float(required=True)
    attempt_maxima = fields.List(fields.Float(), allow_none=True, required=True)
    available_from = fields.DateTime(allow_none=True, required=True)
    due_at = fields.DateTime(allow_none=True, required=True)
    grace_minutes = fields.Integer(required=True)
    late = fields.String(required=True, validate=validate.OneOf(LATE_POLICIES))
    late_penalty = fields.Float(required=True)
    show_explanation = fields.String(required=True, validate=validate.OneOf(SHOW_EXPLANATION))
    runs = fields.Boolean(required=True)
    max_runs = fields.Integer(allow_none=True, required=True)


class PenaltySchema(Schema):
    reason = fields.String(required=True, validate=validate.OneOf(["attempt", "late"]), metadata={
        "description": "attempt: the attempt's number (attempt_penalty, attempt_maxima); late: after the due date"})
    factor = fields.Float(required=True, metadata={"description": "The score counts this fraction of the grader's"})


class RefusalSchema(Schema):
    reason = fields.String(required=True, metadata={
        "description": "not-open-yet, past-due, no-attempts-left (and for runs runs-not-allowed, no-runs-left): "
                       "the last part of the refusal's problem type"})
    message = fields.String(required=True)


class StandingSchema(Schema):
    """Where the learner stands at the exercise, in the assignment the request is for."""

    rules = fields.Nested(RulesOutSchema, required=True, metadata={"description": "The rules in force for them"})
    attempts_used = fields.Integer(required=True, metadata={
        "description": "Attempts that count toward max_attempts (not those the grader failed on)"})
    attempts_left = fields.Integer(allow_none=True, required=True, metadata={"description": "null: unlimited"})
    passed = fields.Boolean(required=True, metadata={"description": "One of their attempts passed"})
    late = fields.Boolean(required=True, attribute="late_now", metadata={
        "description": "An attempt submitted now is late (after due_at and the grace period)"})
    next_penalties = fields.Method("_next_penalties", required=True, metadata={
        "description": "The penalties an attempt submitted now takes ([{reason, factor}])",
        "type": "array", "items": {"type": "object"}})
    refused = fields.Method("_refused", required=True, allow_none=True, metadata={
        "description": "Why an attempt submitted now would be refused ({reason, message}); null: it is accepted",
        "type": "object", "nullable": True})
    explanation_shown = fields.Method("_explanation_shown", required=True, metadata={
        "description": "Whether the explanation is shown to them now (rules.show_explanation)", "type": "boolean"})

    def _next_penalties(self, standing: Any) -> list[dict[str, Any]]:
        return [p.as_json() for p in standing.penalties()]

    def _refused(self, standing: Any) -> dict[str, Any] | None:
        refusal = standing.refusal()
        return None if refusal is None else {"reason": refusal.reason, "message": refusal.message}

    def _explanation_shown(self, standing: Any) -> bool:
        return bool(standing.explanation_shown())


class ExtensionSetSchema(RequestSchema):
    rules = fields.Nested(RulesSchema, required=True, metadata={
        "description": "What this learner's rules change (due_at, max_attempts, ...); the rest is the assignment's"})
    note = fields.String(validate=validate.Length(min=1, max=2000), metadata={
        "description": "Why (staff only: never shown to the learner)"})


class ExtensionSchema(Schema):
    learner = fields.String(required=True)
    rules = fields.Dict(required=True, metadata={"description": "What the extension sets"})
    note = fields.String(allow_none=True, required=True)
    updated_by = fields.String(required=True)
    updated_at = fields.DateTime(required=True)
    in_force = fields.Nested(RulesOutSchema, required=True, metadata={"description": "The learner's rules in force"})


class AssignmentRulesSchema(Schema):
    """An assignment's rules, layer by layer (later ones win): the exercise's defaults, what staff
    set for the assignment, the dates the LMS sent; and each learner's extension over them."""

    exercise = fields.String(required=True)
    link = fields.Integer(allow_none=True, required=True, attribute="link_id", metadata={
        "description": "The LTI resource link (null: the client's own use of the exercise through the REST API)"})
    client = fields.Integer(required=True, attribute="client_id")
    defaults = fields.Dict(required=True, metadata={"description": "The exercise's [rules] in exercise.toml"})
    assignment = fields.Dict(allow_none=True, required=True, metadata={"description": "What staff set here"})
    updated_by = fields.String(allow_none=True, required=True)
    updated_at = fields.DateTime(allow_none=True, required=True)
    lms = fields.Dict(keys=fields.String(), values=fields.DateTime(), required=True, metadata={
        "description": "The dates the LMS sent at the latest launch ({available_from, due_at}); they win over "
                       "what staff set"})
    lms_learners = fields.Dict(keys=fields.String(), values=fields.Dict(keys=fields.String(), values=fields.DateTime()),
                               required=True, metadata={
        "description": "The dates the LMS sent learners at their own launches, where it sends each their own "
                       "(Canvas: section and student overrides): {learner: {available_from, due_at}}; over the "
                       "assignment's for that learner, under an extension"})
    in_force = fields.Nested(RulesOutSchema, required=True, metadata={"description": "The assignment's rules in force"})
    extensions = fields.List(fields.Nested(ExtensionSchema), required=True)


class LinkSummarySchema(Schema):
    id = fields.Integer(required=True)
    platform = fields.String(required=True, attribute="platform.name")
    context_id = fields.String(allow_none=True, required=True, metadata={"description": "The course, in the LMS"})
    resource_link_id = fields.String(required=True)
    exercise = fields.String(required=True, attribute="exercise.slug")
    lms_available_from = fields.DateTime(allow_none=True, required=True)
    lms_due_at = fields.DateTime(allow_none=True, required=True)
    updated_at = fields.DateTime(required=True, metadata={"description": "Its latest launch"})


class LinksQuerySchema(RequestSchema):
    class Meta:
        unknown = "exclude"  # page and page_size are read by the pagination decorator

    exercise = fields.String(validate=validate.Length(min=1, max=64), metadata={
        "description": "Only the links to this exercise (slug)"})
