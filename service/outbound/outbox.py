"""Attempt events and the deliveries they cause, written in the transaction that made the event.

An event comes with one webhook delivery per active endpoint of the attempt's client and a score
passback when the attempt came from an LTI launch; they commit together with the change that made
the event, or not at all. Both ways in write them with the same Core statements, on the session's
connection (no unit of work): `insert_new_attempt` with a new attempt (a quiz answer's
`attempt.graded`), `write_event` for a grade, regrade or override of a stored one (through
service/services/events.py `record_attempt_event`, which gives the event what the statistics
counters take from it; the workers fold it in afterwards). On PostgreSQL each is one statement.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Executable,
    FromClause,
    Insert,
    Select,
    Table,
    bindparam,
    insert,
    literal,
    select,
    true,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from ..models import (
    ApiClient,
    Attempt,
    AttemptEvent,
    DeliveryStatus,
    IdempotencyRecord,
    ScorePassback,
    WebhookDelivery,
    WebhookEndpoint,
)


def _active_endpoints(client_id: BindParameter[Any]) -> Select[Any]:
    """The ids of the client's active endpoints, which an event is delivered to. A revoked client's
    endpoints get nothing more: it can no longer see or manage them."""
    return (select(WebhookEndpoint.id).join(ApiClient, ApiClient.id == WebhookEndpoint.client_id)
            .where(WebhookEndpoint.client_id == client_id, WebhookEndpoint.disabled_at.is_(None),
                   ApiClient.revoked_at.is_(None)))


def event_columns(attempt_id: Any, type: str, data: dict[str, Any], at: datetime,
                  counters: dict[str, Any] | None) -> dict[str, Any]:
    """An event row's values. `counters`: what the statistics take from it (None: nothing, so it is
    counted already)."""
    return {"attempt_id": attempt_id, "type": type, "data": data, "created_at": at, "counters": counters,
            "counted_at": None if counters is not None else at}


def write_event(session: Session, *, attempt_id: Any, client_id: int, lti_link_id: int | None,
                type: str, data: dict[str, Any], at: datetime, counters: dict[str, Any] | None = None) -> None:
    """The event of a stored attempt and its deliveries, written now in the session's transaction.
    `counters`: what the statistics take from it (None: nothing, so it is counted already)."""
    params = {**{f"e_{k}": v for k, v in event_columns(attempt_id, type, data, at, counters).items()},
              "a_id": attempt_id, "a_client_id": client_id, "link_id": lti_link_id}
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        connection.execute(_event_statement(lti_link_id is not None), params)
    else:
        _insert_event_rows(connection, params, lti_link_id is not None)


# --------------------------------------------------------------------------- a new attempt's rows

_ATTEMPTS, _EVENTS = Attempt.__table__, AttemptEvent.__table__
_DELIVERIES, _PASSBACKS = WebhookDelivery.__table__, ScorePassback.__table__
_RECORDS = IdempotencyRecord.__table__
# The event's id where the database cannot name the event inserted beside (not PostgreSQL).
_EVENT_ID = bindparam("event_id", type_=_EVENTS.c.id.type)
EVENT_COLUMNS = ("attempt_id", "type", "data", "created_at", "counters", "counted_at")
RECORD_COLUMNS = ("client_id", "key", "request_digest", "response_status", "response_body", "location", "created_at")


@dataclass(frozen=True)
class NewAttemptRows:
    """Every row a submitted attempt makes, as column values: the attempt; its `attempt.graded`
    event when it is graded at once (a quiz answer; None for code, queued); the LTI link its score
    goes back to; the Idempotency-Key's record of the response (None without a key)."""

    attempt: dict[str, Any]
    event: dict[str, Any] | None
    lti_link_id: int | None
    record: dict[str, Any] | None


def insert_new_attempt(session: Session, rows: NewAttemptRows) -> None:
    """Write `rows` with what the event causes (a webhook delivery per active endpoint of the
    client, as `write_event` makes them, and the score passback of a launch's attempt), in the
    session's transaction: on PostgreSQL in one statement (data-modifying WITH), elsewhere in one
    statement per table. A unique violation (the attempt's number, the record's key) raises
    IntegrityError here, not at the commit."""
    params = {**{f"a_{k}": v for k, v in rows.attempt.items()},
              **({f"e_{k}": v for k, v in rows.event.items()} if rows.event is not None else {}),
              **({f"r_{k}": v for k, v in rows.record.items()} if rows.record is not None else {}),
              "link_id": rows.lti_link_id}
    shape = (rows.event is not None, rows.event is not None and rows.lti_link_id is not None, rows.record is not None)
    connection = session.connection()  # Core statements on the session's transaction: no ORM step
    if connection.dialect.name == "postgresql":
        connection.execute(_one_statement(*shape), params)
        return
    has_event, has_passback, has_record = shape
    connection.execute(_insert_attempt(), params)
    if has_event:
        _insert_event_rows(connection, params, has_passback)
    if has_record:
        connection.execute(_insert_record(), params)


