"""Exercise templates (GET /api/v1/exercise-templates)."""

from __future__ import annotations

from marshmallow import Schema, fields


class ExerciseTemplateSchema(Schema):
    kind = fields.String(required=True, metadata={
        "description": "code, single_choice, multiple_choice, short_answer or numeric"})
    name = fields.String(required=True, metadata={"description": "The kind in words, e.g. Multiple choice"})
    slug = fields.String(required=True, metadata={
        "description": "A suggested slug; slugs are unique on the server, so pick your own"})
    files = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "The exercise's files, path -> text (exercise.toml; a code exercise's reference.py, "
                       "starter.py and wrong/*.py): the body of POST /api/v1/courses/{course_id}/exercises"})
