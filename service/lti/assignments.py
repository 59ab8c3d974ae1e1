"""Assignments of several exercises: one LMS link (one gradebook column) for exercises in order.

An instructor's Deep Linking picks the exercises, their order, a scoring rule and each exercise's
points; the content item carries them as custom parameters, signed in the Deep Linking response
(the LMS sends them back, unchanged, at every launch of the link):

    exercises=slug1,slug2,slug3   scoring=mean|sum   points=1,2,1   (points: optional, 1 each)

The assignment's score is computed from each exercise's counted score at the link (its own policy,
best or latest: service/scores.py); an exercise not tried counts 0:

- `mean`: the mean of the exercises' scores, sent out of 100;
- `sum`: each exercise's score times its points, summed, sent out of the sum of the points.

A link of one exercise (no `exercises` parameter) is scored as before: the exercise's score, out
of 100. The same function scores the LMS passback and the learner's assignment page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import scores
from ..learner_tokens import MAX_TOKEN_EXERCISES
from ..models import Attempt, AttemptStatus, Exercise, LtiLinkExercise, LtiResourceLink

MEAN, SUM = "mean", "sum"
SCORINGS = (MEAN, SUM)
# A mean is sent out of 100, as a single exercise's score is.
MEAN_MAXIMUM = 100.0
MAX_POINTS = 1000.0
MAX_EXERCISES = MAX_TOKEN_EXERCISES  # the learner's token names them all


class BadAssignment(ValueError):
    """The assignment's parameters are not valid (said in a sentence for the instructor)."""


@dataclass(frozen=True)
class AssignmentSpec:
    """An assignment as Deep Linking declares it: exercises in order, the rule, each one's points."""

    slugs: tuple[str, ...]
    scoring: str
    points: tuple[float, ...]

    def __post_init__(self) -> None:
        if not 1 <= len(self.slugs) <= MAX_EXERCISES:
            raise BadAssignment(f"An assignment has 1 to {MAX_EXERCISES} exercises.")
        if len(set(self.slugs)) != len(self.slugs):
            raise BadAssignment("Each exercise is in the assignment once.")
        if self.scoring not in SCORINGS:
            raise BadAssignment(f"The scoring rule is one of {', '.join(SCORINGS)}.")
        if len(self.points) != len(self.slugs):
            raise BadAssignment("Give points for every exercise, or for none.")
        if not all(math.isfinite(p) and 0 < p <= MAX_POINTS for p in self.points):
            raise BadAssignment(f"Each exercise's points are a number above 0, at most {MAX_POINTS:g}.")

    @property
    def score_maximum(self) -> float:
        return score_maximum(self.scoring, self.points)

    def custom(self) -> dict[str, str]:
        """The content item's custom parameters (LMSs keep custom values as strings)."""
        return {"exercises": ",".join(self.slugs), "scoring": self.scoring,
                "points": ",".join(f"{p:g}" for p in self.points)}


def score_maximum(scoring: str | None, points: Any) -> float:
    """The line item's scoreMaximum: 100 for a mean (and a single exercise), the points for a sum."""
    return float(sum(points)) if scoring == SUM else MEAN_MAXIMUM


def parse_points(raw: str, count: int) -> tuple[float, ...]:
    if not raw.strip():
        return (1.0,) * count
    try:
        return tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise BadAssignment("Each exercise's points are a number.") from None


def spec_from_custom(custom: Mapping[str, Any]) -> AssignmentSpec | None:
    """The assignment a launch's custom parameters declare; None when they name no `exercises`."""
    raw = custom.get("exercises")
    if not isinstance(raw, str) or not raw.strip():
        return None
    slugs = tuple(part.strip() for part in raw.split(","))
    if not all(slugs):
        raise BadAssignment("The custom parameter exercises is a comma-separated list of exercise slugs.")
    scoring = str(custom.get("scoring") or MEAN)
    return AssignmentSpec(slugs, scoring, parse_points(str(custom.get("points") or ""), len(slugs)))


def record_assignment(session: Session, link: LtiResourceLink, spec: AssignmentSpec | None,
                      exercises: Mapping[str, Exercise]) -> None:
    """Bring the link's exercises and rule to what the launch declares (`exercises`: the spec's
    published exercises by slug); a launch that declares none makes it a link of one exercise."""
    wanted = [] if spec is None else [(exercises[slug].id, points) for slug, points in zip(spec.slugs, spec.points)]
    current = [(row.exercise_id, row.points) for row in link.assignment_exercises]
    link.scoring = None if spec is None else spec.scoring
    if wanted == current:
        return
    link.assignment_exercises.clear()
    session.flush()  # the old rows go before new ones take their positions
    link.assignment_exercises.extend(
        LtiLinkExercise(position=position, exercise_id=exercise_id, points=points)
        for position, (exercise_id, points) in enumerate(wanted))


