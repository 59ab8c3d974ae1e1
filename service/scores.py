"""The score that counts for a learner at an exercise: the best of their graded attempts' scores,
or the score of their latest graded attempt.

Which one is the policy: an exercise's `score_policy` in exercise.toml ("best", the default, or
"latest") for the LMS passback, `?policy=` for the gradebook export; the learner progress keeps
both. Only graded attempts count: one still waiting, or one the grader failed on (`error`, no
score), is never a learner's grade. "Latest" is by submission: the graded attempt submitted last
(`created_at`, then `id` between attempts submitted at the same instant), whatever its score.

The rule is written here, once in Python (`keep`: scores read one by one in submission order,
as the progress counters and the streamed gradebook read them) and once in SQL (`score_query`,
`best_of_group`, and the text of the set-based counter rebuild), side by side;
tests/api/test_scores.py checks on both databases that every form gives the same scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import reduce
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, select

from .models import Attempt, AttemptStatus

BEST, LATEST = "best", "latest"
POLICIES = (BEST, LATEST)
DEFAULT_POLICY = BEST


def policy_of(spec: Mapping[str, Any]) -> str:
    """An exercise version's policy (its `score_policy`; best when the exercise names none)."""
    policy: str = spec.get("score_policy", DEFAULT_POLICY)
    return policy


def _check(policy: str) -> None:
    if policy not in POLICIES:
        raise ValueError(f"unknown score policy {policy!r}")


# ---------------------------------------------------------------------------- Python

def keep(policy: str, kept: float | None, newer: float | None) -> float | None:
    """The score that counts once one more graded attempt is seen, submitted after the ones before
    (`kept`: the score that counted until then, None before the first)."""
    if policy == LATEST:
        return newer
    _check(policy)
    if newer is None or (kept is not None and kept >= newer):
        return kept
    return newer


def score_that_counts(policy: str, scores: Iterable[float | None]) -> float | None:
    """The score that counts among graded attempts' scores, given oldest submission first."""
    _check(policy)
    return reduce(lambda kept, newer: keep(policy, kept, newer), scores, None)


# ---------------------------------------------------------------------------- SQL

def counted() -> ColumnElement[bool]:
    """The attempts that count: the graded ones."""
    return Attempt.status == AttemptStatus.GRADED.value


def passed() -> ColumnElement[bool]:
    """The attempts that passed: counted ones the grader found correct."""
    return and_(counted(), Attempt.correct.is_(True))


def attempt_passed(status: str, correct: bool | None) -> bool:
    """`passed`, for an attempt's columns read into Python."""
    return status == AttemptStatus.GRADED.value and correct is True


#: Submission order, oldest first: the last counted attempt in it is the latest.
SUBMISSION_ORDER = (Attempt.created_at, Attempt.id)


def score_query(policy: str, *where: ColumnElement[bool]) -> Select[float | None]:
    """The score that counts among the counted attempts that match `where` (one learner's, at one
    exercise or one LMS link): a one-value query, NULL when none is graded."""
    _check(policy)
    if policy == LATEST:
        return (select(Attempt.score).where(counted(), *where)
                .order_by(*(column.desc() for column in SUBMISSION_ORDER)).limit(1))
    return select(func.max(Attempt.score)).where(counted(), *where)


def best_of_group() -> ColumnElement[float | None]:
    """The best counted score of a GROUP BY group of attempts of any status."""
    return func.max(case((counted(), Attempt.score)))


def passed_in_group() -> ColumnElement[bool]:
    """Whether one attempt of a GROUP BY group of attempts of any status passed."""
    return func.max(case((passed(), 1), else_=0)) == 1


# The same, as SQL text over the attempts table, for set-based statements (progress.rebuild):
# the counted rows, the best of a group of them, and the latest of a window of them in submission
# order (`{window}` is the window's name or its PARTITION BY).
SQL_COUNTED = f"status = '{AttemptStatus.GRADED.value}'"
SQL_SUBMISSION_ORDER = "created_at, id"
SQL_BEST = "max(score)"
SQL_LATEST = "last_value(score) OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
