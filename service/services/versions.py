"""Exercise versions as a process keeps them: a version's content never changes (a change to an
exercise is a new version), so a version loaded once serves every later request, never stale.

A list of attempts (the learner history) loads without its versions, and `attach` gives each
attempt its version and its exercise's current version (what show_to_learner reads the rules
of) from here: the database sends each version's content, and psycopg parses it, once per
process, not twice per attempt row of every page.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import or_, select, tuple_
from sqlalchemy.orm import Session, defaultload, lazyload
from sqlalchemy.orm.attributes import set_committed_value

from ..models import Attempt, Exercise, ExerciseVersion

#: Load options for attempts whose versions `VersionCache.attach` sets: the exercise joined
#: without its topics (which nothing about an attempt shows) or its current version.
WITHOUT_VERSIONS = (defaultload(Attempt.exercise).lazyload(Exercise.topics),
                    defaultload(Attempt.exercise).lazyload(Exercise.version), lazyload(Attempt.exercise_version))


class VersionCache:
    """Versions by id and by (exercise id, number), detached, their columns loaded. At most
    `max_entries`; past that it starts again empty (an exercise has a few versions).

    As with the cached current version (services/attempts.py CurrentVersion), the threads of the
    process read these objects as they are, never added to a session: a history only reads them."""

    def __init__(self, max_entries: int = 2_000) -> None:
        self.max_entries = max_entries
        self.by_id: dict[int, ExerciseVersion] = {}
        self.by_number: dict[tuple[int, int], ExerciseVersion] = {}

    def attach(self, session: Session, attempts: Sequence[Attempt]) -> None:
        """Set each attempt's version and its exercise's current version (the cached objects, as
        committed values: no session adds them), loading the versions this process has not seen
        yet in one statement."""
        ids = {attempt.exercise_version_id for attempt in attempts} - self.by_id.keys()
        numbers = {(attempt.exercise_id, attempt.exercise.current_version) for attempt in attempts} - self.by_number.keys()
        if ids or numbers:
            self._load(session, ids, numbers)

        # A version missing anyway (that thread's start between) is left to load lazily.
        by_id, by_number = self.by_id, self.by_number
        for attempt in attempts:
            exercise = attempt.exercise
            if (version := by_id.get(attempt.exercise_version_id)) is not None:
                set_committed_value(attempt, "exercise_version", version)
            if (current := by_number.get((exercise.id, exercise.current_version))) is not None:
                set_committed_value(exercise, "version", current)

    def _load(self, session: Session, ids: set[int], numbers: set[tuple[int, int]]) -> None:
        if len(self.by_id) + len(ids) + len(numbers) > self.max_entries:
            self.by_id, self.by_number = {}, {}
        # A fresh session of the same connection: the request's session keeps no detached copies.
        with Session(bind=session.connection()) as loader:
            for version in loader.scalars(select(ExerciseVersion).where(or_(
                    ExerciseVersion.id.in_(ids),
                    tuple_(ExerciseVersion.exercise_id, ExerciseVersion.number).in_(numbers)))):
                self.by_id[version.id] = version
                self.by_number[(version.exercise_id, version.number)] = version
            loader.expunge_all()
