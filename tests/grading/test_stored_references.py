"""A preparation stored by one judge and rebuilt by another (grading/references.py StoredReference):
used only when it answers this grade's own cases, under this judge's secret."""

from __future__ import annotations

import dataclasses

import pytest

from service.grading.references import StoredReference

VARIANT = "7:stored-learner"


@pytest.fixture(scope="module")
def stored(judge, clamp_exercise) -> StoredReference:
    made = judge.prepare(clamp_exercise, variant=VARIANT)
    assert made is not None  # the reference ran for this variant just now
    return made


@pytest.fixture(scope="module")
def another_variants(judge, clamp_exercise) -> StoredReference:
    made = judge.prepare(clamp_exercise, variant="7:someone-else")
    assert made is not None
    return made


def first_grade(clamp_exercise, stored: StoredReference | None) -> dict:
    """A first grade of the variant by a judge that never saw it (its memory: none)."""
    from service.grading.judge import Judge
    from tests.grading.support import SECRET

    with Judge(SECRET, slots=1, timeout=10.0, custom_ops=False) as fresh:
        return fresh.grade(clamp_exercise, clamp_exercise["files"]["reference.py"], variant=VARIANT, stored=stored)


def test_a_stored_preparation_is_rebuilt_without_running_the_reference(clamp_exercise, stored):
    assert StoredReference.from_json(stored.to_json()) == stored
    graded = first_grade(clamp_exercise, stored)
    assert graded["score"] == 1.0 and "reference_ms" not in graded["timings"]


@pytest.mark.parametrize("damage", ["other cases", "no probe", "another variant's key"])
def test_a_preparation_that_does_not_fit_runs_the_reference_again(clamp_exercise, stored, another_variants, damage):
    other_key = another_variants.key
    damaged = {"other cases": dataclasses.replace(stored, cases="0" * 64),
               "no probe": dataclasses.replace(stored, probe=None),
               "another variant's key": dataclasses.replace(stored, key=other_key)}[damage]
    graded = first_grade(clamp_exercise, damaged)
    assert graded["score"] == 1.0 and graded["timings"]["reference_ms"] > 0
