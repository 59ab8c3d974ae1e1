"""Attempt events: what a grade, regrade or override writes beside the change itself.

`record_attempt_event` writes the event with its webhook deliveries and score passback (the
outbox, service/outbound/outbox.py) in the caller's transaction: they commit with the grade, or
not at all. The event carries what the statistics counters take from it
(progress.counter_input); the workers fold it into them afterwards (progress.fold_pending).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from ..models import GRADED_EVENT, Attempt, AttemptRow
from ..outbound import outbox
from . import progress


def record_attempt_event(session: Session, *, attempt_id: uuid.UUID, client_id: int, lti_link_id: int | None,
                         type: str, data: dict[str, Any], at: datetime,
                         previous: dict[str, Any] | None = None, attempt: Attempt | None = None) -> None:
    """`previous`: the attempt's grade before a regrade or override (progress.grade_snapshot).
    `attempt`: the attempt as the event leaves it, when the caller holds it; else it is read."""
    if attempt is None:  # changed by a statement (a worker's stored grade): read it back
        session.flush()
        attempt = session.get(Attempt, attempt_id, populate_existing=True)
    assert attempt is not None
    outbox.write_event(session, outbox.NewEvent(attempt_id, client_id, lti_link_id, type, data, at,
                                                progress.counter_input(attempt, previous)))


def graded_event(attempt: AttemptRow) -> outbox.NewEvent:
    """The `attempt.graded` event of an attempt graded as it is submitted (a quiz answer): written
    with the attempt (services/attempts.py insert_new_attempt)."""
    assert attempt.graded_at is not None
    return outbox.NewEvent(attempt.id, attempt.client_id, attempt.lti_link_id, GRADED_EVENT,
                           {"status": attempt.status, "score": attempt.score, "correct": attempt.correct},
                           attempt.graded_at, progress.counter_input(attempt, None))
