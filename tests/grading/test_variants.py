"""A variant per learner in the judge, with the real sandbox: each learner's hidden inputs and
grad_outputs are their own, the same on every grade (and regrade), and the shared cases without a
variant are byte for byte what they were before variants existed."""

from __future__ import annotations

import hashlib

from service.grading.cases import task_cases
from service.grading.plan import base_cases
from service.grading.references import ReferenceCache
from service.grading.spec import load_code_spec
from service.variants import variant_key
from tests.grading.support import SECRET, load_exercise

ADA, BOB = variant_key(1, "ada"), variant_key(1, "bob")

# sha256 of the task prefix (the cases as the child receives them) of each exercise's shared
# cases, with the grading tests' secret and this judge's limits, taken before variants existed.
SHARED_TASK_PREFIX = {
    "clamp-function": "90b9df566e4cc16615640bb8b5dff0966fac23bf03548938a3f2ecbcb34e5fb3",
    "cube-double-backward": "9419801d29ffcdfc908e5d7c185888f69d8060d7f73f039474457e307e102581",
}


def prepared(judge, exercise, variant=None):
    with judge._pool.slot() as slot:
        return judge._references.get(exercise, slot, variant)[0]


def _wire(cases, kind):
    """The cases of `kind` as the child receives them."""
    return task_cases([c for c in cases if c.kind == kind])


def _as_when_pinned(exercise: dict) -> dict:
    """The exercise's table as it was when its digest was taken: ClampFn's `cover` came later (a
    change to the table is a new version, with cases of its own)."""
    for inp in exercise["spec"].get("code", {}).get("inputs", []):
        inp.pop("cover", None)
    return exercise


def test_without_a_variant_the_task_is_byte_for_byte_the_shared_one(judge):
    for slug, digest in SHARED_TASK_PREFIX.items():
        exercise = _as_when_pinned(load_exercise(slug))
        assert hashlib.sha256(prepared(judge, exercise).task_prefix).hexdigest() == digest, slug


def test_two_learners_get_different_hidden_inputs_and_grad_outputs(judge, clamp_exercise):
    ada, bob, shared = (prepared(judge, clamp_exercise, v) for v in (ADA, BOB, None))
    ada_random, bob_random, shared_random = (_wire(p.cases, "random") for p in (ada, bob, shared))
    assert len(ada_random) == len(bob_random) == 3
    for a, b, s in zip(ada_random, bob_random, shared_random):
        x_a, x_b, x_s = a["args"][0]["values"], b["args"][0]["values"], s["args"][0]["values"]
        assert x_a != x_b and x_a != x_s and x_b != x_s
        assert a["args"][1:] == b["args"][1:]  # fixed inputs (the bounds) are the exercise's, for everyone
        assert a["vjps"] and a["vjps"] != b["vjps"]
    # What the exercise fixes is the same for everyone: its boundary points (grad_output ones).
    assert _wire(ada.cases, "boundary") == _wire(bob.cases, "boundary") == _wire(shared.cases, "boundary")
    assert ada.task_prefix != bob.task_prefix


def test_the_same_learner_always_gets_the_same_cases(judge, clamp_exercise):
    code, _ = load_code_spec(clamp_exercise["spec"])
    again = base_cases(code, SECRET, "clamp-function", ADA)
    assert [c.args for c in again] == [c.args for c in prepared(judge, clamp_exercise, ADA).cases]
    # Another judge with the same secret (another worker, a regrade later) plans the same.
    cache = ReferenceCache(judge._pool, SECRET)
    with judge._pool.slot() as slot:
        elsewhere = cache.get(clamp_exercise, slot, ADA)[0].task_prefix
    assert elsewhere == prepared(judge, clamp_exercise, ADA).task_prefix
    # Without the secret, nobody can: another secret draws other inputs.
    other = base_cases(code, b"another-secret-0123456789abcdef", "clamp-function", ADA)
    assert [c.args for c in other] != [c.args for c in again]


def test_grades_in_a_variant_judge_as_before(judge, clamp_exercise):
    reference = clamp_exercise["files"]["reference.py"]
    wrong = clamp_exercise["files"]["wrong/forgot_grad_output.py"]
    for variant in (ADA, BOB, variant_key(2, "ada")):
        assert judge.grade(clamp_exercise, reference, variant=variant)["score"] == 1.0
        result = judge.grade(clamp_exercise, wrong, variant=variant)
        assert result["status"] == "failed" and "forgot_grad_output" in result["likely_causes"]


def test_a_learners_first_grade_prepares_their_variant_once(judge, clamp_exercise):
    reference = clamp_exercise["files"]["reference.py"]
    kept = judge.info()["references"]["kept"]
    first = judge.grade(clamp_exercise, reference, variant=variant_key(9, "first-timer"))
    assert first["timings"]["reference_ms"] > 0  # the reference ran on the learner's inputs
    again = judge.grade(clamp_exercise, reference, variant=variant_key(9, "first-timer"))
    assert "reference_ms" not in again["timings"]
    assert judge.info()["references"]["kept"] == kept + 1
    assert judge.info()["references"]["bytes"] > 0


def test_the_reference_cache_is_bounded_by_count_and_by_bytes(judge, clamp_exercise):
    by_count = ReferenceCache(judge._pool, SECRET, size=2)
    with judge._pool.slot() as slot:
        for k in range(4):
            by_count.get(clamp_exercise, slot, f"1:learner-{k}")
        assert len(by_count) == 2
        # The least recently used went: learner-3 is kept, learner-0 must be built again.
        assert by_count.get(clamp_exercise, slot, "1:learner-3")[1] is False
        assert by_count.get(clamp_exercise, slot, "1:learner-0")[1] is True
        one = by_count.get(clamp_exercise, slot, "1:learner-0")[0].footprint
        assert 16 * 1024 < one < 1024 * 1024
        by_bytes = ReferenceCache(judge._pool, SECRET, max_bytes=int(2.5 * one))
        for k in range(5):
            by_bytes.get(clamp_exercise, slot, f"1:learner-{k}")
        assert len(by_bytes) == 2 and by_bytes.footprint <= 2.5 * one
        # The newest stays even when it alone is over the budget.
        tiny = ReferenceCache(judge._pool, SECRET, max_bytes=1)
        tiny.get(clamp_exercise, slot, "1:learner-0")
        assert len(tiny) == 1
