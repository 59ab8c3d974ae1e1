from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..models import Attempt, Run
from .request import RequestSchema


class FailedJobsQuerySchema(RequestSchema):
    kind = fields.String(validate=validate.OneOf([Attempt.JOB_KIND, Run.JOB_KIND]),
                         metadata={"description": "Only attempts, or only runs (default: both)"})


class FailedJobSchema(Schema):
    kind = fields.String(required=True, metadata={"description": "attempt or run"})
    id = fields.UUID(required=True)
    status = fields.String(required=True)
    client = fields.String(required=True, metadata={"description": "The name of the client that submitted it"})
    exercise = fields.String(allow_none=True, metadata={"description": "The exercise's slug (attempts only)"})
    learner = fields.String(allow_none=True, metadata={"description": "attempts only"})
    tries = fields.Integer(required=True, metadata={"description": "Times a worker claimed it"})
    created_at = fields.DateTime(required=True)
    failed_at = fields.DateTime(allow_none=True)
    message = fields.String(allow_none=True)
