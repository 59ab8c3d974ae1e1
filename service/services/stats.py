"""Statistics per exercise and progress per learner, read from the pre-aggregated counters
(service/services/progress.py), so none of them scans the attempts table. The counters lag the
grades by the workers' fold interval: `counters_as_of` says how far they are.

Definitions: `attempts` counts every attempt submitted (queued, graded, or failed by the
grader); `graded` those graded; a learner is counted at an exercise once they have a graded
attempt there, and passed once one of them has the verdict `passed`. Rates are null where
nothing was counted yet.
"""

from __future__ import annotations

import statistics
from datetime import date, timedelta
from typing import Any

from sqlalchemy import Integer, case, cast, func, select
from sqlalchemy.orm import Session

from ..models import ApiClient, Attempt, Exercise
from ..models.base import utcnow
from ..models.progress import (
    CAUSE,
    CHECK,
    NOT_GRADED,
    ExerciseDailyCount,
    ExerciseOutcomeCount,
    ExerciseProgress,
    LearnerProgress,
)
from . import progress

HISTOGRAM_BUCKETS = 10
TOP_OUTCOMES = 10
DAYS = 30


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _ungraded(session: Session, exercise_id: int | None = None) -> dict[int, int]:
    """Attempts not graded (queued, running, failed by the grader) by exercise: a partial index."""
    stmt = select(Attempt.exercise_id, func.count()).where(NOT_GRADED).group_by(Attempt.exercise_id)
    if exercise_id is not None:
        stmt = stmt.where(Attempt.exercise_id == exercise_id)
    return dict(session.execute(stmt).all())


def overview(session: Session) -> list[dict[str, Any]]:
    """Every exercise (unpublished ones too) with its attempts, learners and pass rate."""
    ungraded = _ungraded(session)
    rows = session.execute(
        select(Exercise.id, Exercise.slug, Exercise.title, Exercise.kind, Exercise.published,
               ExerciseProgress.attempts, ExerciseProgress.learners, ExerciseProgress.passed_learners)
        .outerjoin(ExerciseProgress, ExerciseProgress.exercise_id == Exercise.id)
        .order_by(Exercise.slug)).all()
    out = []
    for row in rows:
        learners, passed = row.learners or 0, row.passed_learners or 0
        out.append({"exercise": row.slug, "title": row.title, "kind": row.kind, "published": row.published,
                    "attempts": (row.attempts or 0) + ungraded.get(row.id, 0), "learners": learners,
                    "passed_learners": passed, "pass_rate": _rate(passed, learners)})
    return out


def _bucket(session: Session) -> Any:
    """The histogram bucket of a best score: 0 for [0, 0.1), ..., 9 for [0.9, 1] (floor, not the
    rounding PostgreSQL's integer cast does)."""
    scaled = LearnerProgress.best_score * HISTOGRAM_BUCKETS
    floor = (func.floor(scaled) if session.get_bind().dialect.name == "postgresql" else scaled)
    return case((LearnerProgress.best_score >= 1, HISTOGRAM_BUCKETS - 1),
                (LearnerProgress.best_score <= 0, 0), else_=cast(floor, Integer))


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _learner_figures(session: Session, exercise_id: int) -> tuple[list[int], list[float | None]]:
    """In one pass over the exercise's learners (an index-only scan on PostgreSQL): how many
    have their best score in each histogram bucket; the mean of those best scores (that count), the
    mean of their best raw scores (the grader's, before penalties and overrides); over those who
    passed, the median attempts to the first pass and the median seconds from the first attempt to
    the first pass."""
    lp = LearnerProgress
    postgresql = session.get_bind().dialect.name == "postgresql"
    columns = [_bucket(session).label("bucket"), lp.passed.label("passed"), lp.attempts_to_first_pass.label("n"),
               lp.best_score.label("best"), lp.best_raw_score.label("raw")]
    if postgresql:  # date_part gives a float (extract, a slower numeric)
        columns.append(func.date_part("epoch", lp.first_passed_at - lp.first_attempt_at).label("seconds"))
    learners = select(*columns).where(lp.exercise_id == exercise_id).subquery()
    counts = [func.count().filter(learners.c.bucket == i) for i in range(HISTOGRAM_BUCKETS)]
    means = [func.avg(learners.c.best), func.avg(learners.c.raw)]
    if postgresql:
        passed = learners.c.passed.is_(True)
        row = session.execute(select(
            *counts, *means, func.percentile_cont(0.5).within_group(learners.c.n).filter(passed),
            func.percentile_cont(0.5).within_group(learners.c.seconds).filter(passed))).one()
        return list(row[:HISTOGRAM_BUCKETS]), [None if v is None else float(v) for v in row[HISTOGRAM_BUCKETS:]]
    row = session.execute(select(*counts, *means)).one()
    rows = session.execute(select(lp.attempts_to_first_pass, lp.first_attempt_at, lp.first_passed_at)
                           .where(lp.exercise_id == exercise_id, lp.passed.is_(True))).all()
    return list(row[:HISTOGRAM_BUCKETS]), [
        *(None if v is None else float(v) for v in row[HISTOGRAM_BUCKETS:]),
        _median([r[0] for r in rows if r[0] is not None]),
        _median([(r[2] - r[1]).total_seconds() for r in rows if r[1] is not None and r[2] is not None])]


