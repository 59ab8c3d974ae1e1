"""Every code exercise: the reference scores 1.0, each known mistake fails with its named cause."""

from __future__ import annotations

import pytest

from service.grading.spec import public_code_view, validate_code_exercise, wrong_file_expectations
from tests.grading.support import code_exercise_slugs, load_exercise

SLUGS = code_exercise_slugs()
WRONG = [(slug, path) for slug in SLUGS for path in sorted(load_exercise(slug)["files"]) if path.startswith("wrong/")]


def test_there_are_enough_code_exercises():
    assert {"double-function", "square-function", "clamp-function"} <= set(SLUGS)
    assert len(SLUGS) >= 11


@pytest.mark.parametrize("slug", SLUGS)
def test_exercise_validates(slug):
    ex = load_exercise(slug)
    assert validate_code_exercise(ex["spec"], ex["files"]) == []
    assert any(p.startswith("wrong/") for p in ex["files"])


@pytest.mark.parametrize("slug", SLUGS)
def test_public_view_hides_reference_and_hidden_values(slug):
    ex = load_exercise(slug)
    view = public_code_view(ex["spec"], ex["files"])
    text = repr(view)
    assert view["starter"] == ex["files"]["starter.py"]
    assert view["entry_point"] == ex["spec"]["code"]["entry_point"]
    assert ex["files"]["reference.py"] not in text
    assert not any(text_of in text for p, text_of in ex["files"].items() if p.startswith("wrong/"))
    assert set(view) == {"entry_point", "call", "starter", "inputs", "checks", "timeout"}
    for item in view["inputs"]:
        assert not {"value", "range", "avoid"} & set(item)


@pytest.mark.parametrize("slug", SLUGS)
def test_reference_scores_one(judge, slug):
    ex = load_exercise(slug)
    result = judge.grade(ex, ex["files"]["reference.py"])
    assert result["status"] == "passed", result["checks"]
    assert result["score"] == 1.0
    assert all(c["passed"] for c in result["checks"])
    assert result["diagnostics"] == [] and result["likely_causes"] == []


@pytest.mark.parametrize("slug,path", WRONG, ids=[f"{s}:{p}" for s, p in WRONG])
def test_wrong_version_fails_with_named_cause(judge, slug, path):
    ex = load_exercise(slug)
    cause, must_fail = wrong_file_expectations(ex["files"][path])
    result = judge.grade(ex, ex["files"][path])
    failed = {c["name"] for c in result["checks"] if not c["passed"]}
    assert result["status"] == "failed"
    assert result["score"] < 1.0
    assert cause in result["likely_causes"], (result["likely_causes"], result["checks"])
    assert set(must_fail) <= failed, (must_fail, result["checks"])


@pytest.mark.parametrize("slug", [s for s in SLUGS if load_exercise(s)["spec"]["code"].get("differentiable") is False])
def test_non_derivative_rules_fail_gradcheck_by_design(judge, slug):
    """The reason these exercises are graded against the reference rule, not gradcheck."""
    ex = load_exercise(slug)
    code = ex["spec"]["code"]
    inputs = [{k: v for k, v in inp.items() if k != "name"} for inp in code["inputs"]]
    run = judge.run(ex["files"]["reference.py"], code["entry_point"], inputs)
    assert run["status"] == "ok"
    assert run["gradcheck"]["passed"] is False


def test_clamp_reference_matches_the_lesson(judge, clamp_exercise):
    run = judge.run(clamp_exercise["files"]["reference.py"], "ClampFn",
                    [{"type": "tensor", "value": [-2.0, -0.5, 0.3, 2.0]}, {"type": "float", "value": -1.0},
                     {"type": "float", "value": 1.0}])
    assert run["forward"]["outputs"][0]["values"] == [-1.0, -0.5, 0.3, 1.0]
    assert run["gradients"] == {"input 0": [0.0, 1.0, 1.0, 0.0]}
