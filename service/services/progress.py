"""Pre-aggregated progress and outcome counters, kept up to date with every attempt event."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session


def on_attempt_event(session: Session, *, attempt_id: uuid.UUID, type: str, previous: dict[str, Any] | None) -> None:
    """Bring the counters up to date after an event on the attempt (in the event's transaction).

    `previous`: the attempt's grade before this event ({score, verdict, likely_cause,
    failed_checks}), None for its first grade."""
