"""Every exercise of exercises/ passes the proof (the reference scores 1.0, each known mistake fails
with its named cause, ...); every code exercise's format and public view."""

from __future__ import annotations

import pytest

from service.grading.diagnosis import diagnose_grade
from service.grading.spec import public_code_view, validate_code_exercise, wrong_file_expectations
from service.grading.terms import code_names
from tests.grading.support import EXERCISES, code_exercise_slugs, load_exercise

SLUGS = code_exercise_slugs()
ALL_SLUGS = sorted(p.name for p in EXERCISES.iterdir() if (p / "exercise.toml").is_file())


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


@pytest.mark.parametrize("slug", ALL_SLUGS)
def test_every_exercise_passes_the_proof(catalog_proofs, slug):
    """The reference passes its own checks on the shared cases and two learner variants, each
    wrong/*.py fails with its declared cause and checks, the starter runs and does not pass; a
    quiz's answers are consistent (service/catalog/proof.py)."""
    exercise, report = catalog_proofs[slug]
    assert exercise is not None and report.passed, [str(p) for p in report.problems]
    if exercise.spec["kind"] == "code":
        wrong = sorted(p for p in exercise.files if p.startswith("wrong/"))
        proven = [s.subject for s in report.steps if s.passed]
        assert proven[:3] == ["reference.py (shared cases)", "reference.py (learner variant 1)",
                              "reference.py (learner variant 2)"]
        assert proven[3:] == [*wrong, "starter.py"]


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


#: Identifiers of the code that no learner-facing sentence may contain: check and cause names with
#: an underscore, standing alone ("grad_output" is the learner's own argument, and
#: ctx.needs_input_grad torch's, not the cause of that name).
CODE_NAMES = code_names()


@pytest.mark.parametrize("slug", SLUGS)
def test_every_wrong_file_gets_a_diagnosis(catalog_grades, slug):
    """Each known mistake's grade (from the proof's run) opens with a headline, names the cause its
    header declares, and shows one example, with no identifier of the code in any of it."""
    ex = load_exercise(slug)
    for path in sorted(p for p in ex["files"] if p.startswith("wrong/")):
        text = ex["files"][path]
        d = diagnose_grade(catalog_grades[(slug, text)])
        assert d is not None and d["passed"] is False and d["headline"], path
        cause, _ = wrong_file_expectations(text)
        if cause is not None:
            assert d["cause"] and d["cause"]["name"] == cause, (path, d)
            assert d["example"], (path, d)
        words = " ".join([d["headline"], d["example"] or "", (d["cause"] or {}).get("title", ""),
                          (d["cause"] or {}).get("advice", "")])
        assert not CODE_NAMES.search(words), (path, words)
        assert " in parse" not in words and "Verdict:" not in words


def test_clampfn_forgetting_grad_output_is_told_in_its_terms(catalog_grades, clamp_exercise):
    text = clamp_exercise["files"]["wrong/forgot_grad_output.py"]
    d = diagnose_grade(catalog_grades[("clamp-function", text)])
    assert d["headline"] == "Not yet: your backward's gradients are wrong."
    assert d["cause"]["title"] == "backward ignores grad_output"
    assert d["example"] == "Your backward sends gradient from output[0] to x[1], but output[0] does not depend on x[1]."
    assert d["failed_checks"] == ["gradcheck", "gradient"]
