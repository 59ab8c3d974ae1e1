"""Attempt events and the deliveries they cause, written in the transaction that made the event.

An event comes with one webhook delivery per active endpoint of the attempt's client and a score
passback when the attempt came from an LTI launch; they commit together with the change that made
the event, or not at all. The outbox writes the event and its deliveries, never the change: a grade,
regrade or override of a stored attempt through `write_event` (service/services/events.py
`record_attempt_event`, which gives the event what the statistics counters take from it; the
workers fold it in afterwards); a new attempt's `attempt.graded` event beside the attempt, whose
writer (service/services/attempts.py `insert_new_attempt`) adds `event_parts` to its own
statement, or runs `insert_event_rows` after its own insert.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CTE,
    BindParameter,
    ColumnElement,
    Executable,
    FromClause,
    Insert,
    Select,
    bindparam,
    insert,
    literal,
    select,
    true,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from ..database import bound_values
from ..models import ApiClient, AttemptEvent, DeliveryStatus, ScorePassback, WebhookDelivery, WebhookEndpoint


def _active_endpoints(client_id: BindParameter[Any]) -> Select[Any]:
    """The ids of the client's active endpoints, which an event is delivered to. A revoked client's
    endpoints get nothing more: it can no longer see or manage them."""
    return (select(WebhookEndpoint.id).join(ApiClient, ApiClient.id == WebhookEndpoint.client_id)
            .where(WebhookEndpoint.client_id == client_id, WebhookEndpoint.disabled_at.is_(None),
                   ApiClient.revoked_at.is_(None)))


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event of an attempt, and whom it goes to: the active endpoints of the attempt's client, and
    the LMS of the link its score goes back to (`lti_link_id`; None: not launched). `counters`: what
    the statistics take from it (None: nothing, so it is counted already)."""

    attempt_id: uuid.UUID
    client_id: int
    lti_link_id: int | None
    type: str
    data: dict[str, Any]
    at: datetime
    counters: dict[str, Any] | None

    def params(self) -> dict[str, Any]:
        """The statements' parameters: the event's columns and the two that choose its deliveries,
        all named e_ (they share one statement with the rows of its writer's change)."""
        return {"e_attempt_id": self.attempt_id, "e_type": self.type, "e_data": self.data, "e_created_at": self.at,
                "e_counters": self.counters, "e_counted_at": None if self.counters is not None else self.at,
                "e_client_id": self.client_id, "e_link_id": self.lti_link_id}


def write_event(session: Session, event: NewEvent) -> None:
    """The event of a stored attempt and its deliveries, written now in the session's transaction:
    one statement on PostgreSQL."""
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        connection.execute(_event_statement(event.lti_link_id is not None), event.params())
    else:
        insert_event_rows(connection, event)


_EVENTS, _DELIVERIES, _PASSBACKS = AttemptEvent.__table__, WebhookDelivery.__table__, ScorePassback.__table__
# The event's id where the database cannot name the event inserted beside (not PostgreSQL).
_EVENT_ID = bindparam("event_id", type_=_EVENTS.c.id.type)
EVENT_COLUMNS = ("attempt_id", "type", "data", "created_at", "counters", "counted_at")


def insert_event_rows(connection: Connection, event: NewEvent) -> None:
    """The event, its deliveries and passback in one statement per table (not PostgreSQL), on
    `connection`'s transaction."""
    params = event.params()
    params["event_id"] = connection.execute(_insert_event(), params).scalar_one()
    connection.execute(_insert_deliveries(_EVENT_ID), params)
    if event.lti_link_id is not None:
        connection.execute(_insert_passback(_EVENT_ID), params)


@functools.cache
def _insert_event() -> Insert:
    return insert(_EVENTS).values(bound_values(_EVENTS, "e_", EVENT_COLUMNS)).returning(_EVENTS.c.id)


@functools.cache  # SQLite's is built with _EVENT_ID for every event; PostgreSQL's with each statement
def _insert_deliveries(event_id: ColumnElement[Any], *join_event: FromClause) -> Insert:
    """One pending delivery of the event per active endpoint of the attempt's client."""
    at = bindparam("e_created_at", type_=_EVENTS.c.created_at.type)
    endpoints = _active_endpoints(bindparam("e_client_id", type_=WebhookEndpoint.__table__.c.client_id.type)).subquery()
    chosen = select(endpoints.c.id, event_id, at, at, literal(DeliveryStatus.PENDING.value), literal(0))
    for source in join_event:
        chosen = chosen.join(source, true())
    return insert(_DELIVERIES).from_select(
        ["endpoint_id", "event_id", "next_attempt_at", "created_at", "status", "tries"], chosen)


@functools.cache
def _insert_passback(event_id: ColumnElement[Any], *join_event: FromClause) -> Insert:
    at = bindparam("e_created_at", type_=_EVENTS.c.created_at.type)
    chosen = select(bindparam("e_attempt_id", type_=_EVENTS.c.attempt_id.type), event_id,
                    bindparam("e_link_id", type_=_PASSBACKS.c.link_id.type), at, at,
                    literal(DeliveryStatus.PENDING.value), literal(0))
    if join_event:
        chosen = chosen.select_from(*join_event)
    return insert(_PASSBACKS).from_select(
        ["attempt_id", "event_id", "link_id", "next_attempt_at", "created_at", "status", "tries"], chosen)


def event_parts(has_passback: bool) -> tuple[CTE, ...]:
    """PostgreSQL: the event, its deliveries and passback as the parts of a data-modifying WITH, to
    add to the statement of the change that made the event (built once per shape). The parts of a
    WITH run on one snapshot and the foreign keys are checked at the statement's end, so the event
    may name an attempt inserted beside it."""
    event = _insert_event().cte("new_event")
    parts = [event, _insert_deliveries(event.c.id, event).cte("new_deliveries")]
    if has_passback:
        parts.append(_insert_passback(event.c.id, event).cte("new_passback"))
    return tuple(parts)


@functools.cache
def _event_statement(has_passback: bool) -> Executable:
    """PostgreSQL: a stored attempt's event and what it causes in one statement."""
    return select(literal(1)).add_cte(*event_parts(has_passback))
