"""Statistics per exercise and progress per learner, of every course or of one course.

Two sources answer the same questions, with the same definitions and the same responses:

- every course (`Counters`): the pre-aggregated counters (service/services/progress.py), so none
  of them scans the attempts table. The counters lag the grades by the workers' fold interval:
  `counters_as_of` says how far they are.
- one course (`CourseAttempts`): that course's attempts (`attempts.course_id`), counted with
  set-based SQL when asked (a course is at most a few thousand learners). Each statement is an
  index-only scan of the course's entries in ix_attempts_course_exercise on PostgreSQL (the code
  reports' failing checks read the rows), whose order is the learners' window's: docs/performance.md
  has what it costs. Exact and without lag: `counters_as_of` is always null. The overview lists
  the exercises the course has links or attempts for (an assignment's exercises included), not
  the whole catalog.

Definitions: `attempts` counts every attempt submitted (queued, graded, or failed by the
grader); `graded` those graded; a learner is counted at an exercise once they have a graded
attempt there, and passed once one of them has the verdict `passed`. Rates are null where
nothing was counted yet.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Date, Integer, Subquery, case, cast, func, literal_column, select, text, type_coerce, union
from sqlalchemy.orm import Session

from .. import scores
from ..models import ApiClient, Attempt, Exercise, LtiLinkExercise, LtiResourceLink
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
PASSED = progress.PASSED


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


@dataclass(frozen=True)
class Totals:
    """One exercise's totals (see the definitions above)."""

    attempts: int = 0
    graded: int = 0
    passed_attempts: int = 0
    learners: int = 0
    passed_learners: int = 0


class Counters:
    """Every course's figures, from the counters the workers fold the grades into."""

    course_id: int | None = None

    def as_of(self, session: Session) -> datetime | None:
        return progress.counters_as_of(session)

    def totals(self, session: Session, exercise_id: int | None = None) -> dict[int, Totals]:
        ungraded = _ungraded(session, exercise_id)
        stmt = select(ExerciseProgress)
        if exercise_id is not None:
            stmt = stmt.where(ExerciseProgress.exercise_id == exercise_id)
        found = {row.exercise_id: Totals(row.attempts + ungraded.pop(row.exercise_id, 0), row.attempts,
                                         row.passed_attempts, row.learners, row.passed_learners)
                 for row in session.scalars(stmt)}
        return found | {exercise: Totals(attempts=n) for exercise, n in ungraded.items()}

    def listed(self, session: Session, totals: dict[int, Totals]) -> set[int] | None:
        """The exercises the overview lists: None, every one (unpublished ones too)."""
        return None

    def learners(self, session: Session, exercise_id: int) -> Subquery:
        lp = LearnerProgress
        return (select(lp.best_score.label("best"), lp.best_raw_score.label("raw"), lp.passed.label("passed"),
                       lp.attempts_to_first_pass.label("n"), lp.first_attempt_at.label("first_attempt_at"),
                       lp.first_passed_at.label("first_passed_at"))
                .where(lp.exercise_id == exercise_id).subquery())

    def days(self, session: Session, exercise_id: int, first: date, last: date) -> dict[date, tuple[int, int]]:
        return {row.day: (row.attempts, row.passed) for row in session.scalars(
            select(ExerciseDailyCount).where(ExerciseDailyCount.exercise_id == exercise_id,
                                             ExerciseDailyCount.day >= first, ExerciseDailyCount.day <= last))}

    def top(self, session: Session, exercise_id: int, kind: str) -> list[tuple[str, int]]:
        return [(name, count) for name, count in session.execute(
            select(ExerciseOutcomeCount.name, ExerciseOutcomeCount.count)
            .where(ExerciseOutcomeCount.exercise_id == exercise_id, ExerciseOutcomeCount.kind == kind,
                   ExerciseOutcomeCount.count > 0)
            .order_by(ExerciseOutcomeCount.count.desc(), ExerciseOutcomeCount.name).limit(TOP_OUTCOMES))]

    def learner_rows(self, session: Session, learner: str, client: ApiClient | None) -> list[Any]:
        lp = LearnerProgress
        stmt = (select(Exercise.slug, Exercise.title, ApiClient.name.label("client"), lp.attempts, lp.best_score,
                       lp.latest_score, lp.passed, lp.first_attempt_at, lp.first_passed_at,
                       lp.attempts_to_first_pass, lp.last_graded_at)
                .join(Exercise, Exercise.id == lp.exercise_id).join(ApiClient, ApiClient.id == lp.client_id)
                .where(lp.learner == learner).order_by(Exercise.slug, ApiClient.name))
        if client is not None:
            stmt = stmt.where(lp.client_id == client.id)
        return list(session.execute(stmt))


