"""Pre-aggregated progress and outcome counters, brought up to date from the attempt events.

A grade, regrade or override writes an `attempt_events` row in its own transaction, carrying what
the counters need of it (`counter_input`: the grade the event left and, for a regrade or override,
the grade before it); nothing here runs in that request. The workers fold the events not yet
counted into the counters in batches (`fold_pending`, from service/jobs/counters.py), so the
statistics lag the grades by about a fold interval and are exact once caught up; `counters_as_of`
tells a reader how far they are. What the counters hold (service/models/progress.py):

- `learner_progress`: one row per (client, learner, exercise), recomputed from that learner's
  graded attempts at the exercise once per batch (a learner has few attempts at one exercise);
- `exercise_progress`: per exercise, graded and passed attempts, learners and learners who passed;
- `exercise_daily_counts`: graded and passed attempts by exercise and UTC day of submission;
- `exercise_outcome_counts`: failing checks and first likely causes by exercise and name.

The last three are adjusted by increments summed over the batch: +1 for a first grade; for a
regrade or override, the previous grade's contributions are taken away and the new one's added.
Each event carries its own grade, so the order in which events are folded does not matter. All
increments are upserts (`ON CONFLICT DO UPDATE SET n = n + excluded.n`), and on PostgreSQL a
batch takes its events with `FOR UPDATE SKIP LOCKED`, so folders running at once neither lose nor
double a count. `rebuild` recomputes every counter from the attempts table with set-based SQL
(after a bulk load, or to check the counters) and marks every event counted.

Only graded attempts count (an attempt the grader failed on is not a learner's outcome); an
attempt passed when its verdict is `passed` (the quiz and code graders set it from `correct`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from .. import scores
from ..database import upsert_insert
from ..models import Attempt, AttemptEvent, AttemptRow, AttemptStatus
from ..models.base import utcnow
from ..models.progress import (
    CAUSE,
    CHECK,
    NOT_COUNTED,
    ExerciseDailyCount,
    ExerciseOutcomeCount,
    ExerciseProgress,
    LearnerProgress,
)

GRADED = AttemptStatus.GRADED.value
PASSED = "passed"
NAME_LENGTH = 100  # ExerciseOutcomeCount.name


def failed_checks(result: Any) -> list[str]:
    """Names of the checks a code report failed (quiz results have none)."""
    checks = result.get("checks") if isinstance(result, dict) else None
    if not isinstance(checks, list):
        return []
    return [c["name"][:NAME_LENGTH] for c in checks
            if isinstance(c, dict) and c.get("passed") is False and isinstance(c.get("name"), str)]


def grade_snapshot(attempt: Attempt) -> dict[str, Any]:
    """The attempt's grade as `previous` of a later regrade or override event: call it before
    changing the attempt, and pass the result to record_attempt_event(previous=...)."""
    return {"score": attempt.score, "verdict": attempt.verdict, "likely_cause": attempt.likely_cause,
            "failed_checks": failed_checks(attempt.result)}


def _insert(session: Session, model: type) -> Any:
    return upsert_insert(session.get_bind().dialect.name, model)


def _outcomes(failed: Iterable[str], likely_cause: str | None) -> Counter:
    outcomes = Counter((CHECK, name[:NAME_LENGTH]) for name in failed)
    if likely_cause:
        outcomes[(CAUSE, likely_cause[:NAME_LENGTH])] += 1
    return outcomes


def counter_input(attempt: Attempt | AttemptRow, previous: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the counters take from an event that left `attempt` as it is now: its grade, and the
    grade before (`previous`, see grade_snapshot; None for a first grade). None when the event
    changes no counter (an attempt neither graded now nor before)."""
    graded = attempt.status == GRADED
    if not graded and previous is None:
        return None
    return {"graded": graded, "verdict": attempt.verdict, "likely_cause": attempt.likely_cause,
            "failed_checks": failed_checks(attempt.result) if graded else [], "previous": previous}


