from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from ..models import DeliveryStatus
from ..outbound.webhooks import event_id
from .delivery import DELIVERY_STATUSES, OutboundDeliverySchema
from .request import RequestSchema, http_url

PENDING = DeliveryStatus.PENDING.value


class WebhookCreateSchema(RequestSchema):
    url = http_url("Where events are POSTed: https:// on a public address, unless the operator allows its "
                   "network (OUTBOUND_ALLOWED_NETWORKS)")
    description = fields.String(load_default="", validate=validate.Length(max=200),
                                metadata={"description": "A note for yourself, e.g. which system receives it"})


class WebhookEndpointSchema(Schema):
    id = fields.Integer(required=True)
    url = fields.String(required=True)
    description = fields.String(required=True)
    created_at = fields.DateTime(required=True)
    disabled_at = fields.DateTime(allow_none=True, metadata={
        "description": "When it was deleted: it receives nothing more, its delivery log stays readable"})


class WebhookCreatedSchema(WebhookEndpointSchema):
    secret = fields.String(required=True, metadata={
        "description": "whsec_…: the key of the events' signatures. Shown in this response only: store it now"})


class DeliveryQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    status = fields.String(validate=validate.OneOf(DELIVERY_STATUSES),
                           metadata={"description": "Only deliveries with this status"})


class WebhookDeliverySchema(OutboundDeliverySchema):
    event_id = fields.Function(lambda delivery: event_id(delivery.event_id), required=True, metadata={
        "type": "string", "description": "The event's id, as sent in the body and in webhook-id: evt_<n>"})
    event_type = fields.String(required=True, attribute="event.type", metadata={"description": "e.g. attempt.graded"})
    attempt_id = fields.UUID(required=True, attribute="event.attempt_id")
    next_attempt_at = fields.Function(
        lambda delivery: delivery.next_attempt_at.isoformat() if delivery.status == PENDING else None,
        allow_none=True, metadata={"type": "string", "format": "date-time",
                                   "description": "When the next try is due (pending deliveries only)"})