def _ungraded(session: Session, exercise_id: int | None = None) -> dict[int, int]:
    """Attempts not graded (queued, running, failed by the grader) by exercise: a partial index."""
    stmt = select(Attempt.exercise_id, func.count()).where(NOT_GRADED).group_by(Attempt.exercise_id)
    if exercise_id is not None:
        stmt = stmt.where(Attempt.exercise_id == exercise_id)
    return dict(session.execute(stmt).all())


@dataclass(frozen=True)
class CourseAttempts:
    """One course's figures, counted from its attempts when asked: every statement reads the
    course's attempts at an exercise through ix_attempts_course_exercise (course, exercise, client,
    learner, created_at, id, with the grade's columns: models/progress.py)."""

    course_id: int

    def as_of(self, session: Session) -> datetime | None:
        return None  # counted now, from the attempts themselves

    def _attempts(self, exercise_id: int | None = None) -> list[Any]:
        where: list[Any] = [Attempt.course_id == self.course_id]
        if exercise_id is not None:
            where.append(Attempt.exercise_id == exercise_id)
        return where

    def totals(self, session: Session, exercise_id: int | None = None) -> dict[int, Totals]:
        graded = scores.counted()
        passed = graded & (Attempt.verdict == PASSED)
        per_learner = (select(Attempt.exercise_id, func.count().label("attempts"),
                              func.count(case((graded, 1))).label("graded"),
                              func.count(case((passed, 1))).label("passed"))
                       .where(*self._attempts(exercise_id))
                       .group_by(Attempt.exercise_id, Attempt.client_id, Attempt.learner).subquery())
        rows = session.execute(select(
            per_learner.c.exercise_id, func.sum(per_learner.c.attempts), func.sum(per_learner.c.graded),
            func.sum(per_learner.c.passed), func.count(case((per_learner.c.graded > 0, 1))),
            func.count(case((per_learner.c.passed > 0, 1))))
            .group_by(per_learner.c.exercise_id))
        return {row[0]: Totals(*(int(n or 0) for n in row[1:])) for row in rows}

    def listed(self, session: Session, totals: dict[int, Totals]) -> set[int] | None:
        """The exercises with an attempt in the course, or a link of the course (any exercise of an
        assignment of several)."""
        links = select(LtiResourceLink.id).where(LtiResourceLink.course_id == self.course_id)
        linked = session.scalars(union(
            select(LtiResourceLink.exercise_id).where(LtiResourceLink.course_id == self.course_id),
            select(LtiLinkExercise.exercise_id).where(LtiLinkExercise.link_id.in_(links))))
        return set(totals) | set(linked)

    def learners(self, session: Session, exercise_id: int) -> Subquery:
        """A row per learner with a graded attempt, as the counters' learner_progress has it: their
        best score and raw score, whether they passed, after how many graded attempts (in
        submission order), when their first graded attempt and first pass were submitted."""
        ranked = (select(Attempt.client_id, Attempt.learner, Attempt.score, Attempt.grader_score, Attempt.verdict,
                         Attempt.created_at,
                         func.row_number().over(partition_by=(Attempt.client_id, Attempt.learner),
                                                order_by=scores.SUBMISSION_ORDER).label("n"))
                  .where(*self._attempts(exercise_id), scores.counted()).subquery())
        passed = ranked.c.verdict == PASSED
        return (select(func.max(ranked.c.score).label("best"), func.max(ranked.c.grader_score).label("raw"),
                       (func.count(case((passed, 1))) > 0).label("passed"),
                       func.min(case((passed, ranked.c.n))).label("n"),
                       func.min(ranked.c.created_at).label("first_attempt_at"),
                       func.min(case((passed, ranked.c.created_at))).label("first_passed_at"))
                .group_by(ranked.c.client_id, ranked.c.learner).subquery())

    def days(self, session: Session, exercise_id: int, first: date, last: date) -> dict[date, tuple[int, int]]:
        # The UTC day of submission, as the counters take it (created_at.date() of a UTC time).
        if _postgresql(session):
            day: Any = cast(Attempt.created_at.op("AT TIME ZONE")(literal_column("'UTC'")), Date)
        else:  # stored as UTC text: date() reads its day; CAST(... AS DATE) would not
            day = type_coerce(func.date(Attempt.created_at), Date)
        day = day.label("day")
        rows = session.execute(
            select(day, func.count(), func.count(case((Attempt.verdict == PASSED, 1))))
            .where(*self._attempts(exercise_id), scores.counted(),
                   Attempt.created_at >= datetime.combine(first, time.min, UTC),
                   Attempt.created_at < datetime.combine(last + timedelta(days=1), time.min, UTC))
            .group_by(day))
        return {row[0]: (row[1], row[2]) for row in rows}

    def top(self, session: Session, exercise_id: int, kind: str) -> list[tuple[str, int]]:
        params = {"course": self.course_id, "exercise": exercise_id, "limit": TOP_OUTCOMES}
        if kind == CHECK:
            failed = progress.FAILED_CHECKS[session.get_bind().dialect.name].format(
                where=" AND a.course_id = :course AND a.exercise_id = :exercise")
            stmt = text(f"SELECT name, count(*) AS n FROM ({failed}) AS failed GROUP BY name "
                        "ORDER BY n DESC, name LIMIT :limit")
            return [(name, n) for name, n in session.execute(stmt, params)]
        name = func.substr(Attempt.likely_cause, 1, progress.NAME_LENGTH).label("name")
        count = func.count().label("n")
        return [(row[0], row[1]) for row in session.execute(
            select(name, count).where(*self._attempts(exercise_id), scores.counted(), Attempt.likely_cause.is_not(None),
                                      Attempt.likely_cause != "")
            .group_by(name).order_by(count.desc(), name).limit(TOP_OUTCOMES))]

    def learner_rows(self, session: Session, learner: str, client: ApiClient | None) -> list[Any]:
        where = [*self._attempts(), Attempt.learner == learner, scores.counted()]
        if client is not None:
            where.append(Attempt.client_id == client.id)
        group = (Attempt.exercise_id, Attempt.client_id)
        ranked = (select(*group, Attempt.score, Attempt.verdict, Attempt.created_at, Attempt.graded_at,
                         func.row_number().over(partition_by=group, order_by=scores.SUBMISSION_ORDER).label("n"),
                         func.last_value(Attempt.score).over(partition_by=group, order_by=scores.SUBMISSION_ORDER,
                                                             rows=(None, None)).label("latest"))
                  .where(*where).subquery())
        passed = ranked.c.verdict == PASSED
        figures = (select(ranked.c.exercise_id, ranked.c.client_id, func.count().label("attempts"),
                          func.max(ranked.c.score).label("best_score"), func.max(ranked.c.latest).label("latest_score"),
                          (func.count(case((passed, 1))) > 0).label("passed"),
                          func.min(ranked.c.created_at).label("first_attempt_at"),
                          func.min(case((passed, ranked.c.created_at))).label("first_passed_at"),
                          func.min(case((passed, ranked.c.n))).label("attempts_to_first_pass"),
                          func.max(ranked.c.graded_at).label("last_graded_at"))
                   .group_by(ranked.c.exercise_id, ranked.c.client_id).subquery())
        return list(session.execute(
            select(Exercise.slug, Exercise.title, ApiClient.name.label("client"), figures.c.attempts,
                   figures.c.best_score, figures.c.latest_score, figures.c.passed, figures.c.first_attempt_at,
                   figures.c.first_passed_at, figures.c.attempts_to_first_pass, figures.c.last_graded_at)
            .join(Exercise, Exercise.id == figures.c.exercise_id).join(ApiClient, ApiClient.id == figures.c.client_id)
            .order_by(Exercise.slug, ApiClient.name)))


