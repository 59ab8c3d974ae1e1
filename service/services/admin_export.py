"""The grading dashboard's CSV exports: the attempts a search matches, and the gradebook.

Both are produced while they are sent: the rows come from the database through a server-side
cursor (STREAM_BATCH at a time) and leave as chunks of CSV text, so an export of every attempt
never sits in memory. Cells that a spreadsheet would run as a formula are neutralised.

No Flask here: the resources in service/resources/admin_attempts.py call these functions.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import scores
from ..models import ApiClient, Attempt, CourseMember, Exercise
from .admin_search import DEFAULT_SORT, STREAM_BATCH, SUMMARY_COLUMNS, AttemptFilters, id_of, stream_summaries
from .exercise_access import ExerciseAudience
from .names import MEMBER_OF_ATTEMPT

# Rows per chunk of CSV handed to the WSGI server.
CSV_CHUNK_ROWS = 500
# A cell starting with one of these is a formula to a spreadsheet (CSV injection): quoted.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# The attempts CSV's columns: the search summary's, in this order (learner_name, learner_email and
# learner_status from the attempt's course roster, empty where it names nobody).
ATTEMPT_CSV_COLUMNS = tuple(column.key for column in SUMMARY_COLUMNS)


class UnknownExercises(LookupError):
    def __init__(self, slugs: Sequence[str]) -> None:
        super().__init__(f"no exercise with the slug {', '.join(repr(s) for s in slugs)}")
        self.slugs = list(slugs)


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


def gradebook_exercises(session: Session, slugs: Sequence[str] | None,
                        audience: ExerciseAudience) -> list[tuple[int, str]]:
    """The gradebook's columns as (id, slug): the slugs asked for, in that order, or every
    exercise the caller sees (`audience`: the catalog and its courses' own; easiest first).
    Raises UnknownExercises, also for another course's exercise."""
    if not slugs:
        return [(id_, slug) for id_, slug in session.execute(select(Exercise.id, Exercise.slug).where(audience.where())
                                                             .order_by(Exercise.difficulty, Exercise.slug))]
    wanted = list(dict.fromkeys(slugs))
    found = dict(session.execute(select(Exercise.slug, Exercise.id).where(Exercise.slug.in_(wanted),
                                                                         audience.where())).all())
    missing = [slug for slug in wanted if slug not in found]
    if missing:
        raise UnknownExercises(missing)
    return [(found[slug], slug) for slug in wanted]


def gradebook_rows(session: Session, exercises: Sequence[tuple[int, str]], policy: str = scores.DEFAULT_POLICY,
                   client: str | None = None, all_exercises: bool = False,
                   course_id: int | None = None) -> Iterator[list[Any]]:
    """One row per (client, learner): client name, learner, their name and e-mail (from the roster
    of their attempts' courses: the first that names them, in submission order; empty where none
    does), then the score that counts per exercise in `exercises` order, under `policy`
    (service/scores.py).

    One query in submission order per (client, learner), read through a server-side cursor;
    a row is emitted each time the (client, learner) key changes, so memory holds one learner."""
    if policy not in scores.POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    client_id = id_of(session, ApiClient.id, ApiClient.name, client)
    if client_id is False or not exercises:
        return
    names = dict(session.execute(select(ApiClient.id, ApiClient.name)).all())
    columns = [exercise_id for exercise_id, _slug in exercises]
    stmt = (select(Attempt.client_id, Attempt.learner, Attempt.exercise_id, Attempt.score, CourseMember.name,
                   CourseMember.email)
            .outerjoin(CourseMember, MEMBER_OF_ATTEMPT)
            .where(scores.counted(), Attempt.score.is_not(None))
            .order_by(Attempt.client_id, Attempt.learner, *scores.SUBMISSION_ORDER))
    if not all_exercises:
        stmt = stmt.where(Attempt.exercise_id.in_(columns))
    if client_id is not None:
        stmt = stmt.where(Attempt.client_id == client_id)
    if course_id is not None:
        stmt = stmt.where(Attempt.course_id == course_id)
    result = session.execute(stmt.execution_options(yield_per=STREAM_BATCH))
    try:
        yield from _learner_rows(result, names, columns, policy)
    finally:
        result.close()


def _learner_rows(result: Iterable[Any], names: dict[int, str], columns: Sequence[int], policy: str) -> Iterator[list[Any]]:
    """The gradebook's rows from attempts in (client, learner) order: a row each time the key changes."""
    key: tuple[int, str] | None = None
    counting: dict[int, float | None] = {}
    named: tuple[str | None, str | None] = (None, None)
    for row_client, learner, exercise_id, score, name, email in result:
        if (row_client, learner) != key:
            if key is not None:
                yield [names.get(key[0]), key[1], *named, *(counting.get(c) for c in columns)]
            key, counting, named = (row_client, learner), {}, (None, None)
        if named == (None, None):
            named = (name, email)
        counting[exercise_id] = scores.keep(policy, counting.get(exercise_id), score)
    if key is not None:
        yield [names.get(key[0]), key[1], *named, *(counting.get(c) for c in columns)]


def gradebook_csv(session: Session, exercises: Sequence[tuple[int, str]], policy: str = scores.DEFAULT_POLICY,
                  client: str | None = None, all_exercises: bool = False, course_id: int | None = None) -> Iterator[str]:
    header = ["client", "learner", "learner_name", "learner_email", *(slug for _id, slug in exercises)]
    return csv_chunks(header, gradebook_rows(session, exercises, policy, client, all_exercises, course_id))
