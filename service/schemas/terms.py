"""GET /api/v1/terms: the words of grading (service/grading/terms.py's terms_json)."""

from __future__ import annotations

from marshmallow import Schema, fields


class CheckTermSchema(Schema):
    name = fields.String(required=True, metadata={"description": "The check's name in reports and runs"})
    title = fields.String(required=True, metadata={"description": "Its short title, e.g. \"Numerical gradient check\""})
    description = fields.String(required=True, metadata={"description": "What it checks"})


class CauseTermSchema(Schema):
    name = fields.String(required=True, metadata={"description": "The likely cause's name in reports and runs"})
    title = fields.String(required=True, metadata={"description": "What is wrong, in a few words"})
    advice = fields.String(required=True, metadata={"description": "What to do about it"})


class StageTermSchema(Schema):
    name = fields.String(required=True, metadata={"description": "An error's `where`"})
    words = fields.String(required=True, metadata={
        "description": "Where that is, after \"raised <exception>\", e.g. \"while Python read your code\""})


class StatusTermSchema(Schema):
    name = fields.String(required=True, metadata={"description": "A grade's or a run's status"})
    title = fields.String(required=True, metadata={
        "description": "Its short title, for a badge or a list, e.g. \"Does not parse\""})
    verdict = fields.String(required=True, metadata={"description": "What it means, as one sentence"})


class TermsSchema(Schema):
    checks = fields.List(fields.Nested(CheckTermSchema), required=True, metadata={
        "description": "Every check of a grade and of a run, in a grade's order, then a run's own"})
    causes = fields.List(fields.Nested(CauseTermSchema), required=True, metadata={"description": "Every likely cause"})
    stages = fields.List(fields.Nested(StageTermSchema), required=True, metadata={
        "description": "Every stage an error of the learner's code can be raised at"})
    statuses = fields.List(fields.Nested(StatusTermSchema), required=True, metadata={
        "description": "Every status of a grade's report and of a run's result"})
