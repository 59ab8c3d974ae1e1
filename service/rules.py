"""Assessment rules: how many attempts a learner has, what each costs, when an exercise is open,
what happens after the deadline, when the explanation is shown and whether "Run" is allowed.

`RULES` is the one table of them: each rule's name, kind, bounds, default, the words staff and
learners read of it, and the layers that may set it. The layer schema (exercise.toml's [rules]
table and the admin API's body) and the rules in force as the API shows them are built from it
(service/rule_schemas.py), and so is what `GET /api/v1/rules` tells the dashboard and the learner
pages (resources/rules.py). Adding a rule is an entry here, its field in `Rules`, and what
enforces it.

Rules come in layers, later ones winning key by key (`layers` gives their order, `resolve` merges):
1. the exercise's defaults, its exercise.toml [rules] table (the table's defaults otherwise);
2. what staff set for an assignment: an LTI resource link, or a client's own use of the exercise
   through the REST API (`AssessmentRules` rows without a learner);
3. the dates the LMS sent at the latest launch of the link (`lms_available_from`, `lms_due_at`):
   the platform's gradebook is where an instructor sets dates, so these win over staff's here;
4. the dates the LMS sent the learner at their own launch (Canvas: a section's or a learner's
   override, `LtiLearnerDates`), over the link's;
5. a learner's extension (an `AssessmentRules` row with the learner): staff's decision for that
   one learner, over everything else.

This module is pure (no Flask, no database, no marshmallow): `Standing` is a learner's position
in an assignment, read from the database by service/services/standing.py, and every path that
submits (the API, a learner token, an LTI launch) asks it the same questions through
`services.attempts.create_attempt`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields as dataclass_fields, replace
from datetime import datetime, timedelta
from typing import Any

# When the explanation (and for code the reference walk-through it holds) is shown to a learner.
ALWAYS, AFTER_PASS, AFTER_ATTEMPTS, AFTER_DUE = "always", "after_pass", "after_attempts", "after_due"
# What happens to an attempt submitted after the due date (and its grace period).
REFUSE, ACCEPT = "refuse", "accept"
# How an attempt's checks make its score (service/scoring.py): the sum of the passed checks'
# weights; 1 or 0; or that sum, at most `scoring_cap` when a check of backward failed.
PARTIAL, ALL_OR_NOTHING, GATE = "partial", "all_or_nothing", "gate"

# Why an attempt is refused: the last part of its problem+json type (errors.py).
NOT_OPEN, CLOSED, NO_ATTEMPTS_LEFT, RUNS_OFF, NO_RUNS_LEFT = (
    "not-open-yet", "past-due", "no-attempts-left", "runs-not-allowed", "no-runs-left")

# ------------------------------------------------------------------------------------ the layers

EXERCISE, STAFF, LMS, LMS_LEARNER, EXTENSION = "exercise", "staff", "lms", "lms_learner", "extension"
#: Each layer, in the order it applies (later ones win), and what it is.
LAYERS: dict[str, str] = {
    EXERCISE: "The exercise's defaults: its exercise.toml [rules] table.",
    STAFF: "What staff set for the assignment (an LTI link, or a client's own use of the exercise).",
    LMS: "The dates the LMS sent at the latest launch of the link.",
    LMS_LEARNER: "The dates the LMS sent the learner at their own launch (Canvas: section and student overrides).",
    EXTENSION: "The learner's extension, set by staff for that one learner.",
}

Layer = Mapping[str, Any] | None


def layers(exercise: Layer, staff: Layer, lms: Layer, lms_learner: Layer = None,
           extension: Layer = None) -> list[Layer]:
    """The layers of rules in the order they apply (for `resolve`); an assignment's own rules,
    for no learner in particular, are the first three."""
    return [exercise, staff, lms, lms_learner, extension]


# ---------------------------------------------------------------------------------- the rule table

#: The kinds of value a rule takes: a whole number in [minimum, maximum]; a fraction in [0, 1]; a
#: list of fractions of length [minimum, maximum]; a date and time with its zone; one of
#: `choices` (strings); true or false (`choices` give their words).
COUNT, FRACTION, FRACTIONS, DATETIME, CHOICE, SWITCH = "count", "fraction", "fractions", "datetime", "choice", "switch"
KINDS = (COUNT, FRACTION, FRACTIONS, DATETIME, CHOICE, SWITCH)
#: What only staff and the exercise's author set (the LMS sends dates alone).
STAFF_LAYERS = (EXERCISE, STAFF, EXTENSION)


@dataclass(frozen=True)
class Choice:
    """One value a choice rule takes: staff's word for it, and the sentence a learner reads of it
    (None: the learner's page says nothing of it)."""

    value: str | bool
    label: str
    learner: str | None = None


@dataclass(frozen=True)
class Rule:
    """One assessment rule, as staff set it and the pages show it."""

    name: str
    kind: str
    default: Any
    #: Its name on the dashboard (the form's label, the layers' row).
    label: str
    #: What it does, for staff: the API's description of it.
    help: str
    #: None is a value ("unlimited", "none"): a layer sets it to None to unset an earlier one's.
    nullable: bool = False
    #: What None means for it, in words.
    none: str = "none"
    #: A count's bounds, or a list's length.
    minimum: int = 0
    maximum: int | None = None
    choices: tuple[Choice, ...] = ()
    #: The layers that may set it.
    set_by: tuple[str, ...] = STAFF_LAYERS
    #: The term the learner's page shows its choice's sentence under.
    learner_term: str | None = None

    def choice(self, value: Any) -> Choice | None:
        return next((c for c in self.choices if c.value == value), None)


RULES: tuple[Rule, ...] = (
    Rule("max_attempts", COUNT, None, "Max attempts",
         "Attempts a learner has (null: unlimited). Attempts the grader failed on are not counted.",
         nullable=True, none="unlimited", minimum=1, maximum=1000),
    Rule("attempt_penalty", FRACTION, 0.0, "Penalty per extra attempt (0–1)",
         "The fraction of the score taken off per attempt after the first: 0.1 counts the second "
         "attempt at most 90%, the third 80%. Not with attempt_maxima."),
    Rule("attempt_maxima", FRACTIONS, None, "Or the most each attempt counts (0–1, in order)",
         "The most each attempt counts, in order, as fractions (the last stands for every later "
         "attempt): [1, 0.8, 0.5]. Not with attempt_penalty.",
         nullable=True, minimum=1, maximum=100),
    Rule("available_from", DATETIME, None, "Available from",
         "When attempts open (ISO 8601 with a time zone). The LMS's date wins where it sends one.",
         nullable=True, set_by=tuple(LAYERS)),
    Rule("due_at", DATETIME, None, "Due",
         "The due date (ISO 8601 with a time zone). The LMS's date wins where it sends one; a learner's "
         "extension wins over both.",
         nullable=True, set_by=tuple(LAYERS)),
    Rule("grace_minutes", COUNT, 0, "Grace (minutes)",
         "Minutes after due_at during which an attempt is still on time", maximum=7 * 24 * 60),
    Rule("late", CHOICE, REFUSE, "Late attempts",
         "After due_at (and the grace): refuse attempts, or accept them marked late (with late_penalty)",
         choices=(Choice(REFUSE, "refused"), Choice(ACCEPT, "accepted"))),
    Rule("late_penalty", FRACTION, 0.0, "Late penalty (0–1)",
         "With late = accept: the fraction taken off a late attempt's score"),
    Rule("show_explanation", CHOICE, AFTER_PASS, "Show the explanation",
         "When the explanation (for code, the walk-through of the reference) is shown to a learner: "
         "always (once graded), after_pass (once they passed, or can no longer submit), "
         "after_attempts (once they can no longer submit), after_due (once the due date and grace passed)",
         choices=(Choice(ALWAYS, "always", "The explanation is shown with each grade."),
                  Choice(AFTER_PASS, "after a pass",
                         "The explanation is shown once you pass, or once you can no longer submit."),
                  Choice(AFTER_ATTEMPTS, "after the attempts are used up",
                         "The explanation is shown once you can no longer submit."),
                  Choice(AFTER_DUE, "after the due date", "The explanation is shown after the due date.")),
         learner_term="Explanation"),
    Rule("runs", SWITCH, True, "Run (code exercises)",
         "Whether the exercise page's Run is allowed (code exercises)",
         choices=(Choice(True, "allowed"), Choice(False, "not allowed"))),
    Rule("max_runs", COUNT, None, "Max runs", "Runs a learner has at this exercise (null: unlimited)",
         nullable=True, none="unlimited", maximum=100_000),
    Rule("scoring", CHOICE, GATE, "Scoring",
         "How a code attempt's checks make its score: partial (the weights of the checks it passed, added up), "
         "all_or_nothing (1 when every check passed, else 0), gate (partial, but an attempt whose backward "
         "fails a check (gradcheck, gradient, boundary, gradgradcheck, forward_ad, batched_grad, "
         "grad_output_unchanged, backward_arity) scores at most scoring_cap). Quizzes: gate is partial; all_or_nothing gives 1 "
         "to a correct answer, else 0. An attempt keeps the policy it was submitted under, in a regrade too.",
         choices=(Choice(PARTIAL, "partial credit"), Choice(ALL_OR_NOTHING, "all or nothing"),
                  Choice(GATE, "partial, capped while backward is wrong"))),
    Rule("scoring_cap", FRACTION, 0.3, "Cap while backward is wrong (0–1)",
         "With scoring = gate: the most a code attempt whose backward fails a check scores. The default, "
         "0.3, is what the forward checks weigh by default (forward 0.20, output_shape_dtype 0.05, "
         "inputs_unchanged 0.05): a wrong backward earns at most what its forward is worth."),
)
RULE_BY_NAME = {rule.name: rule for rule in RULES}
RULE_KEYS = frozenset(RULE_BY_NAME)


def choices_of(name: str) -> tuple[Any, ...]:
    """The values a choice rule takes."""
    return tuple(choice.value for choice in RULE_BY_NAME[name].choices)


SHOW_EXPLANATION = choices_of("show_explanation")
LATE_POLICIES = choices_of("late")
SCORING_POLICIES = choices_of("scoring")


@dataclass(frozen=True)
class RuleNote:
    """A rule in force, in words for the learner ("Explanation": "The explanation is shown ...")."""

    term: str
    text: str


@dataclass(frozen=True)
class Rules:
    """The rules in force for one learner at one assignment (every layer merged): a field for
    each rule of `RULES`, whose defaults are the table's (`DEFAULT_RULES`)."""

    max_attempts: int | None
    attempt_penalty: float
    #: As PrairieLearn's points list. Set at most one of attempt_penalty and attempt_maxima.
    attempt_maxima: tuple[float, ...] | None
    available_from: datetime | None
    due_at: datetime | None
    grace_minutes: int
    late: str
    late_penalty: float
    show_explanation: str
    runs: bool
    max_runs: int | None
    scoring: str
    scoring_cap: float

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
        return {rule.name: _json(rule, getattr(self, rule.name)) for rule in RULES}

    @property
    def learner_notes(self) -> list[RuleNote]:
        """What the learner's page says of these rules beside their standing: a note for each rule
        whose value in force has a sentence for learners."""
        notes = []
        for rule in RULES:
            choice = rule.choice(getattr(self, rule.name))
            if rule.learner_term and choice is not None and choice.learner:
                notes.append(RuleNote(rule.learner_term, choice.learner))
        return notes

if [f.name for f in dataclass_fields(Rules)] != [rule.name for rule in RULES]:
    raise RuntimeError("Rules must have one field for each rule of RULES, in the table's order")
DEFAULT_RULES = Rules(**{rule.name: rule.default for rule in RULES})


def _json(rule: Rule, value: Any) -> Any:
    """A rule's value as JSON: dates as ISO strings, lists as lists."""
    if value is None:
        return None
    if rule.kind == DATETIME:
        return value.isoformat()
    if rule.kind == FRACTIONS:
        return list(value)
    return value


def _value(rule: Rule, value: Any) -> Any:
    """A rule's value as a layer stores it (JSON) read into `Rules`."""
    if rule.kind == DATETIME and isinstance(value, str):
        return datetime.fromisoformat(value)
    if rule.kind == FRACTIONS and value is not None:
        return tuple(float(v) for v in value)
    return value


def rules_json(loaded: Mapping[str, Any]) -> dict[str, Any]:
    """A loaded rules layer as stored (JSON): dates as ISO strings."""
    return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in loaded.items()}


def resolve(layers: Iterable[Layer]) -> Rules:
    """The rules once every layer (oldest first, as `layers` orders them; None: an absent layer)
    is applied key by key. A layer's keys are validated already (rule_schemas.py); a key set to
    None in a layer unsets it (an assignment with no due date although the exercise has one; only
    the nullable rules)."""
    present = [layer for layer in layers if layer]
    merged: dict[str, Any] = {}
    for layer in present:
        merged.update({key: _value(RULE_BY_NAME[key], value) for key, value in layer.items() if key in RULE_KEYS})
    # One way of penalising attempts: a later layer's choice replaces an earlier layer's other one.
    for layer in reversed(present):
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
