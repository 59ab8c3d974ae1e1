"""Scoring policies: how an attempt's grade becomes the grader's score (`Attempt.grader_score`),
under the `scoring` and `scoring_cap` rules (service/rules.py).

The judge does not know the rules: a code report's `score` stays the sum of the weights of the
checks it passed (its "checks score"). `policy_score` is the one place a policy is applied, by each
path that sets a grader's score: the grading worker (a code attempt, a code preview), the quiz
grade when an attempt or a preview is made (services/attempts.py, services/preview.py), and a
regrade's items (services/regrades.py). An attempt stores the policy it was submitted under
(`Attempt.scoring`, as it stores its penalties), and a regrade applies that stored policy, not
today's rules; null (an attempt older than migration 0024) is `partial`, what it was graded under.

- partial: the checks score.
- all_or_nothing: 1 when every check passed (a quiz: the answer is correct), else 0.
- gate: the checks score, but at most `cap` when a check of backward failed (registry.BACKWARD_CHECKS):
  a wrong backward still runs, and only the numerical checks expose it; such an attempt earns at
  most what its forward is worth (the default cap, 0.3, is the forward checks' default weight).
  A quiz has no backward: gate is partial.

Pure: no Flask, no database, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .grading.registry import BACKWARD_CHECKS
from .rules import ALL_OR_NOTHING, GATE, PARTIAL, Rules

Stored = Mapping[str, Any] | None


def scoring_of(rules: Rules) -> dict[str, Any]:
    """The policy an attempt made under `rules` stores ({"policy", "cap"}; cap null but for gate)."""
    return {"policy": rules.scoring, "cap": rules.scoring_cap if rules.scoring == GATE else None}


def _backward_failed(checks: Iterable[Mapping[str, Any]]) -> bool:
    return any(check.get("name") in BACKWARD_CHECKS and not check.get("passed") for check in checks)


def policy_score(scoring: Stored, score: float, correct: bool, report: Mapping[str, Any] | None = None) -> float:
    """The grader's score of a grade whose own score is `score` (a code report's checks score, a
    quiz's) under the stored policy `scoring` (null: partial). `report`: a code attempt's report
    (its checks); None for a quiz."""
    policy = (scoring or {}).get("policy", PARTIAL)
    if policy == ALL_OR_NOTHING:
        return 1.0 if correct else 0.0
    if policy == GATE and report is not None and _backward_failed(report.get("checks") or ()):
        return min(score, float((scoring or {})["cap"]))
    return score


def code_grade(scoring: Stored, report: Mapping[str, Any]) -> tuple[float, bool]:
    """A code report's grader's score under `scoring`, and whether it passed."""
    correct = report["status"] == "passed"
    return policy_score(scoring, float(report["score"]), correct, report), correct


def scoring_json(scoring: Stored, result: Mapping[str, Any] | None, grader_score: float | None,
                 is_code: bool) -> dict[str, Any] | None:
    """An attempt's `scoring` as the API shows it: its policy, the cap (null where none applies: not
    gate, or a quiz), whether the policy took something off its checks score (`capped`), and that
    checks score (null until graded). None for an attempt that stored no policy (before 0024)."""
    if scoring is None:
        return None
    policy = scoring.get("policy", PARTIAL)
    own = (result or {}).get("score")
    checks_score = None if grader_score is None or own is None else float(own)
    return {"policy": policy, "cap": scoring.get("cap") if policy == GATE and is_code else None,
            "capped": checks_score is not None and grader_score is not None and grader_score < checks_score - 1e-9,
            "checks_score": checks_score}
