"""Attempt events and the deliveries they cause, written in the transaction that made the event.

`write_event` adds the event, one webhook delivery per active endpoint of the attempt's client,
and a score passback when the attempt came from an LTI launch; they commit together with the
change that made the event, or not at all. A grade, regrade or override calls it through
service/services/events.py `record_attempt_event`, which gives the event what the statistics
counters take from it (the workers fold it in afterwards).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Integer, bindparam, select
from sqlalchemy.orm import Session

from ..models import ApiClient, Attempt, AttemptEvent, ScorePassback, WebhookDelivery, WebhookEndpoint

# The client's active endpoints, built once (every graded attempt runs it; building costs more than
# running it). A revoked client's endpoints get nothing more: it can no longer see or manage them.
ACTIVE_ENDPOINTS = (select(WebhookEndpoint.id).join(ApiClient, ApiClient.id == WebhookEndpoint.client_id)
                    .where(WebhookEndpoint.client_id == bindparam("client_id", type_=Integer()),
                           WebhookEndpoint.disabled_at.is_(None), ApiClient.revoked_at.is_(None)))


def write_event(session: Session, *, attempt: Attempt, client_id: int, lti_link_id: int | None,
                type: str, data: dict[str, Any], at: datetime, counters: dict[str, Any] | None = None) -> AttemptEvent:
    """The event and its deliveries, added to the session (written by its next flush).
    `counters`: what the statistics take from it (None: nothing, so it is counted already)."""
    event = AttemptEvent(attempt=attempt, type=type, data=data, created_at=at, counters=counters,
                         counted_at=None if counters is not None else at)
    session.add(event)
    # The deliveries name their event through the relationship: the session writes the attempt,
    # the event and the deliveries in its next flush, in that order, with no flush forced here.
    with session.no_autoflush:
        endpoints = session.scalars(ACTIVE_ENDPOINTS, {"client_id": client_id}).all()
    session.add_all(WebhookDelivery(endpoint_id=endpoint_id, event=event, next_attempt_at=at, created_at=at)
                    for endpoint_id in endpoints)
    if lti_link_id is not None:
        session.add(ScorePassback(attempt=attempt, event=event, link_id=lti_link_id,
                                  next_attempt_at=at, created_at=at))
    return event
