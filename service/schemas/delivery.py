from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..models import DeliveryStatus

DELIVERY_STATUSES = [s.value for s in DeliveryStatus]


class OutboundDeliverySchema(Schema):
    """The state every outbound message shares (webhook deliveries and LTI score passbacks):
    the columns of models/delivery.py OutboundDelivery."""

    id = fields.Integer(required=True)
    status = fields.String(required=True, validate=validate.OneOf(DELIVERY_STATUSES), metadata={
        "description": "pending (waiting for its next try), delivered, or failed (every try failed, or its "
                       "target was removed)"})
    tries = fields.Integer(required=True, metadata={"description": "Tries made since it was queued (or resent)"})
    last_status_code = fields.Integer(allow_none=True,
                                      metadata={"description": "The receiver's HTTP status at the last try; null: no answer"})
    last_error = fields.String(allow_none=True, metadata={"description": "Why the last try failed"})
    created_at = fields.DateTime(required=True)
    last_attempt_at = fields.DateTime(allow_none=True, metadata={"description": "When the last try started"})
    delivered_at = fields.DateTime(allow_none=True)
