"""The registry of checks (service/grading/registry.py): one entry per check, consistent with the
words, the plan and the `[code]` format. No judge, no torch."""

from __future__ import annotations

import dataclasses

import pytest

from service.grading import registry, terms
from service.grading.cases import Case
from service.grading.checks import Outcome
from service.grading.spec import load_code_spec

CODE = {"entry_point": "SquareFn", "inputs": [{"name": "x", "type": "tensor", "shape": [3], "requires_grad": True}]}


def test_every_check_has_its_words_and_every_term_a_check():
    assert list(registry.BY_NAME) == [c.name for c in registry.CHECKS]
    assert set(registry.BY_NAME) == set(terms.CHECKS)
    for check in registry.CHECKS:
        assert check.term.name == check.name


def test_grade_checks_have_weights_and_run_only_checks_none():
    for check in registry.CHECKS:
        assert (check.grade is None) == (check.weight is None), check.name
        assert check.grade is not None or check.run is not None, check.name


def test_what_a_check_reads_is_a_field_of_a_planned_case():
    case_fields = {f.name for f in dataclasses.fields(Case)}
    for check in registry.CHECKS:
        assert set(check.reports) <= case_fields, check.name


def test_an_exercise_grades_the_checks_that_apply_in_report_order():
    code, problems = load_code_spec({"code": CODE})
    assert code is not None and not problems
    # no boundary points, no double backward, no technique asked: those checks do not apply
    assert list(code.checks) == ["parses", "entry_point", "forward", "output_shape_dtype", "inputs_unchanged",
                                 "backward_arity", "gradcheck", "gradient", "grad_output_unchanged"]
    assert sum(code.checks.values()) == pytest.approx(1.0)
    both, _ = load_code_spec({"code": {**CODE, "gradgradcheck": True, "weights": {"forward": 0.0}}})
    assert both is not None and "gradgradcheck" in both.checks and both.checks["forward"] == 0.0


def test_a_result_is_one_shape_for_grades_and_runs():
    failed = Outcome(False, "backward forgets grad_output", "forgot_grad_output", other_causes=("wrong_sign",),
                     torch_message="Jacobian mismatch")
    graded = registry.CheckResult("gradcheck", failed, weight=0.25).to_json()
    assert graded == {"name": "gradcheck", "weight": 0.25, "passed": False, "message": "backward forgets grad_output",
                      "likely_cause": "forgot_grad_output", "other_causes": ["wrong_sign"], "torch_message": "Jacobian mismatch"}
    (ran,) = registry.run_results({"gradcheck": Outcome(True, "ok", "ignored when passed")})
    assert ran.to_json() == {"name": "gradcheck", "passed": True, "message": "ok",
                             "description": terms.CHECKS["gradcheck"].description}


def test_a_grade_summary_scores_passed_weights_and_names_causes_once():
    code, _ = load_code_spec({"code": CODE})
    assert code is not None
    outcomes = {name: Outcome(True, "fine") for name in code.checks}
    outcomes["gradient"] = Outcome(False, "wrong", "forgot_grad_output")
    summary = registry.grade_summary(code, outcomes, [{"likely_cause": "forgot_grad_output"}, {"likely_cause": "wrong_sign"}], "")
    assert summary.score == pytest.approx(1.0 - code.checks["gradient"])
    assert summary.likely_causes == ("forgot_grad_output", "wrong_sign")
    partial = registry.grade_summary(code, {"parses": Outcome(True, "The code parses.")}, [], "the code did not load")
    assert partial.score == 0.0
    assert partial.checks[2].to_json()["message"] == "Not run: the code did not load"


def test_the_words_that_list_the_gate_and_the_gradient_checks_name_the_registrys():
    from service.config import PROJECT_ROOT
    from service.rules import RULES

    help_text = next(rule.help for rule in RULES if rule.name == "scoring")
    rules_doc = (PROJECT_ROOT / "docs" / "rules.md").read_text()
    gate_row = next(line for line in rules_doc.splitlines() if line.startswith("| `gate`"))
    grading_doc = (PROJECT_ROOT / "docs" / "grading.md").read_text()
    gradient_line = next(line for line in grading_doc.splitlines() if "registry.GRADIENT_CHECKS" in line)
    for name in registry.BACKWARD_CHECKS:
        assert name in help_text and f"`{name}`" in gate_row, name
    for name in registry.GRADIENT_CHECKS:
        assert f"`{name}`" in gradient_line, name


def test_every_option_has_its_request_field_column_and_code_key():
    """An option is one entry's `option`; the places that carry it are held to the registry here."""
    from service.grading.code_table import CodeSpec
    from service.models import Run
    from service.schemas.runs import RunCreateSchema, RunSchema

    for name in registry.RUN_OPTIONS:
        assert name in RunCreateSchema().fields and name in RunSchema().fields, name
        assert name in Run.__table__.columns, name
    code_keys = {f.name for f in dataclasses.fields(CodeSpec)}
    assert set(registry.OPTIONS) <= code_keys
    code, _ = load_code_spec({"code": {**CODE, **{name: True for name in registry.OPTIONS}}})
    assert code is not None and code.options == frozenset(registry.OPTIONS)