@dataclass
class _Batch:
    """A batch of events' increments, summed: what fold_pending writes."""

    exercises: dict[int, list[int]] = field(default_factory=dict)  # exercise -> [attempts, passed]
    days: dict[tuple[int, date], list[int]] = field(default_factory=dict)  # (exercise, day) -> [attempts, passed]
    outcomes: dict[int, Counter] = field(default_factory=dict)  # exercise -> (kind, name) -> delta
    learners: set[tuple[int, str, int]] = field(default_factory=set)  # (client, learner, exercise)

    def add(self, counters: dict[str, Any], client_id: int, learner: str, exercise_id: int, submitted: date) -> None:
        previous = counters.get("previous")
        counted = bool(counters["graded"])
        attempts = int(counted) - int(previous is not None)
        passed = (int(counted and counters.get("verdict") == PASSED)
                  - int(previous is not None and previous.get("verdict") == PASSED))
        totals = self.exercises.setdefault(exercise_id, [0, 0])
        totals[0] += attempts
        totals[1] += passed
        if attempts or passed:
            day = self.days.setdefault((exercise_id, submitted), [0, 0])
            day[0] += attempts
            day[1] += passed
        outcomes = self.outcomes.setdefault(exercise_id, Counter())
        if counted:
            outcomes.update(_outcomes(counters.get("failed_checks") or [], counters.get("likely_cause")))
        if previous is not None:
            outcomes.subtract(_outcomes(previous.get("failed_checks") or [], previous.get("likely_cause")))
        self.learners.add((client_id, learner, exercise_id))

    def write(self, session: Session) -> None:
        """The summed increments, upserted. Locks in one order for every batch: the exercises'
        totals rows, the learners' rows, the days, the outcome rows by name; two folders (or a
        folder and a rebuild) never wait in a cycle."""
        for exercise_id, (attempts, passed) in sorted(self.exercises.items()):
            _bump_exercise(session, exercise_id, attempts=attempts, passed_attempts=passed)
        learner_deltas: dict[int, list[int]] = {}
        for client_id, learner, exercise_id in sorted(self.learners):
            learners, passed_learners = refresh_learner(session, client_id, learner, exercise_id)
            deltas = learner_deltas.setdefault(exercise_id, [0, 0])
            deltas[0] += learners
            deltas[1] += passed_learners
        table = ExerciseProgress.__table__
        for exercise_id, (learners, passed_learners) in sorted(learner_deltas.items()):
            if learners or passed_learners:
                session.execute(update(table).where(table.c.exercise_id == exercise_id).values(
                    learners=table.c.learners + learners, passed_learners=table.c.passed_learners + passed_learners))
        for (exercise_id, day), (attempts, passed) in sorted(self.days.items()):
            if attempts or passed:
                _bump_day(session, exercise_id, day, attempts, passed)
        for exercise_id, outcomes in sorted(self.outcomes.items()):
            _bump_outcomes(session, exercise_id, outcomes)


#: Events folded per transaction: large enough to make one upsert serve many events, small enough
#: to keep the counters' row locks short.
FOLD_BATCH = 500


def fold_pending(session: Session, limit: int = FOLD_BATCH) -> int:
    """Fold up to `limit` events not yet counted into the counters and mark them counted, in the
    caller's transaction (commit it). Returns how many events were taken (0: caught up)."""
    stmt = (select(AttemptEvent.id, AttemptEvent.counters, Attempt.client_id, Attempt.learner, Attempt.exercise_id,
                   Attempt.created_at)
            .join(Attempt, Attempt.id == AttemptEvent.attempt_id)
            .where(NOT_COUNTED).order_by(AttemptEvent.id).limit(limit))
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=AttemptEvent, skip_locked=True)
    rows = session.execute(stmt).all()
    if not rows:
        return 0
    batch = _Batch()
    for row in rows:
        if row.counters:
            batch.add(row.counters, row.client_id, row.learner, row.exercise_id, row.created_at.date())
    batch.write(session)
    session.execute(update(AttemptEvent).where(AttemptEvent.id.in_([row.id for row in rows]))
                    .values(counted_at=utcnow()))
    return len(rows)


def counters_as_of(session: Session) -> datetime | None:
    """The time of the oldest event the counters have not taken in yet: they hold every grade
    made before it. None when they are up to date."""
    oldest: datetime | None = session.scalar(select(func.min(AttemptEvent.created_at)).where(NOT_COUNTED))
    return oldest


def _bump_exercise(session: Session, exercise_id: int, *, attempts: int, passed_attempts: int) -> None:
    table = ExerciseProgress.__table__
    stmt = _insert(session, ExerciseProgress).values(exercise_id=exercise_id, attempts=attempts,
                                                    passed_attempts=passed_attempts, learners=0, passed_learners=0)
    session.execute(stmt.on_conflict_do_update(index_elements=[table.c.exercise_id], set_={
        "attempts": table.c.attempts + stmt.excluded.attempts,
        "passed_attempts": table.c.passed_attempts + stmt.excluded.passed_attempts}))


def _bump_day(session: Session, exercise_id: int, day: date, attempts: int, passed: int) -> None:
    table = ExerciseDailyCount.__table__
    stmt = _insert(session, ExerciseDailyCount).values(exercise_id=exercise_id, day=day, attempts=attempts,
                                                      passed=passed)
    session.execute(stmt.on_conflict_do_update(index_elements=[table.c.exercise_id, table.c.day], set_={
        "attempts": table.c.attempts + stmt.excluded.attempts, "passed": table.c.passed + stmt.excluded.passed}))


