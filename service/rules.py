"""Assessment rules: how many attempts a learner has, what each costs, when an exercise is open,
what happens after the deadline, when the explanation is shown and whether "Run" is allowed.

Rules come in layers, later ones winning key by key (`resolve`):
1. the exercise's defaults, its exercise.toml [rules] table (defaults of this module otherwise);
2. what staff set for an assignment: an LTI resource link, or a client's own use of the exercise
   through the REST API (`AssessmentRules` rows without a learner);
3. the dates the LMS sent at the latest launch of the link (`lms_available_from`, `lms_due_at`):
   the platform's gradebook is where an instructor sets dates, so these win over staff's here;
4. a learner's extension (an `AssessmentRules` row with the learner): staff's decision for that
   one learner, over everything else.

This module is pure (no Flask, no database): `Standing` is a learner's position in an assignment,
read by service/services/rules.py, and every path that submits (the API, a learner token, an LTI
launch) asks it the same questions through `services.attempts.create_attempt`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields as dataclass_fields, replace
from datetime import datetime, timedelta
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

# When the explanation (and for code the reference walk-through it holds) is shown to a learner.
ALWAYS, AFTER_PASS, AFTER_ATTEMPTS, AFTER_DUE = "always", "after_pass", "after_attempts", "after_due"
SHOW_EXPLANATION = (ALWAYS, AFTER_PASS, AFTER_ATTEMPTS, AFTER_DUE)
# What happens to an attempt submitted after the due date (and its grace period).
REFUSE, ACCEPT = "refuse", "accept"
LATE_POLICIES = (REFUSE, ACCEPT)

# Why an attempt is refused: the last part of its problem+json type (errors.py).
NOT_OPEN, CLOSED, NO_ATTEMPTS_LEFT, RUNS_OFF, NO_RUNS_LEFT = (
    "not-open-yet", "past-due", "no-attempts-left", "runs-not-allowed", "no-runs-left")


@dataclass(frozen=True)
class Rules:
    """The rules in force for one learner at one assignment (every layer merged)."""

    #: None: unlimited. Attempts the grader failed on (status error) are not counted.
    max_attempts: int | None = None
    #: The fraction of the score taken off per attempt after the first (0.1: the second attempt
    #: counts at most 90%, the third 80%, ...; never below zero).
    attempt_penalty: float = 0.0
    #: Or, as PrairieLearn's points list: the most attempt n counts (a fraction of the score), the
    #: last value standing for every later attempt. Set at most one of the two.
    attempt_maxima: tuple[float, ...] | None = None
    available_from: datetime | None = None
    due_at: datetime | None = None
    #: Minutes after the due date during which an attempt is still on time (a slow upload).
    grace_minutes: int = 0
    late: str = REFUSE
    #: With late = "accept": the fraction taken off a late attempt's score.
    late_penalty: float = 0.0
    show_explanation: str = AFTER_PASS
    #: Whether the exercise page's "Run" is allowed for this exercise, and how many runs a learner
    #: has (None: unlimited).
    runs: bool = True
    max_runs: int | None = None

    def attempt_factor(self, number: int) -> float:
        """The most attempt `number` (1, 2, ...) counts, as a fraction of its score."""
        if self.attempt_maxima:
            return self.attempt_maxima[min(number, len(self.attempt_maxima)) - 1]
        return max(0.0, 1.0 - self.attempt_penalty * (number - 1))

    @property
    def closes_at(self) -> datetime | None:
        """When an attempt stops being on time: the due date plus the grace period."""
        return None if self.due_at is None else self.due_at + timedelta(minutes=self.grace_minutes)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("available_from", "due_at"):
            if data[key] is not None:
                data[key] = data[key].isoformat()
        if data["attempt_maxima"] is not None:
            data["attempt_maxima"] = list(data["attempt_maxima"])
        return data


RULE_KEYS = frozenset(f.name for f in dataclass_fields(Rules))
DEFAULT_RULES = Rules()


def _value(key: str, value: Any) -> Any:
    if key in ("available_from", "due_at") and isinstance(value, str):
        return datetime.fromisoformat(value)
    if key == "attempt_maxima" and value is not None:
        return tuple(float(v) for v in value)
    return value


def resolve(layers: Iterable[Mapping[str, Any] | None]) -> Rules:
    """The rules once every layer (oldest first; None: an absent layer) is applied key by key. A
    layer's keys are validated already (schemas/rules.py); a key set to None in a layer unsets it
    (an assignment with no due date although the exercise has one; only the keys that may be None)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged.update({key: _value(key, value) for key, value in layer.items() if key in RULE_KEYS})
    # One way of penalising attempts: a later layer's choice replaces an earlier layer's other one.
    for layer in reversed([layer for layer in layers if layer]):
        if "attempt_maxima" in layer or "attempt_penalty" in layer:
            if "attempt_maxima" not in layer:
                merged["attempt_maxima"] = None
            if "attempt_penalty" not in layer:
                merged["attempt_penalty"] = 0.0
            break
    return replace(DEFAULT_RULES, **merged)


