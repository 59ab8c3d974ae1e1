"""A course's roster as its staff read it (service/lti/roster.py fills it from the LMS)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..models import MemberStatus
from .request import RequestSchema

MEMBER_STATUSES = [MemberStatus.ACTIVE, MemberStatus.LEFT]


class CourseMemberSchema(Schema):
    learner = fields.String(required=True, metadata={
        "description": "The LMS's user id (the launch's sub): the learner id of their attempts in this course"})
    name = fields.String(required=True, allow_none=True, metadata={
        "description": "The name to show: the full name the LMS shares, else its given and family names"})
    given_name = fields.String(required=True, allow_none=True)
    family_name = fields.String(required=True, allow_none=True)
    email = fields.String(required=True, allow_none=True,
                          metadata={"description": "Only where the LMS shares it (null otherwise)"})
    roles = fields.List(fields.String(), required=True, metadata={"description": "Their context roles (LIS URIs)"})
    status = fields.String(required=True, validate=validate.OneOf(MEMBER_STATUSES), metadata={
        "description": "active, or left: missing from the LMS's latest complete roster, or Inactive or Deleted "
                       "in it (kept, never deleted: their attempts stay theirs)"})
    first_seen_at = fields.DateTime(required=True)
    updated_at = fields.DateTime(required=True)
    left_at = fields.DateTime(required=True, allow_none=True, metadata={"description": "When they were seen to leave"})


class RosterStateSchema(Schema):
    course_id = fields.Integer(required=True)
    nrps = fields.Boolean(required=True, metadata={
        "description": "Whether the LMS grants the Names and Role Provisioning Service for this course (a launch "
                       "brought its memberships URL); without it, names come from the members' own launches"})
    synced_at = fields.DateTime(required=True, allow_none=True,
                                metadata={"description": "The last complete read of the roster from the LMS"})
    sync_due_at = fields.DateTime(required=True, allow_none=True, metadata={
        "description": "When the next read is due (every ROSTER_SYNC_SECONDS; sooner after an instructor's launch "
                       "or POST .../roster/sync)"})
    failed_at = fields.DateTime(required=True, allow_none=True,
                                metadata={"description": "The last failed read since the last complete one"})
    error = fields.String(required=True, allow_none=True, metadata={
        "description": "Why it failed (the LMS's answer); a failed read changes no member"})


class RosterSchema(RosterStateSchema):
    members = fields.List(fields.Nested(CourseMemberSchema), required=True,
                          metadata={"description": "By name (members without one last), then learner id"})


class RosterQuerySchema(RequestSchema):
    status = fields.String(validate=validate.OneOf(MEMBER_STATUSES),
                           metadata={"description": "Only active members, or only those who left"})
