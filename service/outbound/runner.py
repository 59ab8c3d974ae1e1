"""The outbound runner: sends due deliveries (score passbacks, webhook events), retrying with backoff.

Each kind of delivery supplies `prepare(session, row)`, which reads what the message needs and
returns the send step: a function that makes the HTTP call with no database session open (so a
slow receiver never holds a transaction, nor SQLite's write lock). The runner claims due rows,
runs the send steps in a small thread pool and records each outcome.

The runner knows no kind of its own: whoever starts it hands it the kinds to send
(service/deliveries.py for `flask worker` and `flask outbound`), so this package imports nothing
of the LTI or webhook code that builds on it.

Claims are leases: claiming pushes `next_attempt_at` past the HTTP timeout, so a runner that
dies mid-send leaves the row due again, and several runners (one per `flask worker`) share
the work (SKIP LOCKED on PostgreSQL). A receiver therefore sees a message at least once;
webhook events carry an id to deduplicate on, and a score passback sends the current score.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session, sessionmaker

from .. import background
from ..config import Settings
from ..database import engine_for
from ..models import DeliveryStatus, OutboundDelivery
from ..models.base import utcnow

log = logging.getLogger(__name__)

PENDING, DELIVERED, FAILED = (s.value for s in DeliveryStatus)
BACKOFF_FACTOR = 3
MAX_BACKOFF = timedelta(hours=6)
CLAIM_BATCH = 20
POLL_SECONDS = 1.0


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    status_code: int | None = None
    error: str | None = None
    # Retrying cannot help (the target was removed, the platform granted no such scope).
    permanent: bool = False
    # What the receiver asked for (Retry-After), in seconds.
    retry_after: float | None = None
    # Columns of the row to set with the outcome (a passback records the score it sent).
    values: dict[str, Any] | None = None


SendStep = Callable[[], Outcome]


class DeliveryKind(Protocol):
    @property
    def model(self) -> type[OutboundDelivery]:
        """The table of this kind's deliveries."""

    def prepare(self, session: Session, row: Any) -> SendStep | Outcome:
        """The send step for this row, or an Outcome at once when there is nothing to send."""


def retry_delay(settings: Settings, tries: int, retry_after: float | None = None) -> timedelta:
    """Exponential backoff with jitter (so retries from one outage do not arrive together)."""
    delay = settings.outbound_retry_seconds * BACKOFF_FACTOR ** (tries - 1) * random.uniform(0.8, 1.2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(timedelta(seconds=delay), MAX_BACKOFF)


def claim_due(session: Session, model: type[OutboundDelivery], settings: Settings, now: datetime,
              limit: int = CLAIM_BATCH) -> list[tuple[int, int]]:
    """Claim up to `limit` due rows and commit; returns (id, tries) of each claim."""
    stmt = (select(model.id).where(model.status == PENDING, model.next_attempt_at <= now)
            .order_by(model.next_attempt_at).limit(limit))
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    ids = list(session.scalars(stmt))
    if not ids:
        session.rollback()
        return []
    # Past one try's timeout: a runner that died mid-send leaves the row due again after it.
    lease_end = now + timedelta(seconds=2 * settings.outbound_timeout_seconds + 5)
    session.execute(update(model).where(model.id.in_(ids)).values(
        tries=model.tries + 1, next_attempt_at=lease_end, last_attempt_at=now))
    claimed = [(row_id, tries) for row_id, tries in session.execute(select(model.id, model.tries).where(model.id.in_(ids)))]
    session.commit()
    return claimed


def record_outcome(session: Session, model: type[OutboundDelivery], row_id: int, tries: int,
                   outcome: Outcome, settings: Settings) -> str:
    """Store one try's outcome; the row's status afterwards. Ignored (returns "lost") when the
    row was claimed again meanwhile, by a runner that took over after this one's lease ran out."""
    now = utcnow()
    values: dict[str, Any] = {"last_status_code": outcome.status_code,
                              "last_error": (outcome.error or None) and outcome.error[:500], **(outcome.values or {})}
    if outcome.delivered:
        # A delivered outcome's error is a note (a score passback superseded: nothing to send).
        values.update(status=DELIVERED, delivered_at=now)
    elif outcome.permanent or tries >= settings.outbound_max_tries:
        values.update(status=FAILED)
    else:
        values.update(next_attempt_at=now + retry_delay(settings, tries, outcome.retry_after))
    result = cast(CursorResult[Any], session.execute(
        update(model).where(model.id == row_id, model.tries == tries, model.status == PENDING).values(**values)))
    session.commit()
    return values.get("status", PENDING) if result.rowcount == 1 else "lost"


def resend(session: Session, row: OutboundDelivery) -> None:
    """Queue a delivery again from its first try (an admin's or the endpoint owner's request)."""
    row.status, row.tries, row.next_attempt_at = PENDING, 0, utcnow()


class OutboundRunner:
    """Sends what is due, kind by kind, until stopped. Runs as a thread of `flask worker`, or
    alone as `flask outbound`."""

    def __init__(self, settings: Settings, kinds: Sequence[DeliveryKind], threads: int = 4) -> None:
        self.settings = settings
        self.kinds = list(kinds)
        self.sessions = sessionmaker(bind=engine_for(settings.sqlalchemy_url), expire_on_commit=False)
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="outbound")

    def run_once(self) -> int:
        """Send everything due now; how many tries were made."""
        tried = 0
        for kind in self.kinds:
            with self.sessions() as session:
                claimed = claim_due(session, kind.model, self.settings, utcnow())
            futures = [self.pool.submit(self._deliver, kind, row_id, tries) for row_id, tries in claimed]
            for future in futures:
                future.result()
            tried += len(claimed)
        return tried

    def _deliver(self, kind: DeliveryKind, row_id: int, tries: int) -> None:
        with self.sessions() as session:
            row = session.get(kind.model, row_id)
            try:
                step = kind.prepare(session, row)
            except Exception as exc:  # a bug or bad data must not stop the other deliveries
                log.exception("preparing %s %s failed", kind.model.__tablename__, row_id)
                step = Outcome(False, error=f"could not prepare the message: {type(exc).__name__}")
            session.rollback()  # no transaction stays open during the HTTP call
        outcome = step if isinstance(step, Outcome) else _run_step(step)
        with self.sessions() as session:
            status = record_outcome(session, kind.model, row_id, tries, outcome, self.settings)
        log.info("%s %s: try %d %s (%s)", kind.model.__tablename__, row_id, tries, status,
                 outcome.status_code or outcome.error)

    def serve(self, stop: threading.Event) -> None:
        """Send until `stop` (at once again while there was something to send)."""
        background.serve("outbound-runner", self.run_once, stop, POLL_SECONDS, again_at_once=True)

    def start_thread(self, stop: threading.Event) -> threading.Thread:
        return background.start_thread("outbound-runner", self.run_once, stop, POLL_SECONDS, again_at_once=True)


def _run_step(step: SendStep) -> Outcome:
    try:
        return step()
    except Exception as exc:
        log.exception("sending failed")
        return Outcome(False, error=f"{type(exc).__name__}: {exc}")
