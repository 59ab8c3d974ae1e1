"""Staff setting assessment rules: an assignment's, and a learner's extension (service/rules.py)."""

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
from .standing import Assignment, learner_lms_dates, lms_dates


@dataclass(frozen=True)
class Extension:
    learner: str
    rules: dict[str, Any]
    note: str | None
    updated_by: str
    updated_at: datetime
    in_force: Rules


@dataclass(frozen=True)
class AssignmentRules:
    """Every layer of an assignment's rules, for staff: what each sets and what is in force."""

    exercise: str
    link_id: int | None
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


def _row(session: Session, assignment: Assignment, learner: str | None) -> AssessmentRules | None:
    return session.scalar(select(AssessmentRules).where(*assignment.rule_rows()).where(
        AssessmentRules.learner.is_(None) if learner is None else AssessmentRules.learner == learner))


def set_rules(session: Session, assignment: Assignment, learner: str | None, rules: dict[str, Any],
              by: str, note: str | None = None) -> None:
    """Replace the assignment's rules (`learner` None) or the learner's extension with `rules`
    (validated: schemas/rules.py, as JSON)."""
    row = _row(session, assignment, learner)
    if row is None:
        row = AssessmentRules(client_id=assignment.client_id, exercise_id=assignment.exercise_id,
                              lti_link_id=assignment.link_id, learner=learner)
        session.add(row)
    row.rules, row.note, row.updated_by, row.updated_at = rules, note, by[:100], utcnow()


def clear_rules(session: Session, assignment: Assignment, learner: str | None) -> bool:
    """Remove the assignment's rules or the learner's extension; whether there was one."""
    row = _row(session, assignment, learner)
    if row is not None:
        session.delete(row)
    return row is not None


def describe(session: Session, assignment: Assignment, exercise: Exercise) -> AssignmentRules:
    rows = session.scalars(select(AssessmentRules).where(*assignment.rule_rows())
                           .order_by(AssessmentRules.learner)).all()
    own = next((row for row in rows if row.learner is None), None)
    defaults = exercise.version.spec.get("rules", {})
    lms = lms_dates(session, assignment.link_id)
    lms_learners = learner_lms_dates(session, assignment.link_id)
    staff = None if own is None else own.rules
    extensions = [Extension(row.learner, row.rules, row.note, row.updated_by, row.updated_at,
                            resolve(layers(defaults, staff, lms, lms_learners.get(row.learner), row.rules)))
                  for row in rows if row.learner is not None]
    return AssignmentRules(exercise.slug, assignment.link_id, assignment.client_id, defaults,
                           staff, None if own is None else own.updated_by,
                           None if own is None else own.updated_at, lms, lms_learners,
                           resolve(layers(defaults, staff, lms)), extensions)


def link_assignment(session: Session, link_id: int, course_id: int | None = None) -> tuple[Assignment, Exercise] | None:
    """The assignment an LTI resource link is: its platform's client and its exercise (None: no such
    link, in course `course_id` if given)."""
    link = session.get(LtiResourceLink, link_id)
    if link is None or (course_id is not None and link.course_id != course_id):
        return None
    return Assignment(link.platform.api_client_id, link.exercise_id, link.id), link.exercise