@dataclass(frozen=True)
class Penalty:
    """A penalty an attempt's rules applied: its score counts `factor` times the grader's."""

    reason: str  # "attempt" (its number) or "late"
    factor: float

    def as_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "factor": self.factor}


def counted_score(grader_score: float | None, penalties: Iterable[Mapping[str, Any]] | None) -> float | None:
    """The score that counts for a grade of `grader_score` under the penalties stored on its attempt."""
    if grader_score is None:
        return None
    return grader_score * math.prod(float(p["factor"]) for p in penalties or ())


@dataclass(frozen=True)
class Refusal:
    """Why a learner may not submit (or run) now: the problem+json type's name, the HTTP status,
    and a sentence for the learner."""

    reason: str
    status: int
    message: str


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="minutes")


@dataclass(frozen=True)
class Standing:
    """Where one learner stands at one assignment, at `now`."""

    rules: Rules
    now: datetime
    #: Attempts that count toward max_attempts (every one but those the grader failed on).
    attempts_used: int
    #: The number the next attempt gets (numbers are never reused, errors included).
    next_number: int
    #: Whether one of the learner's attempts passed.
    passed: bool
    runs_used: int = 0
    #: The rules do not apply (an instructor trying the exercise out).
    exempt: bool = False

    def after(self, attempt: Any) -> Standing:
        """The standing once `attempt` (submitted in this standing) is made."""
        return replace(self, attempts_used=self.attempts_used + 1, next_number=self.next_number + 1,
                       passed=self.passed or bool(attempt.correct))

    @property
    def attempts_left(self) -> int | None:
        if self.exempt or self.rules.max_attempts is None:
            return None
        return max(0, self.rules.max_attempts - self.attempts_used)

    @property
    def late_now(self) -> bool:
        closes = self.rules.closes_at
        return closes is not None and self.now > closes and not self.exempt

    def refusal(self) -> Refusal | None:
        """Why an attempt submitted now would be refused; None: it is accepted."""
        if self.exempt:
            return None
        rules = self.rules
        if rules.available_from is not None and self.now < rules.available_from:
            return Refusal(NOT_OPEN, 403, f"This exercise opens at {_when(rules.available_from)}.")
        if self.late_now and rules.late == REFUSE:
            assert rules.due_at is not None
            return Refusal(CLOSED, 403, f"This exercise was due at {_when(rules.due_at)}; late attempts are not accepted.")
        if self.attempts_left == 0:
            return Refusal(NO_ATTEMPTS_LEFT, 409,
                           f"You have used all {rules.max_attempts} attempts at this exercise.")
        return None

    def run_refusal(self) -> Refusal | None:
        """Why a "Run" of this exercise's code would be refused now; None: it may run."""
        if self.exempt:
            return None
        if not self.rules.runs:
            return Refusal(RUNS_OFF, 403, "Running code is not allowed for this exercise: submit it to have it graded.")
        if self.rules.max_runs is not None and self.runs_used >= self.rules.max_runs:
            return Refusal(NO_RUNS_LEFT, 409, f"You have used all {self.rules.max_runs} runs at this exercise.")
        return None

    def penalties(self) -> list[Penalty]:
        """The penalties the next attempt (submitted now) takes, in the order they apply."""
        if self.exempt:
            return []
        found = []
        factor = self.rules.attempt_factor(self.attempts_used + 1)
        if factor < 1.0:
            found.append(Penalty("attempt", factor))
        if self.late_now and self.rules.late == ACCEPT and self.rules.late_penalty > 0:
            found.append(Penalty("late", 1.0 - self.rules.late_penalty))
        return found

    @property
    def done(self) -> bool:
        """The learner can no longer submit (attempts used up, or closed to late work)."""
        refusal = self.refusal()
        return refusal is not None and refusal.reason in (NO_ATTEMPTS_LEFT, CLOSED)

    def explanation_shown(self) -> bool:
        """Whether the learner may see the explanation (of any of their graded attempts) now."""
        policy = self.rules.show_explanation
        if self.exempt or policy == ALWAYS:
            return True
        if policy == AFTER_PASS:
            return self.passed or self.done
        if policy == AFTER_ATTEMPTS:
            return self.done
        closes = self.rules.closes_at
        return closes is not None and self.now > closes


