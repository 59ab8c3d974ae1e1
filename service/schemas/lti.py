from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from ..models.lti import ACTIVE, DISABLED, PENDING
from .delivery import DELIVERY_STATUSES, OutboundDeliverySchema
from .request import RequestSchema, http_url

PLATFORM_STATUSES = (ACTIVE, PENDING, DISABLED)


def url_field(description: str) -> fields.String:
    return http_url(description)


class PlatformSchema(RequestSchema):
    id = fields.Integer(dump_only=True)
    name = fields.String(required=True, validate=validate.Length(min=1, max=60),
                         metadata={"description": "How admins call this LMS (e.g. 'Moodle, Faculty of Science')"})
    issuer = fields.String(required=True, validate=validate.Length(min=1, max=255),
                           metadata={"description": "The platform's issuer (iss), e.g. https://moodle.example.edu"})
    client_id = fields.String(required=True, validate=validate.Length(min=1, max=255),
                              metadata={"description": "The client id the platform gave this tool"})
    deployment_ids = fields.List(fields.String(validate=validate.Length(min=1, max=255)), required=True,
                                 validate=validate.Length(min=1, max=100))
    auth_login_url = url_field("The platform's OIDC authorization URL")
    auth_token_url = url_field("The platform's OAuth2 token URL")
    jwks_url = url_field("The platform's public keyset URL")
    created_at = fields.DateTime(dump_only=True)
    status = fields.String(dump_only=True, validate=validate.OneOf(PLATFORM_STATUSES), metadata={
        "description": "active; pending: registered itself while LTI_REGISTRATION_APPROVAL is on, no launch until "
                       "an admin approves it; disabled"})
    approved_at = fields.DateTime(dump_only=True, allow_none=True)
    disabled_at = fields.DateTime(dump_only=True, allow_none=True)


class PlatformUpdateSchema(PlatformSchema):
    """Any of the fields but issuer and client id, which identify the registration."""

    class Meta:
        exclude = ("issuer", "client_id")


class RegistrationLinkCreateSchema(RequestSchema):
    label = fields.String(required=True, validate=validate.Length(min=1, max=100), metadata={
        "description": "Whom or which LMS it is for (e.g. 'Moodle of the Faculty of Science'), for the admins' list"})
    valid_hours = fields.Integer(load_default=72, validate=validate.Range(min=1, max=720), metadata={
        "description": "How long it works, in hours (default 72, at most 30 days); it works once"})


class RegistrationLinkSchema(Schema):
    id = fields.Integer(required=True)
    label = fields.String(required=True)
    created_at = fields.DateTime(required=True)
    expires_at = fields.DateTime(required=True)
    used_at = fields.DateTime(allow_none=True, metadata={"description": "When an LMS registered with it, or its last "
                                                                   "failed try used it up (no platform)"})
    platform = fields.Integer(allow_none=True, attribute="platform_id",
                              metadata={"description": "The platform it registered (or registered again)"})
    failed_tries = fields.Integer(required=True, metadata={
        "description": "Tries that failed at the LMS (its configuration or registration endpoint refused, silent or "
                       "not valid); the fifth uses the link up"})


class NewRegistrationLinkSchema(RegistrationLinkSchema):
    url = fields.String(required=True, metadata={
        "description": "The registration URL for the LMS admin to paste into the LMS (LTI Dynamic Registration), "
                       "shown this once (only its code's hash is kept)"})


class ToolSchema(Schema):
    login_url = fields.String(required=True, metadata={"description": "OpenID Connect login initiation URL"})
    launch_url = fields.String(required=True, metadata={"description": "Target link URI and redirection URI"})
    deep_linking_url = fields.String(required=True, metadata={"description": "Content selection URL"})
    jwks_url = fields.String(required=True, metadata={"description": "The tool's public keyset URL"})


class ToolKeySchema(Schema):
    kid = fields.String(required=True)
    created_at = fields.DateTime(required=True)
    retired_at = fields.DateTime(allow_none=True, metadata={
        "description": "When it stopped signing; it stays in the JWKS for LTI_RETIRED_KEY_SECONDS"})


class PassbacksQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    status = fields.String(validate=validate.OneOf(DELIVERY_STATUSES))
    attempt = fields.UUID(metadata={"description": "Only this attempt's passbacks"})


class PassbackSchema(OutboundDeliverySchema):
    attempt = fields.UUID(required=True, attribute="attempt_id")
    learner = fields.String(required=True, attribute="attempt.learner")
    exercise = fields.String(required=True, attribute="link.exercise.slug")
    platform = fields.String(required=True, attribute="link.platform.name")
    lineitem_url = fields.String(allow_none=True, attribute="link.lineitem_url")
    sent_score = fields.Dict(allow_none=True, metadata={"description": "The AGS score last sent"})
    next_attempt_at = fields.DateTime(required=True)
