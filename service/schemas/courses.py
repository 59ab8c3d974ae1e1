"""Courses, the staff caller, and course keys."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from .attempts import LEARNER_ID
from .request import RequestSchema


class CourseCreateSchema(RequestSchema):
    external_id = fields.String(required=True, validate=LEARNER_ID, metadata={
        "description": "Your own id of the course (unique within your client), e.g. cs101-2026-spring"})
    title = fields.String(required=True, validate=validate.Length(min=1, max=255))
    label = fields.String(load_default=None, allow_none=True, validate=validate.Length(min=1, max=255),
                          metadata={"description": "A short code, e.g. CS101"})


class CourseSchema(Schema):
    id = fields.Integer(required=True)
    external_id = fields.String(required=True, metadata={
        "description": "The LTI context id, or the client's own id of the course"})
    title = fields.String(required=True)
    label = fields.String(required=True, allow_none=True)
    platform = fields.String(required=True, allow_none=True, metadata={
        "description": "The LMS it is a course of; null: a client's own course"})
    client_id = fields.Integer(required=True)
    links = fields.Integer(required=True, metadata={"description": "LTI resource links placed in it"})
    learners = fields.Integer(required=True, metadata={"description": "Learners with an attempt in it"})
    attempts = fields.Integer(required=True)
    last_attempt_at = fields.DateTime(required=True, allow_none=True)
    created_at = fields.DateTime(required=True)


class StaffCallerSchema(Schema):
    kind = fields.String(required=True, validate=validate.OneOf(["admin", "instructor", "course_session", "course_key"]),
                         metadata={"description": "admin or instructor: a key of every course; course_session (an "
                                                  "instructor's LTI launch) or course_key: one course's staff"})
    actor = fields.String(required=True, metadata={"description": "Who actions are recorded as done by"})
    course = fields.Nested(CourseSchema, required=True, allow_none=True, metadata={
        "description": "The one course the caller is limited to; null: every course"})
    session_expires_at = fields.DateTime(required=True, allow_none=True, metadata={
        "description": "When a course staff session ends (launch again then); null for keys"})


class CourseKeyCreateSchema(RequestSchema):
    name = fields.String(required=True, validate=validate.Length(min=1, max=100), metadata={
        "description": "What the key is for, e.g. 'section A gradebook script'"})


class CourseKeySchema(Schema):
    id = fields.Integer(required=True)
    name = fields.String(required=True)
    key_prefix = fields.String(required=True, metadata={"description": "The key's first characters, to tell keys apart"})
    created_at = fields.DateTime(required=True)
    created_by = fields.String(required=True)
    revoked_at = fields.DateTime(required=True, allow_none=True)


class NewCourseKeySchema(CourseKeySchema):
    key = fields.String(required=True, metadata={
        "description": "The key, shown this once (only its hash is kept): send it as 'Authorization: Bearer <key>'"})
