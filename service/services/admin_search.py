"""Attempts for the grading dashboard: search with keyset cursors, one attempt in full, CSV exports.

Pages are keyset pages: a page asks for the rows after the last one the client saw, by sort key
and id (`WHERE (created_at, id) < (:c, :i) ORDER BY created_at DESC, id DESC LIMIT n`), so
page 10,000 costs what page 1 costs, and rows added meanwhile neither repeat nor vanish. The
cursor is that last row's key, base64 JSON: not secret, only validated.

Scores sort with the ungraded (no score) ranked lowest: last under `-score`, first under `score`.
Each part is its own index range (score IS NULL by id; the scored by (score, id)), read one after
the other, so no sort over the whole table is ever needed.

No Flask here: the resources in service/resources/admin_attempts.py call these functions.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Iterator, Sequence

from sqlalchemy import ColumnElement, Select, bindparam, select, tuple_
from sqlalchemy.orm import Session

from .. import scores
from ..models import (ApiClient, Attempt, AttemptEvent, Exercise, ExerciseVersion, GradeOverride,
                      ScorePassback, WebhookDelivery)

DEFAULT_SORT = "-created_at"
SORTS = ("-created_at", "created_at", "-score", "score")
# Server-side cursor batch of the CSV exports: rows fetched per round trip, never all at once.
STREAM_BATCH = 1000
# Rows per chunk of CSV handed to the WSGI server.
CSV_CHUNK_ROWS = 500
# A cell starting with one of these is a formula to a spreadsheet (CSV injection): quoted.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
CURSOR_VERSION = 1



class InvalidCursor(ValueError):
    """The cursor was not made by this API, or was made for another sort."""


class UnknownExercises(LookupError):
    def __init__(self, slugs: Sequence[str]) -> None:
        super().__init__(f"no exercise with the slug {', '.join(repr(s) for s in slugs)}")
        self.slugs = list(slugs)


@dataclass(frozen=True)
class AttemptFilters:
    exercise: str | None = None
    learner: str | None = None
    client: str | None = None
    status: str | None = None
    verdict: str | None = None
    likely_cause: str | None = None
    score_min: float | None = None
    score_max: float | None = None
    # since inclusive, until exclusive (created_at)
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def from_query(cls, query: dict[str, Any]) -> AttemptFilters:
        return cls(**{name: query.get(name) for name in cls.__dataclass_fields__})


# ------------------------------------------------------------------------------------------ cursor

@dataclass(frozen=True)
class Cursor:
    sort: str
    # created_at for the time sorts; the score (None: an ungraded attempt) for the score sorts.
    key: datetime | float | None
    id: uuid.UUID

    def encode(self) -> str:
        key = self.key.isoformat() if isinstance(self.key, datetime) else self.key
        body = json.dumps({"v": CURSOR_VERSION, "s": self.sort, "k": key, "i": str(self.id)}, separators=(",", ":"))
        return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, sort: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            body = json.loads(raw)
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise InvalidCursor("not a cursor returned by this API") from None
        if not isinstance(body, dict) or body.get("v") != CURSOR_VERSION or not {"s", "k", "i"} <= body.keys():
            raise InvalidCursor("not a cursor returned by this API")
        if body["s"] != sort:
            raise InvalidCursor(f"this cursor was made for sort={body['s']!r}, not sort={sort!r}: "
                                "start again without a cursor")
        try:
            attempt_id = uuid.UUID(body["i"])
        except (TypeError, ValueError, AttributeError):
            raise InvalidCursor("not a cursor returned by this API") from None
        return cls(sort, _cursor_key(sort, body["k"]), attempt_id)


def _cursor_key(sort: str, key: Any) -> datetime | float | None:
    if sort.lstrip("-") == "created_at":
        try:
            at = datetime.fromisoformat(key)
        except (TypeError, ValueError):
            raise InvalidCursor("not a cursor returned by this API") from None
        if at.tzinfo is None:
            raise InvalidCursor("not a cursor returned by this API")
        return at
    if key is None:
        return None
    if isinstance(key, bool) or not isinstance(key, (int, float)) or not math.isfinite(key):
        raise InvalidCursor("not a cursor returned by this API")
    return float(key)


# ------------------------------------------------------------------------------------------ search

SUMMARY_COLUMNS = (
    Attempt.id, Exercise.slug.label("exercise"), ExerciseVersion.number.label("exercise_version"),
    ApiClient.name.label("client"), Attempt.learner, Attempt.status, Attempt.verdict, Attempt.likely_cause,
    Attempt.score, Attempt.grader_score, Attempt.overridden, Attempt.correct, Attempt.created_at,
    Attempt.started_at, Attempt.graded_at,
)


# The attempts CSV's columns: the summary's, in this order.
ATTEMPT_CSV_COLUMNS = tuple(column.key for column in SUMMARY_COLUMNS)


def _summaries() -> Select:
    # Columns, not Attempt entities: an entity would join in each exercise version's whole content.
    return (select(*SUMMARY_COLUMNS).select_from(Attempt)
            .join(Exercise, Exercise.id == Attempt.exercise_id)
            .join(ExerciseVersion, ExerciseVersion.id == Attempt.exercise_version_id)
            .join(ApiClient, ApiClient.id == Attempt.client_id))


def _id_of(session: Session, column: Any, key_column: Any, value: str | None) -> int | None | bool:
    """The id for a slug or client name; False when nothing has it (nothing can match)."""
    if value is None:
        return None
    found = session.scalar(select(column).where(key_column == value))
    return False if found is None else found


def filter_clauses(session: Session, filters: AttemptFilters) -> list[ColumnElement[bool]] | None:
    """The WHERE clauses of the filters on attempts' own columns (slug and client name are
    looked up first, so the indexes on exercise_id and client_id serve them); None when an
    unknown slug or client name means no attempt matches."""
    exercise_id = _id_of(session, Exercise.id, Exercise.slug, filters.exercise)
    client_id = _id_of(session, ApiClient.id, ApiClient.name, filters.client)
    if exercise_id is False or client_id is False:
        return None
    clauses: list[ColumnElement[bool]] = []
    if exercise_id is not None:
        clauses.append(Attempt.exercise_id == exercise_id)
    if client_id is not None:
        clauses.append(Attempt.client_id == client_id)
    for name in ("learner", "status", "verdict", "likely_cause"):
        value = getattr(filters, name)
        if value is not None:
            clauses.append(getattr(Attempt, name) == value)
    if filters.score_min is not None:
        clauses.append(Attempt.score >= filters.score_min)
    if filters.score_max is not None:
        clauses.append(Attempt.score <= filters.score_max)
    if filters.since is not None:
        clauses.append(Attempt.created_at >= filters.since)
    if filters.until is not None:
        clauses.append(Attempt.created_at < filters.until)
    return clauses


def _typed(value: Any, column: Any) -> Any:
    return bindparam(None, value, type_=column.type)


def _after(columns: Sequence[Any], values: Sequence[Any], descending: bool) -> ColumnElement[bool]:
    """Rows after the cursor's: a row-value comparison, which a (key, id) index serves as a range."""
    left = tuple_(*columns)
    right = tuple_(*(_typed(v, c) for v, c in zip(values, columns)))
    return left < right if descending else left > right


