from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..learner_tokens import MAX_TOKEN_EXERCISES
from .attempts import LEARNER_ID

# The catalog's slugs (service/catalog/loader.py): lowercase words joined by hyphens, 3-64 characters.
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"


class LearnerTokenCreateSchema(Schema):
    learner = fields.String(required=True, validate=LEARNER_ID, metadata={
        "description": "Your own identifier of the learner the token acts for (unique within your client)"})
    exercises = fields.List(
        fields.String(validate=[validate.Length(min=3, max=64), validate.Regexp(SLUG_PATTERN, error="an exercise slug")]),
        required=True, allow_none=True, validate=validate.Length(min=1, max=MAX_TOKEN_EXERCISES),
        metadata={"uniqueItems": True, "description": (
            f"The published exercises the token may act at (1 to {MAX_TOKEN_EXERCISES} slugs), or null for every "
            "exercise; required, so that 'every exercise' is always said")})
    client = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=1), metadata={
        "description": "With an admin key, required: the id of the client (not an admin) whose learner the token "
                       "acts for; it reads and writes that client's data alone. Other keys' tokens are their own "
                       "client's: leave it out"})
    course = fields.String(load_default=None, allow_none=True, validate=LEARNER_ID, metadata={
        "description": "The external_id of one of your courses (POST /api/v1/courses): the learner's attempts "
                       "belong to it and the token reads nothing of another course. A course key's tokens are "
                       "always of its course"})


class LearnerTokenSchema(Schema):
    token = fields.String(required=True, metadata={
        "description": "Send as 'Authorization: Bearer <token>'. Keep it in memory or sessionStorage, never in a URL"})
    token_type = fields.Constant("Bearer", required=True, metadata={"type": "string", "enum": ["Bearer"]})
    expires_at = fields.DateTime(required=True, metadata={"description": "When the token stops working"})
    expires_in = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "Seconds until expires_at (LEARNER_TOKEN_SECONDS for a new session, less near its end)"})
    session_expires_at = fields.DateTime(required=True, metadata={
        "description": "The end of the session (LEARNER_SESSION_MAX_SECONDS after its first token): "
                       "POST /api/v1/learner-tokens/refresh renews the token until then"})
    learner = fields.String(required=True)
    exercises = fields.List(fields.String(), required=True, allow_none=True, metadata={
        "description": "The exercises the token may act at; null: every exercise"})
    role = fields.String(required=True, validate=validate.OneOf(["learner", "instructor"]), metadata={
        "description": "instructor only for an LTI instructor's launch: it also reads the class's attempts"})
