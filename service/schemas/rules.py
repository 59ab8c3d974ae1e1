"""The assessment rules in the API: the rule table (service/rules.py's, for the pages), the body
staff send (the layer schema of service/rule_schemas.py, which exercise.toml's [rules] table is
checked with too), the rules in force, the learner's standing, and a counting scope's layers (one
exercise of an LTI link, or a client's own use of an exercise)."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from ..rule_schemas import RulesLayerSchema, RulesOutSchema
from ..rules import KINDS
from .request import RequestSchema

# A rule's value, default or choice: a number, a string, true or false, a list of numbers, or null.
RULE_VALUE = {"type": ["number", "string", "boolean", "array", "null"], "items": {"type": "number"}}


class RulesSchema(RequestSchema, RulesLayerSchema):
    """A rules layer as the admin API takes it (service/rule_schemas.py's RulesLayerSchema, with no NUL in it)."""


class RuleChoiceSchema(Schema):
    value = fields.Raw(required=True, metadata={"description": "The value (a string, or for a switch true or false)",
                                                "type": ["string", "boolean"]})
    label = fields.String(required=True, metadata={"description": "Its words, for staff"})
    learner = fields.String(allow_none=True, required=True, metadata={
        "description": "The sentence a learner's page says of it (null: it says nothing)"})


class RuleDescriptionSchema(Schema):
    """One assessment rule, as a page names and explains it."""

    name = fields.String(required=True, metadata={"description": "Its key in a rules object"})
    kind = fields.String(required=True, validate=validate.OneOf(KINDS), metadata={
        "description": "count: a whole number in [minimum, maximum]; fraction: a number in [0, 1]; fractions: a "
                       "list of those, its length in [minimum, maximum]; datetime: ISO 8601 with a time zone; "
                       "choice: one of the choices' values; switch: true or false"})
    default = fields.Raw(allow_none=True, required=True, metadata={
        "description": "Its value where no layer sets it", **RULE_VALUE})
    label = fields.String(required=True, metadata={"description": "Its name, for staff"})
    help = fields.String(required=True, metadata={"description": "What it does, for staff"})
    nullable = fields.Boolean(required=True, metadata={"description": "A layer may set it to null"})
    none = fields.String(required=True, metadata={"description": "What null means for it, in words"})
    minimum = fields.Integer(required=True)
    maximum = fields.Integer(allow_none=True, required=True)
    choices = fields.List(fields.Nested(RuleChoiceSchema), required=True, metadata={
        "description": "A choice's or a switch's values, in the order to offer them"})
    set_by = fields.List(fields.String(), required=True, metadata={
        "description": "The layers that may set it (the vocabulary's layers)"})
    learner_term = fields.String(allow_none=True, required=True, metadata={
        "description": "The term a learner's page shows its choice's sentence under (null: none)"})


class LayerDescriptionSchema(Schema):
    name = fields.String(required=True)
    description = fields.String(required=True)


class RuleVocabularySchema(Schema):
    """Every assessment rule and layer, in order: what the dashboard and the learner pages name and
    explain them with."""

    rules = fields.List(fields.Nested(RuleDescriptionSchema), required=True)
    layers = fields.List(fields.Nested(LayerDescriptionSchema), required=True, metadata={
        "description": "The layers of rules, in the order they apply: later ones win, rule by rule"})


class RuleNoteSchema(Schema):
    term = fields.String(required=True)
    text = fields.String(required=True)


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
    """Where the learner stands at the exercise, in the counting scope the request is for."""

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
    rule_notes = fields.List(fields.Nested(RuleNoteSchema), required=True, attribute="rules.learner_notes", metadata={
        "description": "What a learner's page says of the rules in force, in words: {term: \"Explanation\", text: "
                       "\"The explanation is shown once you can no longer submit.\"}"})

    def _next_penalties(self, standing: Any) -> list[dict[str, Any]]:
        return [p.as_json() for p in standing.penalties()]

    def _refused(self, standing: Any) -> dict[str, Any] | None:
        refusal = standing.refusal()
        return None if refusal is None else {"reason": refusal.reason, "message": refusal.message}

    def _explanation_shown(self, standing: Any) -> bool:
        return bool(standing.explanation_shown())


class ExtensionSetSchema(RequestSchema):
    rules = fields.Nested(RulesSchema, required=True, metadata={
        "description": "What this learner's rules change (due_at, max_attempts, ...); the rest is as for every learner here"})
    note = fields.String(validate=validate.Length(min=1, max=2000), metadata={
        "description": "Why (staff only: never shown to the learner)"})


class ExtensionSchema(Schema):
    learner = fields.String(required=True)
    rules = fields.Dict(required=True, metadata={"description": "What the extension sets"})
    note = fields.String(allow_none=True, required=True)
    updated_by = fields.String(required=True)
    updated_at = fields.DateTime(required=True)
    in_force = fields.Nested(RulesOutSchema, required=True, metadata={"description": "The learner's rules in force"})


class ScopeRulesSchema(Schema):
    """The rules of one exercise of an LTI link, or of a client's own use of an exercise, layer by
    layer (later ones win): the exercise's defaults, what staff set here, the dates the LMS sent;
    and each learner's extension over them."""

    exercise = fields.String(required=True)
    link = fields.Integer(allow_none=True, required=True, attribute="link_id", metadata={
        "description": "The LTI resource link (null: the client's own use of the exercise through the REST API)"})
    link_exercises = fields.List(fields.String(), required=True, metadata={
        "description": "The link's exercises in order (empty: no link): each has rules of its own, at "
                       "/admin/links/{link_id}/exercises/{slug}/rules"})
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
                       "link's for that learner, under an extension"})
    in_force = fields.Nested(RulesOutSchema, required=True, metadata={"description": "The rules in force here"})
    extensions = fields.List(fields.Nested(ExtensionSchema), required=True)


class LinkSummarySchema(Schema):
    id = fields.Integer(required=True)
    platform = fields.String(required=True, attribute="platform.name")
    context_id = fields.String(allow_none=True, required=True, metadata={"description": "The course, in the LMS"})
    course_id = fields.Integer(allow_none=True, required=True, metadata={"description": "The course, here"})
    course_title = fields.Function(lambda link: link.course.title if link.course is not None else None,
                                   allow_none=True, required=True, metadata={"type": ["string", "null"]})
    resource_link_id = fields.String(required=True)
    exercise = fields.String(required=True, attribute="exercise.slug", metadata={
        "description": "The exercise the link opens (its first, for a link of several)"})
    exercises = fields.Function(lambda link: [exercise.slug for exercise, _ in link.exercise_points()], required=True,
                                metadata={"type": "array", "items": {"type": "string"},
                                          "description": "The link's exercises in order, each with rules of its own"})
    lms_available_from = fields.DateTime(allow_none=True, required=True)
    lms_due_at = fields.DateTime(allow_none=True, required=True)
    updated_at = fields.DateTime(required=True, metadata={"description": "Its latest launch"})


class LinksQuerySchema(RequestSchema):
    class Meta:
        unknown = "exclude"  # page and page_size are read by the pagination decorator

    exercise = fields.String(validate=validate.Length(min=1, max=64), metadata={
        "description": "Only the links to this exercise (slug), as their one exercise or one of several"})
    course = fields.Integer(validate=validate.Range(min=1, max=2**31 - 1), metadata={
        "description": "Only this course's links (a course's own staff always see their course alone)"})
