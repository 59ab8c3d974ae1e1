"""Staff setting assessment rules: a counting scope's (services/standing.py: one exercise of an LTI
link, or a client's own use of an exercise), and a learner's extension (service/rules.py).

Rules are per exercise, a link's too: each exercise of a link of several (service/lti/assignments.py)
has its own, as each counts its attempts apart; the dates the LMS sends are the link's, so every
exercise of it gets them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import Exercise, LtiResourceLink
from ..models.base import utcnow
from ..models.rules import AssessmentRules
from ..rules import Rules, layers, resolve
from .standing import CountingScope, learner_lms_dates, lms_dates


@dataclass(frozen=True)
class Extension:
    learner: str
    rules: dict[str, Any]
    note: str | None
    updated_by: str
    updated_at: datetime
    in_force: Rules


@dataclass(frozen=True)
class ScopeRules:
    """Every layer of a counting scope's rules, for staff: what each sets and what is in force."""

    exercise: str
    link_id: int | None
    #: The link's exercises in order, each with rules of its own (empty: no link).
    link_exercises: list[str]
    client_id: int
    defaults: dict[str, Any]
    assignment: dict[str, Any] | None
    updated_by: str | None
    updated_at: datetime | None
    lms: dict[str, datetime]
    #: The dates the platform sent learners at their own launches (Canvas), by learner.
    lms_learners: dict[str, dict[str, datetime]]
    in_force: Rules
    extensions: list[Extension]


def _row(session: Session, counting_scope: CountingScope, learner: str | None) -> AssessmentRules | None:
    return session.scalar(select(AssessmentRules).where(*counting_scope.rule_rows()).where(
        AssessmentRules.learner.is_(None) if learner is None else AssessmentRules.learner == learner))


def set_rules(session: Session, counting_scope: CountingScope, learner: str | None, rules: dict[str, Any],
              by: str, note: str | None = None) -> None:
    """Replace the scope's rules (`learner` None) or the learner's extension with `rules`
    (validated: schemas/rules.py, as JSON)."""
    row = _row(session, counting_scope, learner)
    if row is None:
        row = AssessmentRules(client_id=counting_scope.client_id, exercise_id=counting_scope.exercise_id,
                              lti_link_id=counting_scope.link_id, learner=learner)
        session.add(row)
    row.rules, row.note, row.updated_by, row.updated_at = rules, note, by[:100], utcnow()


def clear_rules(session: Session, counting_scope: CountingScope, learner: str | None) -> bool:
    """Remove the scope's rules or the learner's extension; whether there was one."""
    row = _row(session, counting_scope, learner)
    if row is not None:
        session.delete(row)
    return row is not None


def describe(session: Session, counting_scope: CountingScope, exercise: Exercise) -> ScopeRules:
    rows = session.scalars(select(AssessmentRules).where(*counting_scope.rule_rows())
                           .order_by(AssessmentRules.learner)).all()
    own = next((row for row in rows if row.learner is None), None)
    defaults = exercise.version.spec.get("rules", {})
    lms = lms_dates(session, counting_scope.link_id)
    lms_learners = learner_lms_dates(session, counting_scope.link_id)
    staff = None if own is None else own.rules
    extensions = [Extension(row.learner, row.rules, row.note, row.updated_by, row.updated_at,
                            resolve(layers(defaults, staff, lms, lms_learners.get(row.learner), row.rules)))
                  for row in rows if row.learner is not None]
    link = None if counting_scope.link_id is None else session.get(LtiResourceLink, counting_scope.link_id)
    link_exercises = [] if link is None else [linked.slug for linked, _ in link.exercise_points()]
    return ScopeRules(exercise.slug, counting_scope.link_id, link_exercises, counting_scope.client_id, defaults,
                      staff, None if own is None else own.updated_by, None if own is None else own.updated_at,
                      lms, lms_learners, resolve(layers(defaults, staff, lms)), extensions)


class SeveralExercises(Exception):
    """A link of several exercises, asked for without naming one: each has its own rules."""

    def __init__(self, slugs: list[str]) -> None:
        super().__init__(slugs)
        self.slugs = slugs


def link_exercise_scope(session: Session, link_id: int, slug: str | None = None,
                        course_id: int | None = None) -> tuple[CountingScope, Exercise] | None:
    """The counting scope of exercise `slug` of an LTI resource link: its platform's client, the
    exercise and the link. `slug` None: the link's one exercise (SeveralExercises for a link of
    several). None: no such link (in course `course_id` if given), or `slug` is not one of its
    exercises."""
    link = session.get(LtiResourceLink, link_id)
    if link is None or (course_id is not None and link.course_id != course_id):
        return None
    exercises = [exercise for exercise, _ in link.exercise_points()]
    if slug is None and len(exercises) > 1:
        raise SeveralExercises([exercise.slug for exercise in exercises])
    exercise = next((exercise for exercise in exercises if slug in (None, exercise.slug)), None)
    if exercise is None:
        return None
    return CountingScope(link.platform.api_client_id, exercise.id, link.id), exercise