@dataclass(frozen=True)
class _Segment:
    """A part of a sort order that one index range serves, read in order."""

    clauses: tuple[ColumnElement[bool], ...]
    order: tuple[Any, ...]
    key_columns: tuple[Any, ...]
    descending: bool

    def statement(self, base: Select, cursor_values: Sequence[Any] | None) -> Select:
        stmt = base.where(*self.clauses)
        if cursor_values is not None:
            stmt = stmt.where(_after(self.key_columns, cursor_values, self.descending))
        return stmt.order_by(*self.order)


def _segments(sort: str) -> list[tuple[str, _Segment]]:
    descending = sort.startswith("-")

    def ordered(column: Any) -> Any:
        return column.desc() if descending else column.asc()

    if sort.lstrip("-") == "created_at":
        return [("time", _Segment((), (ordered(Attempt.created_at), ordered(Attempt.id)),
                                  (Attempt.created_at, Attempt.id), descending))]
    scored = _Segment((Attempt.score.is_not(None),), (ordered(Attempt.score), ordered(Attempt.id)),
                      (Attempt.score, Attempt.id), descending)
    ungraded = _Segment((Attempt.score.is_(None),), (ordered(Attempt.id),), (Attempt.id,), descending)
    # The ungraded rank lowest: after every score going down, before every score going up.
    return [("scored", scored), ("null", ungraded)] if descending else [("null", ungraded), ("scored", scored)]


