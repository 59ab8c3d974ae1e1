"""The score an assignment of several exercises sends to the LMS (service/lti/assignments.py), case
by case: the mean or the points-weighted sum of its exercises' counted scores, an exercise without
one counting 0, and no score at all until one exercise has one."""

from __future__ import annotations

import pytest

from service.lti.assignments import Part, all_graded, assignment_score


def parts(*scores_and_points: tuple[float | None, float]) -> list[Part]:
    return [Part(exercise=None, points=points, score=score, attempts=0 if score is None else 1,  # type: ignore[arg-type]
                 passed=score == 1.0) for score, points in scores_and_points]


CASES = [
    ("mean", [(None, 1), (None, 1)], None, False),
    ("mean", [(1.0, 1), (None, 1)], 0.5, False),
    ("mean", [(1.0, 1), (0.5, 1), (0.0, 1)], 0.5, True),
    (None, [(0.25, 1), (0.75, 1)], 0.5, True),  # no rule: the mean
    ("sum", [(1.0, 3), (0.0, 1)], 0.75, True),
    ("sum", [(0.5, 2), (None, 2)], 0.25, False),
    ("sum", [(None, 5)], None, False),
]


@pytest.mark.parametrize("scoring,given,score,graded", CASES)
def test_the_assignments_score_follows_its_rule(scoring, given, score, graded):
    made = parts(*given)
    assert assignment_score(scoring, made) == (None if score is None else pytest.approx(score))
    assert all_graded(made) is graded


def test_a_parts_status_says_passed_tried_or_not_tried():
    passed, tried, untouched = parts((1.0, 1), (0.5, 1), (None, 1))
    assert (passed.status, tried.status, untouched.status) == ("passed", "tried", "not_tried")
