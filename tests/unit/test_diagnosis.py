"""The words of grading (service/grading/terms.py) and the diagnosis made from them
(service/grading/diagnosis.py), on handmade reports: no judge, no torch."""

from __future__ import annotations

import pathlib
import re

import pytest

from service.grading import registry, terms
from service.grading.diagnosis import diagnose_grade, diagnose_run
from service.grading.terms import LIKELY_CAUSES, code_names

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: A check's or a cause's name standing alone (not ctx.needs_input_grad, torch's own).
CODE_NAMES = code_names()


def test_every_check_cause_stage_and_status_has_its_words():
    assert set(registry.BY_NAME) == set(terms.CHECKS)
    assert set(LIKELY_CAUSES) == set(terms.CAUSES)
    # every `where` an error is given: the child's (harness.py) and the judge's (parse, entry point)
    source = (ROOT / "service/grading/harness.py").read_text()
    wheres = set(re.findall(r'_error\(exc, "([^"]+)"\)', source)) | set(re.findall(r'"phase"\] = "([^"]+)"', source))
    wheres |= {"parse", "entry point", "gradcheck", "gradgradcheck", "numerical", "analytical", "zero_grad_output",
               "undefined_grad_output"}
    assert wheres <= set(terms.STAGES), wheres - set(terms.STAGES)
    from service.models.attempt import VERDICTS

    assert set(VERDICTS) | {"ok", "error", "invalid_inputs"} <= set(terms.STATUSES)


def test_the_words_name_no_identifier_of_the_code():
    for term in terms.CHECKS.values():
        for text in (term.title, term.description, term.failed):
            assert not CODE_NAMES.search(text), text
    for cause in terms.CAUSES.values():
        assert not CODE_NAMES.search(cause.title + " " + cause.advice), cause
    for stage in terms.STAGES.values():
        assert not stage.words.startswith(("in parse", "in load")), stage


def test_a_learners_torch_words_are_no_code_name():
    """What a learner writes is theirs: no name of the code is one of these words (tests/browser/support.py's
    visible_identifiers passes needs_input_grad alone, torch's attribute and a cause's name)."""
    for word in ("grad_output", "grad_outputs", "setup_context", "mark_non_differentiable", "save_for_backward",
                 "saved_tensors", "mark_dirty", "set_materialize_grads", "sum_to_size", "ctx.needs_input_grad"):
        assert not CODE_NAMES.search(word), word


def test_terms_json_has_the_contract_shape():
    body = terms.terms_json()
    assert set(body) == {"checks", "causes", "stages", "statuses"}
    assert {"name": "gradcheck", "title": "Numerical gradient check",
            "description": terms.CHECKS["gradcheck"].description} in body["checks"]
    assert body["causes"][0] == {"name": "forgot_grad_output", "title": "backward ignores grad_output",
                                 "advice": "Multiply your local derivative by grad_output (the chain rule)."}
    assert {"name": "parse", "words": "while Python read your code"} in body["stages"]
    assert {"name": "syntax_error", "title": "Does not parse", "verdict": "Your code does not parse."} in body["statuses"]
    # Every status has a short title for a badge or a list, in words (no identifier, no sentence's full stop).
    for status in body["statuses"]:
        assert status["title"] and not status["title"].endswith("."), status
        assert not CODE_NAMES.search(status["title"] + " " + status["verdict"]), status
    assert LIKELY_CAUSES["forgot_grad_output"] == ("backward ignores grad_output: multiply your local derivative by "
                                                   "grad_output (the chain rule).")


def _jacobian_diag(**facts):
    return {"check": "gradcheck", "input": "x", "index": [1], "analytical": 1.0, "numerical": 0.0, "input_value": 0.77,
            "output": 0, "output_index": [0], "output_shape": [4], "input_shape": [4], "depends": False,
            "elementwise": True, "likely_cause": "forgot_grad_output", **facts}


def _grade(*checks, diagnostics=(), error=None, status="failed"):
    items = [{"name": "parses", "weight": 0.0, "passed": True, "message": "The code parses."}, *checks]
    causes = [c["likely_cause"] for c in checks if c.get("likely_cause")]
    return {"status": status, "score": 0.5, "checks": items, "diagnostics": list(diagnostics),
            "likely_causes": list(dict.fromkeys(causes)), "error": error}


def _failed(name, cause, message="m", **extra):
    return {"name": name, "weight": 0.2, "passed": False, "message": message, "likely_cause": cause, **extra}


def test_off_diagonal_entry_of_an_elementwise_function():
    d = diagnose_grade(_grade(_failed("gradcheck", "forgot_grad_output"), _failed("gradient", "forgot_grad_output"),
                              diagnostics=[_jacobian_diag()]))
    assert d == {
        "passed": False,
        "headline": "Not yet: your backward's gradients are wrong.",
        "cause": {"name": "forgot_grad_output", "title": "backward ignores grad_output",
                  "advice": "Multiply your local derivative by grad_output (the chain rule)."},
        "example": "Your backward sends gradient from output[0] to x[1], but output[0] does not depend on x[1].",
        "failed_checks": ["gradcheck", "gradient"],
    }


def test_diagonal_entry_of_an_elementwise_function():
    diag = _jacobian_diag(index=[2], output_index=[2], analytical=1.0, numerical=0.0, depends=False, likely_cause="wrong_value")
    run = {"status": "ok", "error": None, "passed": False, "likely_causes": ["wrong_value"],
           "checks": [_failed("gradcheck", "wrong_value", diagnostics=[diag])]}
    d = diagnose_run(run)
    assert d["example"] == "At x = 0.77 your backward gives 1; the derivative there is 0."
    assert d["cause"]["name"] == "wrong_value" and d["failed_checks"] == ["gradcheck"]


def test_an_entry_of_a_function_that_is_not_elementwise():
    diag = _jacobian_diag(elementwise=False, depends=True, numerical=0.5, output_shape=[], likely_cause="wrong_value")
    d = diagnose_grade(_grade(_failed("gradcheck", "wrong_value"), diagnostics=[diag]))
    assert d["example"] == "By finite differences, output changes with x[1] at rate 0.5 (where x = 0.77); your backward gives 1."


def test_random_grad_output():
    diag = {"check": "random_vjp", "input": "x", "index": [2], "analytical": 1.0, "numerical": 0.37, "input_value": 0.77,
            "input_shape": [4], "grad_output": "random", "elementwise": True, "grad_output_value": 0.37,
            "likely_cause": "forgot_grad_output"}
    run = {"status": "ok", "error": None, "passed": False, "likely_causes": ["forgot_grad_output"],
           "checks": [{"name": "gradcheck", "passed": True, "message": "ok"},
                      _failed("random_vjp", "forgot_grad_output", diagnostics=[diag])]}
    assert diagnose_run(run)["example"] == ("For grad_output 0.37 at x[2] (x = 0.77) your backward gives 1; the chain "
                                            "rule gives 0.37.")
    # a grade's comparison with the model answer, the grad_output unknown to the sentence
    grade_diag = {**diag, "check": "gradient", "expected": 0.37, "grad_output_value": None}
    d = diagnose_grade(_grade(_failed("gradient", "forgot_grad_output"), diagnostics=[grade_diag]))
    assert d["example"] == "For a random grad_output, at x[2] (x = 0.77) your backward gives 1; the chain rule gives 0.37."


def test_a_gradient_of_the_broadcast_shape():
    shapes = {"input": "b", "gradient": [3, 4], "expected": [4]}
    d = diagnose_grade(_grade(_failed("backward_arity", "not_reduced", shapes=shapes)))
    assert d["headline"] == "Not yet: your backward does not return the right values."
    assert d["cause"]["name"] == "not_reduced" and "sum" in d["cause"]["advice"]
    assert d["example"] == "Your backward returns a gradient of shape [3, 4] for b, but b has shape [4]."


def test_a_jvp_or_vmap_failure_is_told_in_its_checks_words_not_backwards():
    """forward_ad's diagnostics look like backward's (analytical against numerical): told as a jvp's;
    vmap's shapes look like a gradient's: its example is the check's own sentence."""
    jvp = "Along a random tangent at x[0] = 2.826, your jvp gives -0.485 for output[0]; finite differences of forward give 1.489."
    diag = {"check": "forward_ad", "input": "x", "index": [0], "analytical": -0.485, "numerical": 1.489,
            "input_value": 2.826, "grad_output": "random tangent 1", "tangent": "random 1",
            "likely_cause": "jvp_wrong_derivative"}
    d = diagnose_grade(_grade(_failed("forward_ad", "jvp_wrong_derivative", "m", diagnostics=[diag]), diagnostics=[diag]))
    assert d["example"] == jvp and "backward" not in d["example"]
    vmap = ("Under vmap with in_dims=(2,) and out_dims=-1, the output has shape [3, 5, 2]; called on one batch entry "
            "alone it has shape [2, 3], so with a batch of 5 it should have shape [2, 3, 5] (the batch at dimension 2).")
    shapes = {"output": "the output", "vmap": [3, 5, 2], "expected": [2, 3, 5]}
    d = diagnose_grade(_grade(_failed("vmap", "vmap_wrong_out_dims", vmap, shapes=shapes)))
    assert d["example"] == vmap and d["headline"] == "Not yet: your Function does not work under vmap."


def test_an_exception_is_told_with_its_stage_in_words():
    error = {"where": "backward", "type": "ZeroDivisionError", "message": "division by zero", "traceback": "", "line": 9}
    run = {"status": "error", "error": error, "forward": {"outputs": []}}
    d = diagnose_run(run)
    assert d["headline"] == "Not yet: your backward raised an exception."
    assert d["cause"]["name"] == "backward_error"
    assert d["example"] == "Your backward raised ZeroDivisionError: division by zero."
    grade = _grade(_failed("gradient", "backward_error", "backward raised ZeroDivisionError on 'random inputs 1': "
                                                         "division by zero"), error=error)
    assert diagnose_grade(grade)["example"] == "Your backward raised ZeroDivisionError: division by zero."
    zero = dict(error, where="zero_grad_output")
    assert diagnose_run({"status": "error", "error": zero})["example"] == (
        "Your backward raised ZeroDivisionError when called with a grad_output of zeros: division by zero.")
    load = dict(error, where="load", type="ImportError", message="No module named 'numpyy'")
    d = diagnose_run({"status": "error", "error": load})
    assert d["cause"]["name"] == "load_error"
    assert d["example"] == "Your file raised ImportError when it was loaded: No module named 'numpyy'."


def test_a_syntax_error_and_a_timeout():
    error = {"where": "parse", "type": "SyntaxError", "message": "invalid syntax (line 3, column 5)"}
    for d in (diagnose_run({"status": "syntax_error", "error": error}),
              diagnose_grade(_grade(status="syntax_error", error=error))):
        assert d["headline"] == "Your code does not parse." and d["cause"] is None
        assert d["example"] == "Your code raised SyntaxError while Python read it: invalid syntax (line 3, column 5)."
        assert "in parse" not in d["example"]
    timeout = _grade({"name": "forward", "passed": False, "weight": 0.2,
                      "message": "Not run: your code ran longer than the 10 s limit and was stopped"}, status="timeout")
    d = diagnose_grade(timeout)
    assert d["headline"] == "Your code ran too long and was stopped."
    assert d["example"] == "Your code ran longer than the 10 s limit and was stopped."
    run = diagnose_run({"status": "timeout", "error": None, "message": "your code ran longer than the 10 s limit"})
    assert run["example"] == "Your code ran longer than the 10 s limit."


def test_passed_and_nothing_to_diagnose():
    assert diagnose_grade({"status": "passed", "checks": [{"name": "forward", "passed": True}]}) == {
        "passed": True, "headline": "Every check passed.", "cause": None, "example": None, "failed_checks": []}
    assert diagnose_run({"status": "ok", "error": None, "passed": True, "checks": []})["headline"] == (
        "Every check passed on these inputs.")
    assert diagnose_run({"status": "ok", "error": None, "forward": None})["headline"] == "Your code ran."
    for nothing in (None, {}, [], {"status": 3}):
        assert diagnose_grade(nothing) is None and diagnose_run(nothing) is None


@pytest.mark.parametrize("counts", [True, False])
def test_the_cause_most_checks_name_wins(counts):
    """float indices of a max: one check names a dtype, two name the unmarked output."""
    dtype = _failed("output_shape_dtype", "wrong_dtype", "output 1 has dtype float64; expected int64.",
                    **({"other_causes": ["not_marked_non_differentiable"]} if counts else {}))
    technique = _failed("technique", "not_marked_non_differentiable", "The exercise asks for this, and your code does "
                                                                      "not do it: the output is marked.")
    d = diagnose_grade(_grade(dtype, technique))
    assert d["cause"]["name"] == ("not_marked_non_differentiable" if counts else "wrong_dtype")


def test_a_report_made_before_the_facts_were_given():
    """An attempt graded before the judge gave a Jacobian entry's facts still gets its sentence."""
    old = {"check": "gradcheck", "case": "random inputs 1", "input": "x", "index": [1], "analytical": 1.0,
           "input_value": 0.48, "grad_output": "basis vector e[0]", "atol": 1e-05, "rtol": 0.001,
           "likely_cause": "forgot_grad_output", "numerical": 0.0, "output": 0}
    d = diagnose_grade(_grade(_failed("gradcheck", "forgot_grad_output"), diagnostics=[old]))
    assert d["example"] == "Your backward sends gradient from output[0] to x[1], but output[0] does not depend on x[1]."


def test_a_jvp_is_said_in_forward_modes_words():
    diag = {"check": "forward_ad", "input": "x", "index": [4], "analytical": 4.644, "numerical": -6.97,
            "input_value": 1.536, "grad_output": "random tangent 1", "output": 0, "likely_cause": "jvp_ignores_tangent"}
    out = diagnose_run({"status": "ok", "passed": False, "error": None, "gradcheck": {"passed": True},
                        "checks": [_failed("forward_ad", "jvp_ignores_tangent", diagnostics=[diag])]})
    assert out["cause"]["name"] == "jvp_ignores_tangent"
    assert out["example"] == ("Along a random tangent at x[4] = 1.536, your jvp gives 4.644 for output[4]; finite "
                              "differences of forward give -6.97.")
    zero = diagnose_run({"status": "ok", "passed": False, "error": None, "gradcheck": {"passed": True},
                         "checks": [_failed("forward_ad", "jvp_ignores_tangent",
                                            diagnostics=[{**diag, "grad_output": "zero tangent", "analytical": 1.0}])]})
    assert zero["example"] == "With zero tangents your jvp gives 1 for output[4]; it must give 0."


def test_an_in_place_mistake_is_the_cause_though_more_checks_name_a_wrong_value():
    checks = [_failed("gradcheck", "wrong_value"), _failed("random_vjp", "wrong_value"),
              _failed("in_place", "overwritten_input")]
    out = diagnose_run({"status": "ok", "passed": False, "error": None, "gradcheck": {"passed": False}, "checks": checks})
    assert out["cause"]["name"] == "overwritten_input"
