"""Columns of a message the service sends to another system: an LTI score or a webhook event.

Rows are written in the transaction that made the event, and sent later by the outbound runner
(service/outbound/runner.py): nothing is sent on a request's path, and nothing is lost on a
restart. A claim pushes `next_attempt_at` one lease ahead, so a sender that dies mid-send leaves
the row due again; a failed send retries with exponential backoff until `OUTBOUND_MAX_TRIES`.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from .base import utcnow


class DeliveryStatus(str, enum.Enum):
    PENDING = "pending"
    DELIVERED = "delivered"
    # Every try failed; an admin (or the endpoint's owner) can send it again.
    FAILED = "failed"


class OutboundDelivery:
    if TYPE_CHECKING:  # declared by each kind's table; named here for the runner, which sends any kind
        __tablename__: str
        id: Mapped[int]

    status: Mapped[str] = mapped_column(String(16), default=DeliveryStatus.PENDING.value)
    tries: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    delivered_at: Mapped[datetime | None]
    last_attempt_at: Mapped[datetime | None]
    # The receiver's HTTP status of the last try, or null when it never answered.
    last_status_code: Mapped[int | None]
    # Why the last try failed, for whoever looks at the delivery log (never a secret).
    last_error: Mapped[str | None] = mapped_column(String(500))