Source = Counters | CourseAttempts


def source_of(course_id: int | None) -> Source:
    """Every course's figures (the counters), or one course's (its attempts)."""
    return Counters() if course_id is None else CourseAttempts(course_id)


# --- the responses, built alike from either source ----------------------------------------------


def overview(session: Session, course_id: int | None = None) -> list[dict[str, Any]]:
    """Each exercise with its attempts, learners and pass rate: every exercise (unpublished ones
    too), or a course's (Source.listed)."""
    source = source_of(course_id)
    totals = source.totals(session)
    listed = source.listed(session, totals)
    stmt = select(Exercise.id, Exercise.slug, Exercise.title, Exercise.kind, Exercise.published).order_by(Exercise.slug)
    if listed is not None:
        stmt = stmt.where(Exercise.id.in_(listed))
    out = []
    for row in session.execute(stmt):
        figures = totals.get(row.id, Totals())
        out.append({"exercise": row.slug, "title": row.title, "kind": row.kind, "published": row.published,
                    "attempts": figures.attempts, "learners": figures.learners,
                    "passed_learners": figures.passed_learners,
                    "pass_rate": _rate(figures.passed_learners, figures.learners)})
    return out


def _bucket(session: Session, best: Any) -> Any:
    """The histogram bucket of a best score: 0 for [0, 0.1), ..., 9 for [0.9, 1] (floor, not the
    rounding PostgreSQL's integer cast does)."""
    scaled = best * HISTOGRAM_BUCKETS
    floor = func.floor(scaled) if _postgresql(session) else scaled
    return case((best >= 1, HISTOGRAM_BUCKETS - 1), (best <= 0, 0), else_=cast(floor, Integer))


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _learner_figures(session: Session, learners: Subquery) -> tuple[list[int], list[float | None]]:
    """In one pass over an exercise's learners (Source.learners; on the counters, an index-only
    scan on PostgreSQL): how many have their best score in each histogram bucket; the mean of
    those best scores (that count), the mean of their best raw scores (the grader's, before
    penalties and overrides); over those who passed, the median attempts to the first pass and the
    median seconds from the first attempt to the first pass."""
    postgresql = _postgresql(session)
    columns = [_bucket(session, learners.c.best).label("bucket"), learners.c.passed, learners.c.n, learners.c.best,
               learners.c.raw]
    if postgresql:  # date_part gives a float (extract, a slower numeric)
        columns.append(func.date_part("epoch", learners.c.first_passed_at - learners.c.first_attempt_at)
                       .label("seconds"))
    each = select(*columns).subquery()
    counts = [func.count().filter(each.c.bucket == i) for i in range(HISTOGRAM_BUCKETS)]
    means = [func.avg(each.c.best), func.avg(each.c.raw)]
    if postgresql:
        passed = each.c.passed.is_(True)
        row = session.execute(select(
            *counts, *means, func.percentile_cont(0.5).within_group(each.c.n).filter(passed),
            func.percentile_cont(0.5).within_group(each.c.seconds).filter(passed))).one()
        return list(row[:HISTOGRAM_BUCKETS]), [None if v is None else float(v) for v in row[HISTOGRAM_BUCKETS:]]
    row = session.execute(select(*counts, *means)).one()
    rows = session.execute(select(learners.c.n, learners.c.first_attempt_at, learners.c.first_passed_at)
                           .where(learners.c.passed.is_(True))).all()
    return list(row[:HISTOGRAM_BUCKETS]), [
        *(None if v is None else float(v) for v in row[HISTOGRAM_BUCKETS:]),
        _median([r[0] for r in rows if r[0] is not None]),
        _median([(r[2] - r[1]).total_seconds() for r in rows if r[1] is not None and r[2] is not None])]