def _insert_event_rows(connection: Connection, params: dict[str, Any], has_passback: bool) -> None:
    """The event, its deliveries and passback in one statement per table (not PostgreSQL)."""
    event_id = connection.execute(_insert_event(), params).scalar_one()
    connection.execute(_insert_deliveries(_EVENT_ID), {**params, "event_id": event_id})
    if has_passback:
        connection.execute(_insert_passback(_EVENT_ID), {**params, "event_id": event_id})


def _bound(table: Table, prefix: str, names: Iterable[str]) -> dict[str, BindParameter[Any]]:
    return {name: bindparam(prefix + name, type_=table.c[name].type) for name in names}


@functools.cache
def _insert_attempt() -> Insert:
    return insert(_ATTEMPTS).values(_bound(_ATTEMPTS, "a_", (c.name for c in _ATTEMPTS.columns)))


@functools.cache
def _insert_event() -> Insert:
    return insert(_EVENTS).values(_bound(_EVENTS, "e_", EVENT_COLUMNS)).returning(_EVENTS.c.id)


@functools.cache
def _insert_record() -> Insert:
    return insert(_RECORDS).values(_bound(_RECORDS, "r_", RECORD_COLUMNS))


@functools.cache  # SQLite's is built with _EVENT_ID for every event; PostgreSQL's with each statement
def _insert_deliveries(event_id: ColumnElement[Any], *join_event: FromClause) -> Insert:
    """One pending delivery of the event per active endpoint of the attempt's client."""
    at = bindparam("e_created_at", type_=_EVENTS.c.created_at.type)
    endpoints = _active_endpoints(bindparam("a_client_id", type_=_ATTEMPTS.c.client_id.type)).subquery()
    chosen = select(endpoints.c.id, event_id, at, at, literal(DeliveryStatus.PENDING.value), literal(0))
    for source in join_event:
        chosen = chosen.join(source, true())
    return insert(_DELIVERIES).from_select(
        ["endpoint_id", "event_id", "next_attempt_at", "created_at", "status", "tries"], chosen)


@functools.cache
def _insert_passback(event_id: ColumnElement[Any], *join_event: FromClause) -> Insert:
    at = bindparam("e_created_at", type_=_EVENTS.c.created_at.type)
    chosen = select(bindparam("a_id", type_=_ATTEMPTS.c.id.type), event_id,
                    bindparam("link_id", type_=_PASSBACKS.c.link_id.type), at, at,
                    literal(DeliveryStatus.PENDING.value), literal(0))
    if join_event:
        chosen = chosen.select_from(*join_event)
    return insert(_PASSBACKS).from_select(
        ["attempt_id", "event_id", "link_id", "next_attempt_at", "created_at", "status", "tries"], chosen)


@functools.cache
def _one_statement(has_event: bool, has_passback: bool, has_record: bool) -> Executable:
    """PostgreSQL: every row in one statement (built once per shape). The sub-statements of a WITH
    run on one snapshot and the foreign keys are checked at the statement's end, so the event may
    name the attempt inserted beside it."""
    parts: list[Any] = [_insert_attempt().cte("new_attempt")]
    if has_event:
        parts += _event_parts(has_passback)
    if has_record:
        return _insert_record().add_cte(*parts)
    if has_event:
        return select(literal(1)).add_cte(*parts)
    return _insert_attempt()


def _event_parts(has_passback: bool) -> list[Any]:
    """The event, its deliveries and passback as the parts of a data-modifying WITH."""
    event = _insert_event().cte("new_event")
    parts = [event, _insert_deliveries(event.c.id, event).cte("new_deliveries")]
    if has_passback:
        parts.append(_insert_passback(event.c.id, event).cte("new_passback"))
    return parts


@functools.cache
def _event_statement(has_passback: bool) -> Executable:
    """PostgreSQL: a stored attempt's event and what it causes in one statement."""
    return select(literal(1)).add_cte(*_event_parts(has_passback))
