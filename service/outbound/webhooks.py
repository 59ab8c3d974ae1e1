"""Webhooks: endpoints an API client registers, and the signed attempt events sent to them.

Events are signed per Standard Webhooks (https://www.standardwebhooks.com): `webhook-id` is the
event's id (`evt_<n>`, the same on every try, so a receiver deduplicates on it), `webhook-timestamp`
the moment of this try, and `webhook-signature` `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`
keyed with the endpoint's `whsec_` secret. The body is built from the stored event, so every try of
one event carries the same bytes; only the timestamp, and so the signature, changes.
"""

from __future__ import annotations

import base64
import email.utils
import json
import math
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session
from standardwebhooks.webhooks import Webhook

from ..config import Settings
from ..models import Attempt, AttemptEvent, DeliveryStatus, WebhookDelivery, WebhookEndpoint
from ..models.base import utcnow
from ..sealing import InvalidToken, open_sealed, seal
from .http import HttpError, outbound_policy, send
from .runner import MAX_BACKOFF, Outcome, SendStep

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
EVENT_ID_PREFIX = "evt_"
DELETED_ENDPOINT = "the endpoint was deleted"
# Statuses whose Retry-After says when the receiver can take the event (RFC 9110).
RETRY_AFTER_STATUSES = (429, 503)


def new_secret() -> str:
    """A signing secret in the Standard Webhooks form: whsec_ and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def event_id(event_number: int) -> str:
    """The id receivers see for an event, in the body and as `webhook-id`."""
    return f"{EVENT_ID_PREFIX}{event_number}"


def register_endpoint(session: Session, client_id: int, url: str, description: str,
                      secret_key: str) -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its signing secret; the secret is stored sealed and returned this once."""
    secret = new_secret()
    endpoint = WebhookEndpoint(client_id=client_id, url=url, description=description, created_at=utcnow(),
                               sealed_secret=seal(secret_key, secret.encode()))
    session.add(endpoint)
    session.flush()
    return endpoint, secret


def disable_endpoint(session: Session, endpoint: WebhookEndpoint) -> None:
    """Send nothing more to the endpoint; its delivery log stays. Deliveries still waiting are
    marked failed now, so the log says so at once rather than at their next due time."""
    if endpoint.disabled_at is not None:
        return
    endpoint.disabled_at = utcnow()
    session.execute(update(WebhookDelivery)
                    .where(WebhookDelivery.endpoint_id == endpoint.id,
                           WebhookDelivery.status == DeliveryStatus.PENDING.value)
                    .values(status=DeliveryStatus.FAILED.value, last_error=DELETED_ENDPOINT))


def event_payload(event: AttemptEvent, attempt: Attempt) -> dict[str, Any]:
    """The JSON body of an attempt event. The grade comes from the event, not the attempt's row:
    a later regrade must not change what an earlier event said, nor its retries' bytes."""
    return {
        "id": event_id(event.id),
        "type": event.type,
        "created_at": event.created_at.isoformat(),
        "data": {"attempt": {
            "id": str(attempt.id),
            "exercise": attempt.exercise.slug,
            "exercise_version": attempt.exercise_version.number,
            "learner": attempt.learner,
            "status": event.data["status"],
            "score": event.data["score"],
            "correct": event.data["correct"],
            # The grade this event reports was stored when the event was.
            "graded_at": event.created_at.isoformat(),
            "url": f"/api/v1/attempts/{attempt.id}",
        }},
    }


def signature_headers(secret: str, message_id: str, body: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers for `body` sent at `at` (whole seconds, as the spec signs)."""
    timestamp = math.floor(at.timestamp())
    signature = Webhook(secret).sign(message_id, datetime.fromtimestamp(timestamp, UTC), body)
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": signature}


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The receiver's Retry-After (seconds or an HTTP date), at most the longest backoff."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": HTTP dates are GMT
            when = when.replace(tzinfo=UTC)
        seconds = (when - utcnow()).total_seconds()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_BACKOFF.total_seconds())


class WebhookDeliveries:
    """The outbound runner's delivery kind for webhook events."""

    model = WebhookDelivery

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def prepare(self, session: Session, row: WebhookDelivery) -> SendStep | Outcome:
        endpoint = row.endpoint
        if endpoint.disabled_at is not None:  # deleted after this delivery was claimed
            return Outcome(False, permanent=True, error=DELETED_ENDPOINT)
        try:
            secret = open_sealed(self.settings.secret_key, endpoint.sealed_secret).decode()
        except InvalidToken:
            return Outcome(False, permanent=True, error="the endpoint's secret cannot be read (SECRET_KEY changed "
                                                        "since it was registered): register the endpoint again")
        event = row.event
        body = json.dumps(event_payload(event, session.get_one(Attempt, event.attempt_id)), separators=(",", ":"))
        url, message_id = endpoint.url, event_id(event.id)
        return lambda: self._send(url, secret, message_id, body)

    def _send(self, url: str, secret: str, message_id: str, body: str) -> Outcome:
        # Signed now, not when prepared: the timestamp is what receivers check for replays.
        headers = {"Content-Type": "application/json", **signature_headers(secret, message_id, body, utcnow())}
        try:
            response = send("POST", url, outbound_policy(self.settings), body=body.encode(), headers=headers)
        except HttpError as exc:
            return Outcome(False, error=str(exc))
        if response.ok:
            return Outcome(True, response.status)
        retry_after = retry_after_seconds(response.headers) if response.status in RETRY_AFTER_STATUSES else None
        return Outcome(False, response.status, error=f"the endpoint answered HTTP {response.status}",
                       retry_after=retry_after)
