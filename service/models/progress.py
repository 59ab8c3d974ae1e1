"""Pre-aggregated counters behind the statistics, brought up to date from the attempt events by
the workers, in batches (service/services/progress.py), so the dashboard never scans the attempts.

Only graded attempts count: an attempt the grader failed on (status error) is not a learner's
outcome, and one still queued has none yet. An attempt "passed" when its verdict is `passed`.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import Date, ForeignKey, Index, String, literal_column
from sqlalchemy.orm import Mapped, mapped_column

from .attempt import Attempt, AttemptEvent
from .base import Base


class LearnerProgress(Base):
    """One learner (of one client) at one exercise, recomputed from their attempts at each event."""

    __tablename__ = "learner_progress"
    __table_args__ = (
        # An exercise's learners, covering what its histogram and medians read (index-only scans).
        Index("ix_learner_progress_exercise", "exercise_id", "passed", "best_score", "attempts_to_first_pass",
              "first_attempt_at", "first_passed_at", "best_raw_score"),
        # One learner under any client.
        Index("ix_learner_progress_learner", "learner"),
    )

    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"), primary_key=True)
    learner: Mapped[str] = mapped_column(String(255), primary_key=True)
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"), primary_key=True)
    # Graded attempts.
    attempts: Mapped[int] = mapped_column(default=0)
    best_score: Mapped[float | None]
    # The score of the attempt submitted last.
    latest_score: Mapped[float | None]
    # The best grader's score, before the assessment rules' penalties and any override (migration 0014).
    best_raw_score: Mapped[float | None]
    passed: Mapped[bool] = mapped_column(default=False)
    # When the first graded attempt, and the first that passed, were submitted.
    first_attempt_at: Mapped[datetime | None]
    first_passed_at: Mapped[datetime | None]
    # 1 when the first attempt passed; null until one passes.
    attempts_to_first_pass: Mapped[int | None]
    last_graded_at: Mapped[datetime | None]


class ExerciseProgress(Base):
    """Totals of one exercise: graded and passed attempts, learners and learners who passed."""

    __tablename__ = "exercise_progress"

    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"), primary_key=True)
    attempts: Mapped[int] = mapped_column(default=0)
    passed_attempts: Mapped[int] = mapped_column(default=0)
    learners: Mapped[int] = mapped_column(default=0)
    passed_learners: Mapped[int] = mapped_column(default=0)


class ExerciseDailyCount(Base):
    """Graded and passed attempts of one exercise by the UTC day they were submitted."""

    __tablename__ = "exercise_daily_counts"

    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    attempts: Mapped[int] = mapped_column(default=0)
    passed: Mapped[int] = mapped_column(default=0)


class ExerciseOutcomeCount(Base):
    """How many graded attempts of an exercise failed a check (kind `check`) or were given a
    first likely cause (kind `cause`), by its name."""

    __tablename__ = "exercise_outcome_counts"

    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    count: Mapped[int] = mapped_column(default=0)


CHECK, CAUSE = "check", "cause"

#: Attempts not graded (queued, running, or failed by the grader): few, and counted per exercise
#: beside the counters (nothing is recorded when an attempt is submitted). A query must say
#: `status <> 'graded'` with this literal, not a bound parameter, for the planner to use it.
NOT_GRADED = Attempt.status != literal_column("'graded'")
Index("ix_attempts_not_graded", Attempt.exercise_id, postgresql_where=NOT_GRADED, sqlite_where=NOT_GRADED)
# The events the counters have not taken in yet: the workers' queue, and the statistics' "as of".
NOT_COUNTED = AttemptEvent.counted_at.is_(None)
Index("ix_attempt_events_not_counted", AttemptEvent.id, postgresql_where=NOT_COUNTED, sqlite_where=NOT_COUNTED)
# A course's statistics are counted from its attempts when asked (service/services/stats.py,
# CourseAttempts): this index holds every column they read but the code reports', in the order the
# learners' window reads them, so on PostgreSQL each of their statements is an index-only scan of
# the course's entries instead of a heap page per attempt (a course's attempts are spread over the
# whole table): 4 to 5 times less time for a course of 3,000 learners (docs/performance.md; migration 0019).
COURSE_STATS_INCLUDE = ("status", "verdict", "score", "grader_score", "likely_cause")
Index("ix_attempts_course_exercise", Attempt.course_id, Attempt.exercise_id, Attempt.client_id, Attempt.learner,
      Attempt.created_at, Attempt.id, postgresql_include=list(COURSE_STATS_INCLUDE))