def _top(session: Session, exercise_id: int, kind: str) -> list[dict[str, Any]]:
    rows = session.execute(
        select(ExerciseOutcomeCount.name, ExerciseOutcomeCount.count)
        .where(ExerciseOutcomeCount.exercise_id == exercise_id, ExerciseOutcomeCount.kind == kind,
               ExerciseOutcomeCount.count > 0)
        .order_by(ExerciseOutcomeCount.count.desc(), ExerciseOutcomeCount.name).limit(TOP_OUTCOMES)).all()
    return [{"name": name, "count": count} for name, count in rows]


def exercise_stats(session: Session, exercise: Exercise, today: date | None = None) -> dict[str, Any]:
    """The statistics of one exercise; `attempts_by_day` covers the DAYS days up to `today` (UTC)."""
    # Read first: a fold committed between two of the statements below shows in the counters read
    # after it, so "caught up as of this" never goes with counters from before it.
    as_of = progress.counters_as_of(session)
    totals = session.get(ExerciseProgress, exercise.id)
    graded, passed_attempts, learners, passed_learners = (
        (totals.attempts, totals.passed_attempts, totals.learners, totals.passed_learners) if totals else (0, 0, 0, 0))
    counts, (mean_best, mean_best_raw, median_attempts, median_seconds) = _learner_figures(session, exercise.id)
    histogram = [{"from": i / HISTOGRAM_BUCKETS, "to": (i + 1) / HISTOGRAM_BUCKETS, "count": counts[i]}
                 for i in range(HISTOGRAM_BUCKETS)]
    last = today or utcnow().date()
    first = last - timedelta(days=DAYS - 1)
    days = {row.day: row for row in session.scalars(
        select(ExerciseDailyCount).where(ExerciseDailyCount.exercise_id == exercise.id,
                                         ExerciseDailyCount.day >= first, ExerciseDailyCount.day <= last))}
    by_day = []
    for n in range(DAYS):
        day = first + timedelta(days=n)
        row = days.get(day)
        by_day.append({"day": day, "attempts": row.attempts if row else 0, "passed": row.passed if row else 0})
    return {
        "exercise": exercise.slug, "title": exercise.title, "kind": exercise.kind,
        "attempts": graded + _ungraded(session, exercise.id).get(exercise.id, 0), "graded": graded,
        "passed_attempts": passed_attempts, "learners": learners, "passed_learners": passed_learners,
        "pass_rate": _rate(passed_learners, learners), "attempt_pass_rate": _rate(passed_attempts, graded),
        "score_histogram": histogram, "mean_best_score": mean_best, "mean_best_raw_score": mean_best_raw,
        "median_attempts_to_first_pass": median_attempts, "median_seconds_to_first_pass": median_seconds,
        "failing_checks": _top(session, exercise.id, CHECK), "likely_causes": _top(session, exercise.id, CAUSE),
        "attempts_by_day": by_day, "counters_as_of": as_of,
    }


def learner_progress(session: Session, learner: str, client: ApiClient | None) -> list[dict[str, Any]]:
    """The learner's progress at each exercise they have a graded attempt at: under one client,
    or under every client that has a learner of this id."""
    stmt = (select(LearnerProgress, Exercise.slug, Exercise.title, ApiClient.name)
            .join(Exercise, Exercise.id == LearnerProgress.exercise_id)
            .join(ApiClient, ApiClient.id == LearnerProgress.client_id)
            .where(LearnerProgress.learner == learner)
            .order_by(Exercise.slug, ApiClient.name))
    if client is not None:
        stmt = stmt.where(LearnerProgress.client_id == client.id)
    return [{"exercise": slug, "title": title, "client": client_name, "attempts": p.attempts,
             "best_score": p.best_score, "latest_score": p.latest_score, "passed": p.passed,
             "first_attempt_at": p.first_attempt_at, "first_passed_at": p.first_passed_at,
             "attempts_to_first_pass": p.attempts_to_first_pass, "last_graded_at": p.last_graded_at}
            for p, slug, title, client_name in session.execute(stmt)]