def _start(sort: str, cursor: Cursor | None) -> tuple[int, Sequence[Any] | None]:
    """Which segment the page starts in, and the key values to continue after within it."""
    if cursor is None:
        return 0, None
    names = [name for name, _ in _segments(sort)]
    if sort.lstrip("-") == "created_at":
        return 0, (cursor.key, cursor.id)
    if cursor.key is None:
        return names.index("null"), (cursor.id,)
    return names.index("scored"), (cursor.key, cursor.id)


def _cursor_of(sort: str, row: Any) -> Cursor:
    key = row.created_at if sort.lstrip("-") == "created_at" else row.score
    return Cursor(sort, key, row.id)


@dataclass(frozen=True)
class SearchPage:
    items: list[dict[str, Any]]
    next_cursor: str | None


def search(session: Session, filters: AttemptFilters, *, sort: str = DEFAULT_SORT, limit: int = 50,
           cursor: str | None = None) -> SearchPage:
    """One page of attempts matching the filters, in `sort` order, after `cursor`.

    Raises InvalidCursor for a cursor this API did not make for this sort."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}")
    after = Cursor.decode(cursor, sort) if cursor is not None else None
    clauses = filter_clauses(session, filters)
    if clauses is None:
        return SearchPage([], None)
    base = _summaries().where(*clauses)
    first, values = _start(sort, after)
    rows: list[Any] = []
    for index, (_name, segment) in enumerate(_segments(sort)):
        if index < first:
            continue
        wanted = limit + 1 - len(rows)  # one more than the page: is there a next page?
        stmt = segment.statement(base, values if index == first else None).limit(wanted)
        rows += session.execute(stmt).all()
        if len(rows) > limit:
            break
    next_cursor = _cursor_of(sort, rows[limit - 1]).encode() if len(rows) > limit else None
    return SearchPage([row._asdict() for row in rows[:limit]], next_cursor)


def stream_summaries(session: Session, filters: AttemptFilters, sort: str = DEFAULT_SORT) -> Iterator[Any]:
    """Every attempt matching the filters, in `sort` order, fetched STREAM_BATCH rows at a time
    through a server-side cursor: the rows are never all in memory."""
    clauses = filter_clauses(session, filters)
    if clauses is None:
        return
    base = _summaries().where(*clauses)
    for _name, segment in _segments(sort):
        result = session.execute(segment.statement(base, None).execution_options(yield_per=STREAM_BATCH))
        try:
            yield from result
        finally:
            result.close()


# ------------------------------------------------------------------------------------------ detail

def attempt_detail(session: Session, attempt_id: uuid.UUID) -> dict[str, Any] | None:
    """One attempt in full: its summary, what was submitted, the grader's report, and what
    became of its grade (events, webhook deliveries, LMS passbacks, overrides)."""
    attempt = session.get(Attempt, attempt_id)
    if attempt is None:
        return None
    result = attempt.result or {}
    # Code attempts carry the judge's report; quiz attempts only feedback.
    report = attempt.report or {}
    detail: dict[str, Any] = {
        "id": attempt.id,
        "exercise": attempt.exercise.slug,
        "exercise_kind": attempt.exercise.kind,
        "exercise_version": attempt.exercise_version.number,
        "exercise_version_digest": attempt.exercise_version.digest,
        "client": session.scalar(select(ApiClient.name).where(ApiClient.id == attempt.client_id)),
        "learner": attempt.learner,
        "status": attempt.status,
        "verdict": attempt.verdict,
        "likely_cause": attempt.likely_cause,
        "score": attempt.score,
        "grader_score": attempt.grader_score,
        "overridden": attempt.overridden,
        "correct": attempt.correct,
        "created_at": attempt.created_at,
        "started_at": attempt.started_at,
        "graded_at": attempt.graded_at,
        "tries": attempt.tries,
        "lti_link_id": attempt.lti_link_id,
        "request_id": attempt.request_id,
        "answer": attempt.answer,
        "code": attempt.code,
        "report_status": report.get("status"),
        "grader_version": report.get("grader_version"),
        "checks": report.get("checks") or [],
        "likely_causes": report.get("likely_causes") or [],
        "diagnostics": report.get("diagnostics") or [],
        "error": report.get("error"),
        "feedback": result.get("feedback") or [],
        "output": report.get("output"),
        "timings": {
            "created_at": attempt.created_at,
            "started_at": attempt.started_at,
            "graded_at": attempt.graded_at,
            "queued_ms": _ms_between(attempt.created_at, attempt.started_at),
            "grading_ms": _ms_between(attempt.started_at, attempt.graded_at),
            "report": report.get("timings") or {},
        },
    }
    detail["events"] = [
        {"id": e.id, "type": e.type, "created_at": e.created_at, "data": e.data}
        for e in session.scalars(select(AttemptEvent).where(AttemptEvent.attempt_id == attempt.id)
                                 .order_by(AttemptEvent.id))]
    detail["webhook_deliveries"] = [
        {"id": d.id, "endpoint_id": d.endpoint_id, "event_id": d.event_id, "event_type": event_type,
         "status": d.status, "tries": d.tries, "last_status_code": d.last_status_code, "last_error": d.last_error,
         "created_at": d.created_at, "last_attempt_at": d.last_attempt_at, "delivered_at": d.delivered_at}
        for d, event_type in session.execute(
            select(WebhookDelivery, AttemptEvent.type).join(AttemptEvent, AttemptEvent.id == WebhookDelivery.event_id)
            .where(AttemptEvent.attempt_id == attempt.id).order_by(WebhookDelivery.id))]
    detail["passbacks"] = [
        {"id": p.id, "event_id": p.event_id, "link_id": p.link_id, "status": p.status, "tries": p.tries,
         "last_status_code": p.last_status_code, "last_error": p.last_error, "sent_score": p.sent_score,
         "created_at": p.created_at, "last_attempt_at": p.last_attempt_at, "delivered_at": p.delivered_at}
        for p in session.scalars(select(ScorePassback).where(ScorePassback.attempt_id == attempt.id)
                                 .order_by(ScorePassback.id))]
    detail["overrides"] = [
        {"id": o.id, "actor": o.actor, "old_score": o.old_score, "new_score": o.new_score, "reason": o.reason,
         "created_at": o.created_at}
        for o in session.scalars(select(GradeOverride).where(GradeOverride.attempt_id == attempt.id)
                                 .order_by(GradeOverride.id))]
    return detail


def _ms_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000, 3)


# ------------------------------------------------------------------------------------------ CSV

def csv_cell(value: Any) -> Any:
    """A value as a CSV cell; text a spreadsheet would run as a formula gets a leading quote.

    Learner ids, client names and the like come from clients and may be anything."""
    kind = type(value)
    if kind is str:
        return "'" + value if value.startswith(FORMULA_PREFIXES) else value
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    if kind is float or kind is int:
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return csv_cell(str(value))


def csv_chunks(header: Sequence[str], rows: Iterable[Sequence[Any]], chunk_rows: int | None = None) -> Iterator[str]:
    """CSV text (RFC 4180, CRLF line ends): the header, then a chunk every `chunk_rows` rows."""
    chunk_rows = chunk_rows or CSV_CHUNK_ROWS
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([csv_cell(name) for name in header])
    yield buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    pending = 0
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
        pending += 1
        if pending >= chunk_rows:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
            pending = 0
    if pending:
        yield buffer.getvalue()


def attempts_csv(session: Session, filters: AttemptFilters, sort: str = DEFAULT_SORT) -> Iterator[str]:
    return csv_chunks(ATTEMPT_CSV_COLUMNS, stream_summaries(session, filters, sort))


def gradebook_exercises(session: Session, slugs: Sequence[str] | None) -> list[tuple[int, str]]:
    """The gradebook's columns as (id, slug): the slugs asked for, in that order, or every
    exercise (easiest first). Raises UnknownExercises."""
    if not slugs:
        return [tuple(r) for r in session.execute(select(Exercise.id, Exercise.slug)
                                                  .order_by(Exercise.difficulty, Exercise.slug))]
    wanted = list(dict.fromkeys(slugs))
    found = dict(session.execute(select(Exercise.slug, Exercise.id).where(Exercise.slug.in_(wanted))).all())
    missing = [slug for slug in wanted if slug not in found]
    if missing:
        raise UnknownExercises(missing)
    return [(found[slug], slug) for slug in wanted]


def gradebook_rows(session: Session, exercises: Sequence[tuple[int, str]], policy: str = scores.DEFAULT_POLICY,
                   client: str | None = None, all_exercises: bool = False) -> Iterator[list[Any]]:
    """One row per (client, learner): client name, learner, then the score that counts per
    exercise in `exercises` order, under `policy` (service/scores.py).

    One query in submission order per (client, learner), read through a server-side cursor;
    a row is emitted each time the (client, learner) key changes, so memory holds one learner."""
    if policy not in scores.POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    client_id = _id_of(session, ApiClient.id, ApiClient.name, client)
    if client_id is False or not exercises:
        return
    names = dict(session.execute(select(ApiClient.id, ApiClient.name)).all())
    columns = [exercise_id for exercise_id, _slug in exercises]
    stmt = (select(Attempt.client_id, Attempt.learner, Attempt.exercise_id, Attempt.score)
            .where(scores.counted(), Attempt.score.is_not(None))
            .order_by(Attempt.client_id, Attempt.learner, *scores.SUBMISSION_ORDER))
    if not all_exercises:
        stmt = stmt.where(Attempt.exercise_id.in_(columns))
    if client_id is not None:
        stmt = stmt.where(Attempt.client_id == client_id)
    result = session.execute(stmt.execution_options(yield_per=STREAM_BATCH))
    key: tuple[int, str] | None = None
    counting: dict[int, float | None] = {}
    try:
        for row_client, learner, exercise_id, score in result:
            if (row_client, learner) != key:
                if key is not None:
                    yield [names.get(key[0]), key[1], *(counting.get(c) for c in columns)]
                key, counting = (row_client, learner), {}
            counting[exercise_id] = scores.keep(policy, counting.get(exercise_id), score)
        if key is not None:
            yield [names.get(key[0]), key[1], *(counting.get(c) for c in columns)]
    finally:
        result.close()


def gradebook_csv(session: Session, exercises: Sequence[tuple[int, str]], policy: str = scores.DEFAULT_POLICY,
                  client: str | None = None, all_exercises: bool = False) -> Iterator[str]:
    header = ["client", "learner", *(slug for _id, slug in exercises)]
    return csv_chunks(header, gradebook_rows(session, exercises, policy, client, all_exercises))
