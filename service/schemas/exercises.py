from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from ..catalog.loader import KINDS, TOPIC_PATTERN
from .request import Pattern, RequestSchema


class ExerciseQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    topic = fields.String(validate=Pattern(TOPIC_PATTERN), metadata={"description": "Only exercises with this tag"})
    kind = fields.String(validate=validate.OneOf(KINDS), metadata={"description": "Only exercises of this kind"})


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
