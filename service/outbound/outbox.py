"""Attempt events and the deliveries they cause, written in the transaction that made the event.

A grade, regrade or override calls `record_attempt_event` beside the change itself: the event,
the statistics counters, one webhook delivery per active endpoint of the attempt's client, and a
score passback when the attempt came from an LTI launch all commit together with it, or not at all.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import ApiClient, AttemptEvent, ScorePassback, WebhookDelivery, WebhookEndpoint
from ..services import progress


def record_attempt_event(session: Session, *, attempt_id: uuid.UUID, client_id: int, lti_link_id: int | None,
                         type: str, data: dict[str, Any], at: datetime,
                         previous: dict[str, Any] | None = None) -> AttemptEvent:
    """`previous`: the attempt's grade before a regrade or override (see progress.on_attempt_event)."""
    session.flush()  # the attempt first: the event refers to it
    progress.on_attempt_event(session, attempt_id=attempt_id, type=type, previous=previous)
    event = AttemptEvent(attempt_id=attempt_id, type=type, data=data, created_at=at)
    session.add(event)
    session.flush()  # the event's id, which deliveries refer to
    # A revoked client's endpoints get nothing more: it can no longer see or manage them.
    endpoints = session.scalars(select(WebhookEndpoint.id).join(ApiClient, ApiClient.id == WebhookEndpoint.client_id)
                                .where(WebhookEndpoint.client_id == client_id, WebhookEndpoint.disabled_at.is_(None),
                                       ApiClient.revoked_at.is_(None)))
    session.add_all(WebhookDelivery(endpoint_id=endpoint_id, event_id=event.id, next_attempt_at=at, created_at=at)
                    for endpoint_id in endpoints)
    if lti_link_id is not None:
        session.add(ScorePassback(attempt_id=attempt_id, event_id=event.id, link_id=lti_link_id,
                                  next_attempt_at=at, created_at=at))
    return event
