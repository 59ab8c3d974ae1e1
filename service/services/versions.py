"""Exercise versions as a process keeps them: a version's content never changes (a change to an
exercise is a new version), so a version loaded once serves every later request, never stale.

A list of attempts (the learner history) is read as rows without their versions (ListedAttempt),
and `listed` gives each attempt its version and its exercise's current version (what
show_to_learner reads the rules of) from here: the database sends each version's content, and
psycopg parses it, once per process, not twice per attempt row of every page.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, literal_column, null, or_, select, tuple_
from sqlalchemy.orm import Session

from ..models import Attempt, Exercise, ExerciseVersion

#: The columns of an attempt that a list of them reads: what a page shows (AttemptSchema) and what
#: show_to_learner reads; not the workers' lease, the source of a search or the override's flag.
LISTED_COLUMNS = (Attempt.id, Attempt.client_id, Attempt.learner, Attempt.exercise_id, Attempt.exercise_version_id,
                  Attempt.lti_link_id, Attempt.course_id, Attempt.status, Attempt.answer, Attempt.code,
                  Attempt.result, Attempt.score, Attempt.grader_score, Attempt.correct, Attempt.attempt_number,
                  Attempt.late, Attempt.penalties, Attempt.scoring, Attempt.created_at, Attempt.started_at,
                  Attempt.graded_at)
#: The exercise's, beside them (labelled: an attempt's own columns keep their names).
LISTED_EXERCISE_COLUMNS = (Exercise.slug.label("exercise_slug"),
                           Exercise.current_version.label("exercise_current_version"))


def row_version(postgresql: bool) -> ColumnElement[Any]:
    """An attempt row's version, beside LISTED_COLUMNS: on PostgreSQL its xmin, the transaction
    that wrote this version of the row, which every INSERT and UPDATE of it changes (a grade, a
    regrade, an override, a lease); a committed row's values are one per (id, xmin). None on
    SQLite, which has no such column."""
    return (literal_column("attempts.xmin::text") if postgresql else null()).label("row_version")


@dataclass(frozen=True, slots=True)
class ListedExercise:
    """What a listed attempt's reader needs of its exercise: its slug, and its current version
    (`version`), whose rules are the learner's now."""

    id: int
    slug: str
    version: ExerciseVersion


@dataclass(frozen=True, slots=True)
class ListedAttempt:
    """An attempt as a list of them reads it: a row of LISTED_COLUMNS, no ORM object (loading
    one per row cost more than the row's statement), with its exercise and version from the
    VersionCache. Read by AttemptView and show_to_learner as a stored Attempt is."""

    exercise: ListedExercise
    exercise_version: ExerciseVersion
    row_version: str | None
    # LISTED_COLUMNS, in their order:
    id: uuid.UUID
    client_id: int
    learner: str
    exercise_id: int
    exercise_version_id: int
    lti_link_id: int | None
    course_id: int | None
    status: str
    answer: Any
    code: str | None
    result: dict[str, Any] | None
    score: float | None
    grader_score: float | None
    correct: bool | None
    attempt_number: int | None
    late: bool
    penalties: list[dict[str, Any]] | None
    scoring: dict[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    graded_at: datetime | None

    @property
    def report(self) -> dict[str, Any] | None:
        """The code grader's report (quiz kinds have feedback instead), as Attempt.report."""
        return self.result if self.code is not None else None


LISTED_COUNT = len(LISTED_COLUMNS)


class VersionCache:
    """Versions by id and by (exercise id, number), detached, their columns loaded. At most
    `max_entries`; past that it starts again empty (an exercise has a few versions).

    As with the cached current version (services/attempts.py CurrentVersion), the threads of the
    process read these objects as they are, never added to a session: a history only reads them."""

    def __init__(self, max_entries: int = 2_000) -> None:
        self.max_entries = max_entries
        self.by_id: dict[int, ExerciseVersion] = {}
        self.by_number: dict[tuple[int, int], ExerciseVersion] = {}

    def listed(self, session: Session, rows: Sequence[Row[Any]]) -> list[ListedAttempt]:
        """Rows of LISTED_COLUMNS, LISTED_EXERCISE_COLUMNS and row_version as ListedAttempts, each with its
        version and its exercise's current version, loading those this process has not seen yet
        in one statement."""
        by_id, by_number = self._versions(session, {row.exercise_version_id for row in rows},
                                          {(row.exercise_id, row.exercise_current_version) for row in rows})
        exercises: dict[int, ListedExercise] = {}
        listed = []
        for row in rows:
            exercise = exercises.get(row.exercise_id)
            if exercise is None:
                exercise = exercises[row.exercise_id] = ListedExercise(
                    row.exercise_id, row.exercise_slug, by_number[(row.exercise_id, row.exercise_current_version)])
            listed.append(ListedAttempt(exercise, by_id[row.exercise_version_id], row.row_version,
                                        *row[:LISTED_COUNT]))
        return listed

    def _versions(self, session: Session, ids: set[int], numbers: set[tuple[int, int]]
                  ) -> tuple[dict[int, ExerciseVersion], dict[tuple[int, int], ExerciseVersion]]:
        """The versions `ids` and `numbers`, from the cache or loaded into it; as dicts of their
        own, whatever other threads do to the cache meanwhile (it may start again empty)."""
        by_id, by_number = self.by_id, self.by_number
        found_ids = {i: by_id[i] for i in ids if i in by_id}
        found_numbers = {n: by_number[n] for n in numbers if n in by_number}
        if len(found_ids) < len(ids) or len(found_numbers) < len(numbers):
            for version in self._load(session, ids - found_ids.keys(), numbers - found_numbers.keys()):
                if version.id in ids:
                    found_ids[version.id] = version
                if (version.exercise_id, version.number) in numbers:
                    found_numbers[(version.exercise_id, version.number)] = version
        return found_ids, found_numbers

    def _load(self, session: Session, ids: Iterable[int], numbers: Iterable[tuple[int, int]]) -> list[ExerciseVersion]:
        ids, numbers = list(ids), list(numbers)
        if len(self.by_id) + len(ids) + len(numbers) > self.max_entries:
            self.by_id, self.by_number = {}, {}
        # A fresh session of the same connection: the request's session keeps no detached copies.
        with Session(bind=session.connection()) as loader:
            versions = list(loader.scalars(select(ExerciseVersion).where(or_(
                ExerciseVersion.id.in_(ids), tuple_(ExerciseVersion.exercise_id, ExerciseVersion.number).in_(numbers)))))
            loader.expunge_all()
        for version in versions:
            self.by_id[version.id] = version
            self.by_number[(version.exercise_id, version.number)] = version
        return versions