def _bump_outcomes(session: Session, exercise_id: int, outcomes: Counter) -> None:
    table = ExerciseOutcomeCount.__table__
    emptied = False
    for (kind, name), delta in sorted(outcomes.items()):
        if delta == 0:
            continue
        stmt = _insert(session, ExerciseOutcomeCount).values(exercise_id=exercise_id, kind=kind, name=name,
                                                            count=delta)
        session.execute(stmt.on_conflict_do_update(
            index_elements=[table.c.exercise_id, table.c.kind, table.c.name],
            set_={"count": table.c.count + stmt.excluded.count}))
        emptied = emptied or delta < 0
    if emptied:  # a regrade took the last one away: no row, as after a rebuild
        session.execute(delete(table).where(table.c.exercise_id == exercise_id, table.c.count == 0))


def refresh_learner(session: Session, client_id: int, learner: str, exercise_id: int) -> tuple[int, int]:
    """Recompute one learner's row at one exercise from their graded attempts.

    Returns the change in (learners, learners who passed) of the exercise. The row is locked
    first (an upsert that changes nothing), so two workers grading the same learner's attempts
    at once take turns, and the second one's recount sees the first one's committed attempt."""
    table = LearnerProgress.__table__
    key = {"client_id": client_id, "learner": learner, "exercise_id": exercise_id}
    stmt = _insert(session, LearnerProgress).values(**key, attempts=0, passed=False)
    old_attempts, old_passed = session.execute(
        stmt.on_conflict_do_update(index_elements=[table.c.client_id, table.c.learner, table.c.exercise_id],
                                   set_={"attempts": table.c.attempts})
        .returning(table.c.attempts, table.c.passed)).one()
    rows = session.execute(
        select(Attempt.score, Attempt.grader_score, Attempt.verdict, Attempt.created_at, Attempt.graded_at)
        .where(Attempt.client_id == client_id, Attempt.learner == learner, Attempt.exercise_id == exercise_id,
               scores.counted())
        .order_by(*scores.SUBMISSION_ORDER)).all()
    where = (table.c.client_id == client_id, table.c.learner == learner, table.c.exercise_id == exercise_id)
    if not rows:
        session.execute(delete(table).where(*where))
        return -int(old_attempts > 0), -int(bool(old_passed))
    first_pass = next((n for n, r in enumerate(rows) if r.verdict == PASSED), None)
    graded = [r.graded_at for r in rows if r.graded_at is not None]
    passed = first_pass is not None
    session.execute(update(table).where(*where).values(
        attempts=len(rows),
        best_score=scores.score_that_counts(scores.BEST, (r.score for r in rows)),
        latest_score=scores.score_that_counts(scores.LATEST, (r.score for r in rows)),
        best_raw_score=max((r.grader_score for r in rows if r.grader_score is not None), default=None),
        passed=passed,
        first_attempt_at=rows[0].created_at,
        first_passed_at=rows[first_pass].created_at if first_pass is not None else None,
        attempts_to_first_pass=first_pass + 1 if first_pass is not None else None,
        last_graded_at=max(graded) if graded else None))
    return int(old_attempts == 0), int(passed) - int(bool(old_passed))


# ----------------------------------------------------------------------------------- rebuild
#
# The same definitions as above, set-based (the best and latest scores in service/scores.py's
# SQL). Migration 0007 holds a frozen copy for its backfill.

