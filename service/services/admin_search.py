"""Attempt search for the grading dashboard: filters, sorts and keyset cursors.

Pages are keyset pages: a page asks for the rows after the last one the client saw, by sort key
and id (`WHERE (created_at, id) < (:c, :i) ORDER BY created_at DESC, id DESC LIMIT n`), so
page 10,000 costs what page 1 costs, and rows added meanwhile neither repeat nor vanish. The
cursor is that last row's key, base64 JSON: not secret, only validated.

Scores sort with the ungraded (no score) ranked lowest: last under `-score`, first under `score`.
Each part is its own index range (score IS NULL by id; the scored by (score, id)), read one after
the other, so no sort over the whole table is ever needed.

Each attempt carries its learner's name, e-mail and roster status from the member row of its
course (service/services/names.py): a LEFT JOIN on course_members' unique (course_id, learner), one
index lookup per row of the page, which neither the filters nor the keyset order touch.

One attempt in full is service/services/admin_detail.py; the CSV exports, which stream what
`stream_summaries` reads, service/services/admin_export.py. No Flask here: the resources in
service/resources/admin_attempts.py call these functions.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, select, tuple_
from sqlalchemy.orm import Session

from ..database import window
from ..models import ApiClient, Attempt, CourseMember, Exercise, ExerciseVersion
from .names import MEMBER_OF_ATTEMPT, NAME_COLUMNS

DEFAULT_SORT = "-created_at"
SORTS = ("-created_at", "created_at", "-score", "score")
# Server-side cursor batch of the CSV exports: rows fetched per round trip, never all at once.
STREAM_BATCH = 1000
CURSOR_VERSION = 1


class InvalidCursor(ValueError):
    """The cursor was not made by this API, or was made for another sort."""


@dataclass(frozen=True)
class AttemptFilters:
    exercise: str | None = None
    learner: str | None = None
    client: str | None = None
    # A course's id (None: every course).
    course: int | None = None
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
    ApiClient.name.label("client"), Attempt.learner, *NAME_COLUMNS, Attempt.status, Attempt.verdict, Attempt.likely_cause,
    Attempt.score, Attempt.grader_score, Attempt.overridden, Attempt.correct, Attempt.created_at,
    Attempt.started_at, Attempt.graded_at,
)


def _summaries() -> Select:
    # Columns, not Attempt entities: an entity would join in each exercise version's whole content.
    return (select(*SUMMARY_COLUMNS).select_from(Attempt)
            .join(Exercise, Exercise.id == Attempt.exercise_id)
            .join(ExerciseVersion, ExerciseVersion.id == Attempt.exercise_version_id)
            .join(ApiClient, ApiClient.id == Attempt.client_id)
            .outerjoin(CourseMember, MEMBER_OF_ATTEMPT))


def id_of(session: Session, column: Any, key_column: Any, value: str | None) -> int | None | bool:
    """The id for a slug or client name; False when nothing has it (nothing can match)."""
    if value is None:
        return None
    found = session.scalar(select(column).where(key_column == value))
    return False if found is None else found


def filter_clauses(session: Session, filters: AttemptFilters) -> list[ColumnElement[bool]] | None:
    """The WHERE clauses of the filters on attempts' own columns (slug and client name are
    looked up first, so the indexes on exercise_id and client_id serve them); None when an
    unknown slug or client name means no attempt matches."""
    exercise_id = id_of(session, Exercise.id, Exercise.slug, filters.exercise)
    client_id = id_of(session, ApiClient.id, ApiClient.name, filters.client)
    if exercise_id is False or client_id is False:
        return None
    clauses: list[ColumnElement[bool]] = []
    if exercise_id is not None:
        clauses.append(Attempt.exercise_id == exercise_id)
    if client_id is not None:
        clauses.append(Attempt.client_id == client_id)
    for name, column in (("learner", Attempt.learner), ("status", Attempt.status), ("verdict", Attempt.verdict),
                         ("likely_cause", Attempt.likely_cause), ("course", Attempt.course_id)):
        value = getattr(filters, name)
        if value is not None:
            clauses.append(column == value)
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
        stmt = window(segment.statement(base, values if index == first else None), wanted)
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
