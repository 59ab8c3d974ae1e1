"""A learner's standing under the rules in force (service/rules.py Standing), case by case, without a
database or a request: what refuses an attempt or a run, the penalties the next attempt takes,
and when the explanation shows. The HTTP tests (tests/api/test_rules.py, tests/lti/test_rules_lti.py)
show the same rules reach every path that submits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.rules import CLOSED, NO_ATTEMPTS_LEFT, NO_RUNS_LEFT, NOT_OPEN, RUNS_OFF, Standing, resolve

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def standing(rules: dict[str, Any], *, used: int = 0, passed: bool = False, runs: int = 0,
             exempt: bool = False) -> Standing:
    return Standing(resolve([rules]), NOW, used, used + 1, passed, runs, exempt)


@dataclass(frozen=True)
class Case:
    name: str
    rules: dict[str, Any]
    used: int = 0
    exempt: bool = False
    refused: str | None = None  # the refusal's reason, None: accepted
    status: int | None = None


ATTEMPTS = [
    Case("no rule", {}),
    Case("attempts left", {"max_attempts": 3}, used=2),
    Case("attempts used up", {"max_attempts": 3}, used=3, refused=NO_ATTEMPTS_LEFT, status=409),
    Case("an instructor is bound by none", {"max_attempts": 1}, used=5, exempt=True),
    Case("not open yet", {"available_from": NOW + HOUR}, refused=NOT_OPEN, status=403),
    Case("open since", {"available_from": NOW - HOUR}),
    Case("due later", {"due_at": NOW + HOUR}),
    Case("past due, late refused", {"due_at": NOW - HOUR}, refused=CLOSED, status=403),
    Case("past due within the grace", {"due_at": NOW - HOUR, "grace_minutes": 90}),
    Case("past due, late accepted", {"due_at": NOW - HOUR, "late": "accept"}),
    # Dates refuse before counts: a learner out of attempts after the due date is told it closed.
    Case("past due and used up", {"due_at": NOW - HOUR, "max_attempts": 1}, used=1, refused=CLOSED, status=403),
]


@pytest.mark.parametrize("case", ATTEMPTS, ids=[c.name for c in ATTEMPTS])
def test_an_attempt_is_refused_exactly_when_the_rules_say(case):
    refusal = standing(case.rules, used=case.used, exempt=case.exempt).refusal()
    if case.refused is None:
        assert refusal is None
    else:
        assert refusal is not None and (refusal.reason, refusal.status) == (case.refused, case.status)
        assert refusal.message  # a sentence for the learner


RUNS = [
    ({}, 0, False, None),
    ({"runs": False}, 0, False, RUNS_OFF),
    ({"runs": False}, 0, True, None),
    ({"max_runs": 2}, 1, False, None),
    ({"max_runs": 2}, 2, False, NO_RUNS_LEFT),
    ({"max_runs": 0}, 0, False, NO_RUNS_LEFT),
]


@pytest.mark.parametrize("rules,runs,exempt,refused", RUNS)
def test_a_run_is_refused_exactly_when_the_rules_say(rules, runs, exempt, refused):
    refusal = standing(rules, runs=runs, exempt=exempt).run_refusal()
    assert (None if refusal is None else refusal.reason) == refused


PENALTIES = [
    ({}, 0, []),
    ({"attempt_penalty": 0.1}, 0, []),  # the first attempt counts whole
    ({"attempt_penalty": 0.1}, 2, [("attempt", 0.8)]),
    ({"attempt_penalty": 0.5}, 4, [("attempt", 0.0)]),  # never below 0
    ({"attempt_maxima": [1, 0.8, 0.5]}, 1, [("attempt", 0.8)]),
    ({"attempt_maxima": [1, 0.8, 0.5]}, 7, [("attempt", 0.5)]),  # the last value stands for every later one
    ({"due_at": NOW - HOUR, "late": "accept", "late_penalty": 0.3}, 0, [("late", 0.7)]),
    ({"due_at": NOW - HOUR, "late": "accept", "late_penalty": 0.3, "attempt_penalty": 0.1}, 1,
     [("attempt", 0.9), ("late", 0.7)]),
    ({"due_at": NOW + HOUR, "late": "accept", "late_penalty": 0.3}, 0, []),
]


@pytest.mark.parametrize("rules,used,expected", PENALTIES)
def test_the_next_attempt_takes_the_penalties_in_force(rules, used, expected):
    penalties = standing(rules, used=used).penalties()
    assert [(p.reason, pytest.approx(p.factor)) for p in penalties] == expected


EXPLANATION = [
    ("always", {}, 0, False, True),
    ("after_pass", {}, 0, False, False),
    ("after_pass", {}, 1, True, True),
    ("after_pass", {"max_attempts": 1}, 1, False, True),  # can no longer submit
    ("after_attempts", {}, 3, True, False),  # passing is not enough
    ("after_attempts", {"max_attempts": 2}, 2, False, True),
    ("after_attempts", {"due_at": NOW - HOUR}, 0, False, True),  # closed to late work
    ("after_due", {"due_at": NOW + HOUR}, 1, True, False),
    ("after_due", {"due_at": NOW - HOUR, "grace_minutes": 30}, 1, False, True),
    ("after_due", {}, 1, True, False),  # no due date: never
]


@pytest.mark.parametrize("policy,rules,used,passed,shown", EXPLANATION)
def test_the_explanation_shows_when_its_policy_says(policy, rules, used, passed, shown):
    assert standing({**rules, "show_explanation": policy}, used=used, passed=passed).explanation_shown() is shown
    assert standing({**rules, "show_explanation": policy}, used=used, passed=passed, exempt=True).explanation_shown()


def test_the_standing_after_an_attempt_counts_it_and_remembers_a_pass():
    before = standing({"max_attempts": 2})
    after = before.after(type("Attempt", (), {"correct": True})())
    assert (after.attempts_used, after.next_number, after.passed) == (1, 2, True)
    assert after.attempts_left == 1 and before.attempts_left == 2
