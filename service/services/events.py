"""Attempt events: what a grade, regrade or override writes beside the change itself.

`record_attempt_event` keeps the statistics counters (progress.on_attempt_event) and writes the
event with its webhook deliveries and score passback (the outbox, service/outbound/outbox.py),
all in the caller's transaction: they commit with the grade, or not at all.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from ..models import AttemptEvent
from ..outbound import outbox
from . import progress


def record_attempt_event(session: Session, *, attempt_id: uuid.UUID, client_id: int, lti_link_id: int | None,
                         type: str, data: dict[str, Any], at: datetime,
                         previous: dict[str, Any] | None = None) -> AttemptEvent:
    """`previous`: the attempt's grade before a regrade or override (see progress.on_attempt_event)."""
    session.flush()  # the attempt first: the counters read it
    progress.on_attempt_event(session, attempt_id=attempt_id, type=type, previous=previous)
    return outbox.write_event(session, attempt_id=attempt_id, client_id=client_id, lti_link_id=lti_link_id,
                              type=type, data=data, at=at)