@dataclass(frozen=True)
class Part:
    """One exercise of an assignment and where a learner stands at it."""

    exercise: Exercise
    points: float
    # The score that counts (0 to 1) under the exercise's policy; None: no graded attempt.
    score: float | None
    attempts: int
    passed: bool

    @property
    def status(self) -> str:
        return "passed" if self.passed else "tried" if self.attempts else "not_tried"


def slugs_of(link: LtiResourceLink) -> list[str]:
    return [exercise.slug for exercise, _ in link.exercise_points()]


def learner_parts(session: Session, link: LtiResourceLink, client_id: int, learner: str,
                  attempt_link_id: int | None) -> list[Part]:
    """Where `learner` stands at each of the link's exercises, counting their attempts made through
    `attempt_link_id` (the link; None: attempts made through no link, an instructor's).

    One statement: the learner's attempts at the link's exercises (a few per exercise), read in
    submission order and folded here by each exercise's policy (scores.keep, the Python form of
    score_query)."""
    at_link = (Attempt.lti_link_id == attempt_link_id if attempt_link_id is not None
               else Attempt.lti_link_id.is_(None))
    exercise_parts = link.exercise_points()
    policies = {exercise.id: scores.policy_of(exercise.version.spec) for exercise, _ in exercise_parts}
    tried: dict[int, int] = dict.fromkeys(policies, 0)
    passed: dict[int, bool] = dict.fromkeys(policies, False)
    counted: dict[int, float | None] = dict.fromkeys(policies)
    rows = session.execute(
        select(Attempt.exercise_id, Attempt.status, Attempt.correct, Attempt.score)
        .where(Attempt.client_id == client_id, Attempt.learner == learner, at_link,
               Attempt.exercise_id.in_(list(policies)), Attempt.status != AttemptStatus.ERROR.value)
        .order_by(*scores.SUBMISSION_ORDER))
    for exercise_id, status, correct, score in rows:
        tried[exercise_id] += 1
        passed[exercise_id] = passed[exercise_id] or scores.attempt_passed(status, correct)
        if status == AttemptStatus.GRADED.value:
            counted[exercise_id] = scores.keep(policies[exercise_id], counted[exercise_id], score)
    return [Part(exercise, points, counted[exercise.id], tried[exercise.id], passed[exercise.id])
            for exercise, points in exercise_parts]


def assignment_score(scoring: str | None, parts: list[Part]) -> float | None:
    """The assignment's score as a fraction (0 to 1) of its maximum by its rule, exercises without
    a counted score at 0; None when none of them has one (there is no grade to send yet)."""
    if all(part.score is None for part in parts):
        return None
    if scoring == SUM:
        total = sum(part.points for part in parts)
        return sum((part.score or 0.0) * part.points for part in parts) / total
    return sum(part.score or 0.0 for part in parts) / len(parts)


def all_graded(parts: list[Part]) -> bool:
    """Whether every exercise of the assignment has a counted (graded) score."""
    return all(part.score is not None for part in parts)


MAX_TITLE = 255


def spec_from_picker(form: Mapping[str, Any], slugs: list[str]) -> tuple[AssignmentSpec, str]:
    """The assignment the picker's form declares for the exercises ticked (`slugs`, as listed):
    `order-<slug>` (a whole number; blank: after the numbered ones, as listed), `points-<slug>`
    (blank: 1), `scoring` and `title` (blank: the exercises' count)."""
    def order(index_slug: tuple[int, str]) -> tuple[int, int]:
        index, slug = index_slug
        raw = str(form.get(f"order-{slug}") or "").strip()
        if not raw:
            return (10**6, index)
        try:
            return (int(raw), index)
        except ValueError:
            raise BadAssignment(f"The order of {slug!r} is a whole number.") from None

    ordered = [slug for _, slug in sorted(enumerate(slugs), key=order)]
    points = []
    for slug in ordered:
        raw = str(form.get(f"points-{slug}") or "").strip() or "1"
        try:
            points.append(float(raw))
        except ValueError:
            raise BadAssignment(f"The points of {slug!r} are a number.") from None
    spec = AssignmentSpec(tuple(ordered), str(form.get("scoring") or MEAN), tuple(points))
    title = " ".join(str(form.get("title") or "").split())
    if len(title) > MAX_TITLE:
        raise BadAssignment(f"The title is at most {MAX_TITLE} characters.")
    return spec, title or f"Assignment of {len(ordered)} exercise{'s' if len(ordered) != 1 else ''}"