def exercise_stats(session: Session, exercise: Exercise, today: date | None = None,
                   course_id: int | None = None) -> dict[str, Any]:
    """The statistics of one exercise, in every course or in one; `attempts_by_day` covers the
    DAYS days up to `today` (UTC)."""
    source = source_of(course_id)
    # Read first: a fold committed between two of the statements below shows in the counters read
    # after it, so "caught up as of this" never goes with counters from before it.
    as_of = source.as_of(session)
    totals = source.totals(session, exercise.id).get(exercise.id, Totals())
    counts, (mean_best, mean_best_raw, median_attempts, median_seconds) = _learner_figures(
        session, source.learners(session, exercise.id))
    histogram = [{"from": i / HISTOGRAM_BUCKETS, "to": (i + 1) / HISTOGRAM_BUCKETS, "count": counts[i]}
                 for i in range(HISTOGRAM_BUCKETS)]
    last = today or utcnow().date()
    first = last - timedelta(days=DAYS - 1)
    days = source.days(session, exercise.id, first, last)
    by_day = []
    for n in range(DAYS):
        day = first + timedelta(days=n)
        attempts, passed = days.get(day, (0, 0))
        by_day.append({"day": day, "attempts": attempts, "passed": passed})

    def top(kind: str) -> list[dict[str, Any]]:
        return [{"name": name, "count": count} for name, count in source.top(session, exercise.id, kind)]

    return {
        "exercise": exercise.slug, "title": exercise.title, "kind": exercise.kind,
        "attempts": totals.attempts, "graded": totals.graded, "passed_attempts": totals.passed_attempts,
        "learners": totals.learners, "passed_learners": totals.passed_learners,
        "pass_rate": _rate(totals.passed_learners, totals.learners),
        "attempt_pass_rate": _rate(totals.passed_attempts, totals.graded),
        "score_histogram": histogram, "mean_best_score": mean_best, "mean_best_raw_score": mean_best_raw,
        "median_attempts_to_first_pass": median_attempts, "median_seconds_to_first_pass": median_seconds,
        "failing_checks": top(CHECK), "likely_causes": top(CAUSE), "attempts_by_day": by_day, "counters_as_of": as_of,
    }


def learner_progress(session: Session, learner: str, client: ApiClient | None,
                     course_id: int | None = None) -> list[dict[str, Any]]:
    """The learner's progress at each exercise they have a graded attempt at (in the course, when
    one is given): under one client, or under every client that has a learner of this id."""
    return [{"exercise": row.slug, "title": row.title, "client": row.client, "attempts": row.attempts,
             "best_score": row.best_score, "latest_score": row.latest_score, "passed": bool(row.passed),
             "first_attempt_at": row.first_attempt_at, "first_passed_at": row.first_passed_at,
             "attempts_to_first_pass": row.attempts_to_first_pass, "last_graded_at": row.last_graded_at}
            for row in source_of(course_id).learner_rows(session, learner, client)]


def counters_as_of(session: Session, course_id: int | None = None) -> datetime | None:
    """How far behind the grades the figures of `source_of(course_id)` are (None: not behind)."""
    return source_of(course_id).as_of(session)