# ---------------------------------------------------------------------------- a layer as written

FRACTION = validate.Range(min=0, max=1)


class RulesLayerSchema(Schema):
    """What one layer of rules may set, as exercise.toml's [rules] table and the admin API's body
    write it (the one definition of a valid rule). Every key is optional: a layer sets only what it
    changes."""

    max_attempts = fields.Integer(allow_none=True, validate=validate.Range(min=1, max=1000), metadata={
        "description": "Attempts a learner has (null: unlimited). Attempts the grader failed on are not counted."})
    attempt_penalty = fields.Float(validate=FRACTION, metadata={
        "description": "The fraction of the score taken off per attempt after the first: 0.1 counts the second "
                       "attempt at most 90%, the third 80%. Not with attempt_maxima."})
    attempt_maxima = fields.List(fields.Float(validate=FRACTION), allow_none=True,
                                 validate=validate.Length(min=1, max=100), metadata={
        "description": "The most each attempt counts, in order, as fractions (the last stands for every later "
                       "attempt): [1, 0.8, 0.5]. Not with attempt_penalty."})
    available_from = fields.AwareDateTime(allow_none=True, metadata={
        "description": "When attempts open (ISO 8601 with a time zone). The LMS's date wins where it sends one."})
    due_at = fields.AwareDateTime(allow_none=True, metadata={
        "description": "The due date (ISO 8601 with a time zone). The LMS's date wins where it sends one; a learner's "
                       "extension wins over both."})
    grace_minutes = fields.Integer(validate=validate.Range(min=0, max=7 * 24 * 60), metadata={
        "description": "Minutes after due_at during which an attempt is still on time"})
    late = fields.String(validate=validate.OneOf(LATE_POLICIES), metadata={
        "description": "After due_at (and the grace): refuse attempts, or accept them marked late (with late_penalty)"})
    late_penalty = fields.Float(validate=FRACTION, metadata={
        "description": "With late = accept: the fraction taken off a late attempt's score"})
    show_explanation = fields.String(validate=validate.OneOf(SHOW_EXPLANATION), metadata={
        "description": "When the explanation (for code, the walk-through of the reference) is shown to a learner: "
                       "always (once graded), after_pass (once they passed, or can no longer submit), "
                       "after_attempts (once they can no longer submit), after_due (once the due date and grace "
                       "passed)"})
    runs = fields.Boolean(metadata={"description": "Whether the exercise page's Run is allowed (code exercises)"})
    max_runs = fields.Integer(allow_none=True, validate=validate.Range(min=0, max=100_000), metadata={
        "description": "Runs a learner has at this exercise (null: unlimited)"})

    @pre_load
    def _toml_datetimes(self, data: Any, **_kwargs: Any) -> Any:
        # exercise.toml writes dates as TOML datetimes: read them as the API's ISO strings.
        if isinstance(data, dict):
            return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in data.items()}
        return data

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if "attempt_maxima" in data and "attempt_penalty" in data:
            raise ValidationError("Give attempt_penalty or attempt_maxima, not both.", "attempt_maxima")
        opens, due = data.get("available_from"), data.get("due_at")
        if opens is not None and due is not None and opens >= due:
            raise ValidationError("Must be before due_at.", "available_from")


def rules_json(loaded: dict[str, Any]) -> dict[str, Any]:
    """A loaded rules layer as stored (JSON): dates as ISO strings."""
    return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in loaded.items()}
