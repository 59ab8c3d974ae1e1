"""Course exercises (issue 34): the authoring API's bodies and answers."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..catalog.archive import FILE_NAME_PATTERN
from ..catalog.loader import KINDS, SLUG_PATTERN
from ..models.exercise import PROOF_STATUSES, VERSION_SOURCES
from .exercises import ExerciseSchema
from .request import Pattern, RequestSchema

STATUSES = ("draft", "published", "unpublished")
FILES_DESCRIPTION = ("The exercise's files, by path in its folder: `exercise.toml` (the format: docs/authoring.md), "
                     "and for a code exercise `reference.py`, `starter.py` and `wrong/<name>.py`; UTF-8 text")


def _files_field(**kwargs) -> fields.Dict:
    # Its keys' pattern is documented by the schemas' FILES_JSON_SCHEMA (apispec says nothing of a dict's keys).
    return fields.Dict(keys=fields.String(validate=Pattern(FILE_NAME_PATTERN)), values=fields.String(),
                       validate=validate.Length(min=1),
                       metadata={"description": FILES_DESCRIPTION, "minProperties": 1}, **kwargs)


FILES_JSON_SCHEMA = {"properties": {"files": {"propertyNames": {"pattern": FILE_NAME_PATTERN}}}}
#: What a JSON body may say saved it, for the version history (an archive is always "upload", a sync "git").
JSON_SOURCES = ("api", "dashboard")


def _source_field() -> fields.String:
    return fields.String(load_default="api", validate=validate.OneOf(JSON_SOURCES), metadata={
        "description": "What saved the version, shown in its history: `api` (default) or `dashboard`"})


class NewExerciseSchema(RequestSchema):
    JSON_SCHEMA = FILES_JSON_SCHEMA
    slug = fields.String(required=True, validate=[validate.Length(min=3, max=64), Pattern(SLUG_PATTERN)], metadata={
        "description": "The exercise's name in URLs: 3-64 lowercase letters, digits and hyphens, unique across the "
                       "service (the catalog's and every course's)"})
    files = _files_field(required=True)
    source = _source_field()


class ExerciseFilesSchema(RequestSchema):
    JSON_SCHEMA = FILES_JSON_SCHEMA
    files = _files_field(required=True)
    source = _source_field()


class PublishSchema(RequestSchema):
    version = fields.Integer(validate=validate.Range(min=1, max=2147483647), metadata={
        "description": "The version to publish (default: the latest); an older proven one is the way back"})


class DiffQuerySchema(RequestSchema):
    from_ = fields.Integer(required=True, data_key="from", validate=validate.Range(min=1, max=2147483647))
    to = fields.Integer(required=True, validate=validate.Range(min=1, max=2147483647))


class ProofProblemSchema(Schema):
    file = fields.String(required=True, metadata={"description": "The file at fault, in the exercise's folder"})
    field = fields.String(required=True, metadata={"description": "The one field or check at fault"})
    message = fields.String(required=True)
    line = fields.Integer(allow_none=True, metadata={"description": "The line of `file` at fault, where known"})


class ProofStepSchema(Schema):
    subject = fields.String(required=True, metadata={"description": "What ran: the reference on a variant, a wrong "
                                                                    "file, the starter"})
    passed = fields.Boolean(required=True)
    summary = fields.String(required=True)


class ProofSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(PROOF_STATUSES))
    passed = fields.Boolean(required=True, allow_none=True, metadata={"description": "null while queued or running"})
    problems = fields.List(fields.Nested(ProofProblemSchema), required=True)
    steps = fields.List(fields.Nested(ProofStepSchema), required=True)


class ExerciseDraftSchema(Schema):
    slug = fields.String(required=True)
    version = fields.Integer(required=True)
    status = fields.String(required=True, validate=validate.OneOf(STATUSES),
                           metadata={"description": "The exercise's: draft (never published), published, unpublished"})
    proof = fields.Nested(ProofSchema, required=True)
    url = fields.String(required=True, metadata={"description": "The exercise's resource in this API"})
    page_url = fields.String(required=True, metadata={"description": "The learner's page"})
    version_url = fields.String(required=True)


class DraftsSchema(Schema):
    exercises = fields.List(fields.Nested(ExerciseDraftSchema), required=True)


class CourseExerciseSummarySchema(Schema):
    slug = fields.String(required=True)
    title = fields.String(required=True)
    kind = fields.String(required=True, metadata={"description": f"One of {', '.join(KINDS)} (empty while the "
                                                                 "first draft's exercise.toml names none)"})
    status = fields.String(required=True, validate=validate.OneOf(STATUSES))
    current_version = fields.Integer(required=True, metadata={"description": "The version learners get once published"})
    latest_version = fields.Integer(required=True)
    latest_proof_status = fields.String(required=True, validate=validate.OneOf(PROOF_STATUSES))
    updated_at = fields.DateTime(required=True)
    url = fields.String(required=True)
    page_url = fields.String(required=True)


class CourseExerciseDetailSchema(ExerciseSchema):
    """The learner's detail of the current version (absent fields: its exercise.toml is not valid),
    and where the exercise stands."""

    version = fields.Integer(required=True, metadata={"description": "The current version (current_version)"})
    status = fields.String(required=True, validate=validate.OneOf(STATUSES))
    current_version = fields.Integer(required=True)
    latest_version = fields.Integer(required=True)
    latest_proof_status = fields.String(required=True, validate=validate.OneOf(PROOF_STATUSES))
    url = fields.String(required=True)
    page_url = fields.String(required=True)
    versions_url = fields.String(required=True)


class VersionSummarySchema(Schema):
    version = fields.Integer(required=True)
    author = fields.String(required=True, allow_none=True, metadata={"description": "null: the catalog's sync"})
    source = fields.String(required=True, validate=validate.OneOf(VERSION_SOURCES))
    created_at = fields.DateTime(required=True)
    proof_status = fields.String(required=True, validate=validate.OneOf(PROOF_STATUSES))
    published_at = fields.DateTime(required=True, allow_none=True,
                                   metadata={"description": "When it last became the published version"})
    note = fields.String(required=True, allow_none=True, metadata={"description": "e.g. the git commit it came from"})
    current = fields.Boolean(required=True)


class VersionDetailSchema(Schema):
    version = fields.Integer(required=True)
    author = fields.String(required=True, allow_none=True)
    source = fields.String(required=True, validate=validate.OneOf(VERSION_SOURCES))
    created_at = fields.DateTime(required=True)
    note = fields.String(required=True, allow_none=True)
    files = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "Every file as written, exercise.toml included (the text the author saved)"})
    proof = fields.Nested(ProofSchema, required=True)


class FileDiffSchema(Schema):
    path = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(("added", "removed", "changed")))
    diff = fields.String(required=True, metadata={"description": "A unified diff (difflib), from `from` to `to`"})


class DiffSchema(Schema):
    from_ = fields.Integer(required=True, data_key="from")
    to = fields.Integer(required=True)
    files = fields.List(fields.Nested(FileDiffSchema), required=True, metadata={"description": "Changed files only"})