_LEARNERS = f"""
INSERT INTO learner_progress (client_id, learner, exercise_id, attempts, best_score, latest_score, best_raw_score,
                              passed, first_attempt_at, first_passed_at, attempts_to_first_pass, last_graded_at)
SELECT client_id, learner, exercise_id, count(*), {scores.SQL_BEST}, max(latest_score), max(grader_score),
       sum(CASE WHEN verdict = 'passed' THEN 1 ELSE 0 END) > 0,
       min(created_at), min(CASE WHEN verdict = 'passed' THEN created_at END),
       min(CASE WHEN verdict = 'passed' THEN n END), max(graded_at)
FROM (SELECT client_id, learner, exercise_id, score, grader_score, verdict, created_at, graded_at,
             row_number() OVER w AS n,
             {scores.SQL_LATEST.format(window="w")} AS latest_score
      FROM attempts WHERE {scores.SQL_COUNTED}
      WINDOW w AS (PARTITION BY client_id, learner, exercise_id ORDER BY {scores.SQL_SUBMISSION_ORDER})) AS ranked
GROUP BY client_id, learner, exercise_id
"""
_DAYS = """
INSERT INTO exercise_daily_counts (exercise_id, day, attempts, passed)
SELECT exercise_id, {day}, count(*), sum(CASE WHEN verdict = 'passed' THEN 1 ELSE 0 END)
FROM attempts WHERE status = 'graded' GROUP BY exercise_id, {day}
"""
_DAY = {"postgresql": "CAST(created_at AT TIME ZONE 'UTC' AS date)", "sqlite": "date(created_at)"}
_EXERCISES = """
INSERT INTO exercise_progress (exercise_id, attempts, passed_attempts, learners, passed_learners)
SELECT p.exercise_id, p.attempts, coalesce(d.passed, 0), p.learners, p.passed_learners
FROM (SELECT exercise_id, sum(attempts) AS attempts, count(*) AS learners,
             sum(CASE WHEN passed THEN 1 ELSE 0 END) AS passed_learners
      FROM learner_progress GROUP BY exercise_id) AS p
LEFT JOIN (SELECT exercise_id, sum(passed) AS passed FROM exercise_daily_counts GROUP BY exercise_id) AS d
       ON d.exercise_id = p.exercise_id
"""
_CAUSES = """
INSERT INTO exercise_outcome_counts (exercise_id, kind, name, count)
SELECT exercise_id, 'cause', substr(likely_cause, 1, 100), count(*)
FROM attempts WHERE status = 'graded' AND likely_cause IS NOT NULL AND likely_cause <> ''
GROUP BY exercise_id, substr(likely_cause, 1, 100)
"""
#: The failing checks of graded attempts: a row per attempt and check it failed, with the attempt's
#: exercise (`exercise_id`) and the check's name cut to NAME_LENGTH (`name`), as failed_checks reads
#: them; `{where}` adds conditions on the attempt `a`. The rebuild counts them per exercise, a
#: course's statistics (service/services/stats.py) per exercise of the course.
FAILED_CHECKS = {
    "postgresql": """
SELECT a.exercise_id AS exercise_id, substr(c.value->>'name', 1, 100) AS name
FROM attempts AS a
CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(a.result->'checks') = 'array' THEN a.result->'checks' ELSE '[]'::jsonb END) AS c(value)
WHERE a.status = 'graded' AND c.value->'passed' = 'false'::jsonb AND jsonb_typeof(c.value->'name') = 'string'{where}
""",
    "sqlite": """
SELECT a.exercise_id AS exercise_id, substr(json_extract(c.value, '$.name'), 1, 100) AS name
FROM attempts AS a, json_each(CASE WHEN json_type(a.result, '$.checks') = 'array' THEN a.result ELSE '{{"checks": []}}' END,
                              '$.checks') AS c
WHERE a.status = 'graded' AND c.type = 'object'
  AND (CASE WHEN c.type = 'object' THEN json_type(c.value, '$.passed') END) = 'false'
  AND (CASE WHEN c.type = 'object' THEN json_type(c.value, '$.name') END) = 'text'{where}
""",
}
_CHECKS = """
INSERT INTO exercise_outcome_counts (exercise_id, kind, name, count)
SELECT exercise_id, 'check', name, count(*) FROM ({failed}) AS failed GROUP BY exercise_id, name
"""
COUNTER_TABLES = ("exercise_outcome_counts", "exercise_daily_counts", "exercise_progress", "learner_progress")


def rebuild_statements(dialect: str) -> list[str]:
    """The SQL that recomputes every counter from the attempts table, in order."""
    checks = _CHECKS.format(failed=FAILED_CHECKS[dialect].format(where=""))
    return ([f"DELETE FROM {name}" for name in COUNTER_TABLES]
            + [_LEARNERS, _DAYS.format(day=_DAY[dialect]), _EXERCISES, _CAUSES, checks])


def rebuild(connection: Session | Connection) -> None:
    """Recompute every counter from the attempts table, in the caller's transaction, and mark
    every event counted (the recount includes them).

    On PostgreSQL the counter tables and the events are locked first (a folder and a grade writing
    its event wait; readers go on), so no event is counted twice or lost while the recount runs:
    an attempt whose event is not written yet is not seen by the recount, and its event, written
    after the lock, is folded later."""
    dialect = connection.get_bind().dialect.name if isinstance(connection, Session) else connection.dialect.name
    if dialect == "postgresql":
        connection.execute(text(f"LOCK TABLE {', '.join(COUNTER_TABLES)}, attempt_events IN EXCLUSIVE MODE"))
    connection.execute(update(AttemptEvent).where(NOT_COUNTED).values(counted_at=utcnow()))
    for statement in rebuild_statements(dialect):
        connection.execute(text(statement))
