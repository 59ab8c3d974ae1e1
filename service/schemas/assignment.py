"""The assignment a learner token was launched for: its exercises in order and where the learner stands."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..lti.assignments import SCORINGS

STATUSES = ("not_tried", "tried", "passed")


class AssignmentExerciseSchema(Schema):
    slug = fields.String(required=True)
    title = fields.String(required=True)
    kind = fields.String(required=True)
    points = fields.Float(required=True, metadata={"description": "The exercise's weight in the sum rule (1 by default)"})
    status = fields.String(required=True, validate=validate.OneOf(STATUSES), metadata={
        "description": "not_tried: no attempt; tried: attempts, none correct yet; passed: a correct attempt"})
    attempts = fields.Integer(required=True, metadata={"description": "The learner's attempts here (errors not counted)"})
    score = fields.Float(required=True, allow_none=True, metadata={
        "description": "The score that counts (0 to 1) under the exercise's policy (best or latest); null: none graded"})


class AssignmentSchema(Schema):
    title = fields.String(required=True, metadata={"description": "The link's title in the LMS"})
    scoring = fields.String(required=True, validate=validate.OneOf(SCORINGS), metadata={
        "description": "mean: the mean of the exercises' scores, out of 100; sum: each score times its points, "
                       "out of the points' total. A link of one exercise is a mean of one"})
    score = fields.Float(required=True, allow_none=True, metadata={
        "description": "The assignment's score as the LMS gets it (exercises not tried count 0); null: none graded"})
    score_maximum = fields.Float(required=True)
    complete = fields.Boolean(required=True, metadata={"description": "Every exercise has a graded attempt"})
    exercises = fields.List(fields.Nested(AssignmentExerciseSchema), required=True,
                            metadata={"description": "In the assignment's order"})
