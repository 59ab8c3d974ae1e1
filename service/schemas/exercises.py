from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from ..catalog.loader import KINDS, TOPIC_PATTERN
from .attempts import LEARNER_ID
from .request import Pattern, RequestSchema
from .rules import StandingSchema


class ExerciseQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    topic = fields.String(validate=Pattern(TOPIC_PATTERN), metadata={"description": "Only exercises with this tag"})
    kind = fields.String(validate=validate.OneOf(KINDS), metadata={"description": "Only exercises of this kind"})


class ExerciseDetailQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # as before ?learner= existed: other query parameters are ignored

    learner = fields.String(
        validate=LEARNER_ID,
        metadata={"description": "With an API key: answer this learner's variant (their order of the choices, "
                                 "their values of the parameters). A learner token answers its own learner's "
                                 "variant without it"})


class ExerciseSummarySchema(Schema):
    slug = fields.String(required=True)
    title = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    topics = fields.List(fields.String(), required=True, attribute="topic_names")
    difficulty = fields.Integer(required=True, metadata={"description": "1 (first contact) to 5 (hardest)"})
    version = fields.Integer(required=True, attribute="current_version",
                             metadata={"description": "Grows each time the exercise's content changes"})


class ChoiceSchema(Schema):
    id = fields.String(required=True)
    text = fields.String(required=True, metadata={"description": "Markdown"})


class ExerciseSchema(ExerciseSummarySchema):
    prompt = fields.String(required=True, metadata={"description": "Markdown"})
    hints = fields.List(fields.String(), required=True, metadata={"description": "Markdown, to show in order on request"})
    score_policy = fields.String(required=True, validate=validate.OneOf(["best", "latest"]),
                                 metadata={"description": "Which attempt counts in a gradebook"})
    choices = fields.List(fields.Nested(ChoiceSchema), metadata={"description": "single_choice and multiple_choice"})
    answer_length = fields.Integer(allow_none=True,
                                   metadata={"description": "numeric: how many numbers the answer has, null for one number"})
    code = fields.Dict(metadata={"description": "code: entry point, starter code and what the Function receives"})
    per_learner = fields.Boolean(required=True, metadata={
        "description": "Whether each learner sees a variant of their own (choices in their own order; numeric "
                       "parameters, written {name} in the prompt, with their own values): ask with a learner "
                       "token, or an API key and ?learner=, to get it. Graded in the learner's variant"})
    learner = fields.String(metadata={"description": "Present in a learner's variant: whose it is"})
    standing = fields.Nested(StandingSchema, metadata={
        "description": "Present in a learner's variant: where they stand under the exercise's rules (attempts "
                       "used and left, the due date, the next attempt's penalties, a refusal): as "
                       "GET /api/v1/exercises/{slug}/standing answers"})
    params = fields.Dict(keys=fields.String(), values=fields.Raw(), metadata={
        "description": "numeric with parameters, in a learner's variant: their values, already written into "
                       "the prompt and hints"})
