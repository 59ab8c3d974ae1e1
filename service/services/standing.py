"""A learner's standing in a counting scope (where their attempts at an exercise count together),
read from the database: the rules in force (every layer, service/rules.py) and what the learner has
used of them."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, String, bindparam, func, literal, literal_column, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from .. import scores
from ..learner_tokens import LearnerScope
from ..models import (
    Attempt,
    AttemptRow,
    AttemptStatus,
    Exercise,
    ExerciseVersion,
    LtiLearnerDates,
    LtiResourceLink,
    Run,
)
from ..models.base import utcnow
from ..models.rules import AssessmentRules
from ..rules import Standing, layers, resolve
from ..scoring import scoring_json
from .versions import ListedAttempt, ListedExercise


def link_key(link_id: InstrumentedAttribute[int | None]) -> ColumnElement[int]:
    """`coalesce(lti_link_id, 0)` (or course_id's) as the counting scope's indexes have it (ux_attempts_number,
    ux_assessment_rules_scope), its 0 in the SQL: with the 0 a bound parameter SQLite could not
    use them (it read every attempt at the exercise), nor PostgreSQL's generic plans."""
    return func.coalesce(link_id, literal_column("0"))


@dataclass(frozen=True)
class CountingScope:
    """Where a learner's attempts at an exercise count together: one exercise of an LTI resource
    link (a link of several exercises, service/lti/assignments.py, is one scope per exercise), or
    (no link) a client's own use of the exercise through the REST API, in one of its courses or in
    none.

    Its rules are the link's for that exercise, or the client's for the exercise (every course
    without a link shares them); what the learner has used of them (attempts, runs) counts within
    `course_id` alone: a course key's learner token spends nothing of the learner's attempts in
    another course or in none (issue 33)."""

    client_id: int
    exercise_id: int
    link_id: int | None
    # The course the attempts are made in (a link's is its course); None: in no course.
    course_id: int | None = None

    def rule_rows(self) -> list[ColumnElement[bool]]:
        """The scope's rules rows: its own (no learner) and its learners' extensions."""
        return [AssessmentRules.client_id == self.client_id, AssessmentRules.exercise_id == self.exercise_id,
                link_key(AssessmentRules.lti_link_id) == (self.link_id or 0)]


def scope_course(session: Session, scope: LearnerScope) -> int | None:
    """The course a learner token acts in: the one it names, or, for a launch's token issued before
    tokens named their course (renewed since), its link's."""
    if scope.course_id is not None or scope.link_id is None:
        return scope.course_id
    return session.scalar(select(LtiResourceLink.course_id).where(LtiResourceLink.id == scope.link_id))


@dataclass(frozen=True)
class LearnerCountingScope:
    """Where a caller's learner acts at an exercise: the counting scope, and whether the rules bind
    the learner there (`exempt`: an instructor trying the exercise out)."""

    counting_scope: CountingScope
    exempt: bool

    @classmethod
    def of(cls, session: Session, client_id: int, scope: LearnerScope | None, exercise_id: int,
           learner: str | None = None) -> LearnerCountingScope:
        """An API key's learner (`scope` None): the client's own use of the exercise, in no course.
        A learner token's own learner (or, for an instructor's token, `learner` of its link): the link
        and course the token was issued for. An instructor's own attempts and runs are try-outs: in
        no link and no course, bound by no rule, counted in no grade."""
        if scope is None:
            return cls(CountingScope(client_id, exercise_id, None), False)
        if scope.is_instructor and learner in (None, scope.learner):
            return cls(CountingScope(scope.client_id, exercise_id, None), True)
        return cls(CountingScope(scope.client_id, exercise_id, scope.link_id, scope_course(session, scope)), False)


def dates_layer(available_from: datetime | None, due_at: datetime | None) -> dict[str, datetime]:
    """Dates an LMS sent, as a rules layer: a date it did not send sets nothing."""
    return {key: value for key, value in (("available_from", available_from), ("due_at", due_at)) if value is not None}


def lms_dates(session: Session, link_id: int | None) -> dict[str, datetime]:
    """The dates the platform sent at the link's latest launch, as a rules layer."""
    if link_id is None:
        return {}
    row = session.execute(select(LtiResourceLink.lms_available_from, LtiResourceLink.lms_due_at)
                          .where(LtiResourceLink.id == link_id)).one_or_none()
    return {} if row is None else dates_layer(*row)


def learner_lms_dates(session: Session, link_id: int | None) -> dict[str, dict[str, datetime]]:
    """The dates the platform sent each learner at their own launches of the link (Canvas), by learner."""
    if link_id is None:
        return {}
    rows = session.execute(select(LtiLearnerDates.learner, LtiLearnerDates.available_from, LtiLearnerDates.due_at)
                           .where(LtiLearnerDates.link_id == link_id))
    return {learner: layer for learner, *dates in rows if (layer := dates_layer(*dates))}


@functools.cache
def _standing_statement(with_runs: bool) -> Select[Any]:
    """The standing's one statement (every part a scalar subquery), built once per process: it runs
    before each attempt is written, on the write path a class hits at once before a deadline, and
    building a statement this size costs more CPU than running it. Its parameters: client_id,
    exercise_id, link_id and course_id (0: none, as in the attempts' unique index) and learner."""
    client, exercise, link, course = (bindparam(name, type_=Integer())
                                      for name in ("client_id", "exercise_id", "link_id", "course_id"))
    learner = bindparam("learner", type_=String())
    attempts = (Attempt.client_id == client, Attempt.exercise_id == exercise,
                link_key(Attempt.lti_link_id) == link, link_key(Attempt.course_id) == course, Attempt.learner == learner)
    rules = select(AssessmentRules.rules).where(
        AssessmentRules.client_id == client, AssessmentRules.exercise_id == exercise,
        link_key(AssessmentRules.lti_link_id) == link)
    learner_dates = (LtiLearnerDates.link_id == link, LtiLearnerDates.learner == learner)
    runs = (select(func.count(Run.id)).where(Run.client_id == client, Run.exercise_id == exercise,
                                             link_key(Run.course_id) == course, Run.learner == learner)
            .scalar_subquery() if with_runs else literal(0))
    return select(
        select(func.count()).where(*attempts, Attempt.status != AttemptStatus.ERROR.value).scalar_subquery(),
        select(func.coalesce(func.max(Attempt.attempt_number), 0)).where(*attempts).scalar_subquery(),
        select(func.count()).where(*attempts, scores.passed()).scalar_subquery(),
        rules.where(AssessmentRules.learner.is_(None)).scalar_subquery(),
        rules.where(AssessmentRules.learner == learner).scalar_subquery(),
        select(LtiResourceLink.lms_available_from).where(LtiResourceLink.id == link).scalar_subquery(),
        select(LtiResourceLink.lms_due_at).where(LtiResourceLink.id == link).scalar_subquery(),
        select(LtiLearnerDates.available_from).where(*learner_dates).scalar_subquery(),
        select(LtiLearnerDates.due_at).where(*learner_dates).scalar_subquery(),
        runs)


def standing(session: Session, counting_scope: CountingScope, defaults: Mapping[str, Any], learner: str, *,
             exempt: bool = False, with_runs: bool = False, now: datetime | None = None) -> Standing:
    """Where `learner` stands in `counting_scope` now, in one statement. `exempt`: the rules do not bind
    them (an instructor trying the exercise out); `with_runs`: count their runs too."""
    (used, last_number, passed, own, extension, lms_from, lms_due, own_from, own_due,
     runs_used) = session.connection().execute(_standing_statement(with_runs), {
        "client_id": counting_scope.client_id, "exercise_id": counting_scope.exercise_id,
        "link_id": counting_scope.link_id or 0, "course_id": counting_scope.course_id or 0, "learner": learner}).one()
    rules = resolve(layers(defaults, own, dates_layer(lms_from, lms_due), dates_layer(own_from, own_due), extension))
    return Standing(rules, now or utcnow(), int(used), int(last_number) + 1, bool(passed),
                    int(runs_used or 0), exempt)


@dataclass(frozen=True, slots=True)
class AttemptView:
    """What one reader sees of an attempt (schemas/attempts.py AttemptSchema dumps it): the attempt
    (stored, or the row of one just made), its exercise and version, and what the rules show its
    reader: the explanation (`explanation_shown`; for code the reference's walk-through) and the
    feedback that names a correct answer, and (`standing`) where its learner stands, in responses
    about one attempt. Made by `seen_under`, the one place a standing decides what is shown."""

    attempt: Attempt | AttemptRow | ListedAttempt
    exercise: Exercise | ListedExercise
    exercise_version: ExerciseVersion
    explanation_shown: bool
    standing: Standing | None

    @property
    def feedback(self) -> list[dict[str, Any]]:
        """A quiz attempt's feedback; a correct choice the learner did not pick names the answer, so
        it is left out until the rules show the explanation."""
        if self.attempt.code is not None:
            return []
        feedback: list[dict[str, Any]] = (self.attempt.result or {}).get("feedback", [])
        if self.explanation_shown:
            return feedback
        return [entry for entry in feedback if entry.get("selected", True)]

    @property
    def report(self) -> dict[str, Any] | None:
        """The code grader's report (quiz kinds have feedback instead)."""
        return self.attempt.result if self.attempt.code is not None else None

    @property
    def scoring(self) -> dict[str, Any] | None:
        """The scoring policy its grade was made under, and what the policy did (service/scoring.py)."""
        attempt = self.attempt
        return scoring_json(attempt.scoring, attempt.result, attempt.grader_score, attempt.code is not None)

    @property
    def explanation(self) -> str | None:
        """The exercise's explanation, once the attempt is graded and the rules show it."""
        if self.attempt.status != AttemptStatus.GRADED.value or not self.explanation_shown:
            return None
        explanation: str | None = self.exercise_version.spec["explanation"]
        return explanation


def seen_under(standing: Standing, attempt: Attempt | AttemptRow | ListedAttempt, exercise: Exercise | ListedExercise,
               version: ExerciseVersion, *, with_standing: bool) -> AttemptView:
    """`attempt` as its reader sees it when its learner stands at `standing` (a staff reader's is
    exempt: everything is shown); `with_standing`: the standing too (a response about one attempt)."""
    return AttemptView(attempt, exercise, version, standing.explanation_shown(), standing if with_standing else None)


def show_to_learner(session: Session, attempts: Iterable[Attempt | ListedAttempt], *, exempt: bool = False,
                    with_standing: bool = False) -> list[AttemptView]:
    """`attempts` as their reader sees them under their learners' rules (seen_under), for the API's
    attempt responses. `exempt`: the reader is staff (an instructor's token): everything is shown.
    One standing is read per learner and counting scope among `attempts`."""
    standings: dict[tuple[CountingScope, str], Standing] = {}
    views = []
    for attempt in attempts:
        key = (CountingScope(attempt.client_id, attempt.exercise_id, attempt.lti_link_id, attempt.course_id),
               attempt.learner)
        if key not in standings:
            # The current version's rules, as for the learner's next attempt.
            standings[key] = standing(session, key[0], attempt.exercise.version.spec.get("rules", {}),
                                      attempt.learner, exempt=exempt)
        views.append(seen_under(standings[key], attempt, attempt.exercise, attempt.exercise_version,
                                with_standing=with_standing))
    return views
