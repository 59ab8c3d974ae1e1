"""A learner's progress across the exercises their token may see (GET /api/v1/progress)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..services.learner_progress import STATES


class ExerciseProgressSchema(Schema):
    slug = fields.String(required=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES), metadata={
        "description": "passed: a graded attempt was correct; tried: attempts (queued, running or graded; not one "
                       "the grader failed on), none correct yet; not_started: no attempt"})
    best_score = fields.Float(required=True, allow_none=True, metadata={
        "description": "The best graded score, 0 to 1 (after the rules' penalties, or an override); null: none graded"})


class ProgressSchema(Schema):
    learner = fields.String(required=True, metadata={"description": "The token's learner"})
    exercises = fields.List(fields.Nested(ExerciseProgressSchema), required=True, metadata={
        "description": "Every published exercise the token may see and act at, easiest first, then by slug"})
