"""The proof of an exercise (service/catalog/proof.py): what it refuses, and the one field it names."""

from __future__ import annotations

import tomllib

import pytest

from service.catalog.proof import ProofReport, prove, prove_files
from tests.grading.support import SIN_FORGOT_GRAD_OUTPUT, SIN_REFERENCE, SIN_STARTER, SIN_TOML, sin_exercise

WRONG = "wrong/forgot_grad_output.py"


def problems_of(report: ProofReport) -> list[tuple[str, str, int | None]]:
    return [(p.file, p.field, p.line) for p in report.problems]


def test_a_sound_exercise_passes_every_step(judge):
    exercise, report = prove_files(judge, "sin-function", sin_exercise())
    assert exercise is not None and report.passed, report.problems
    subjects = [step.subject for step in report.steps]
    assert subjects == ["reference.py (shared cases)", "reference.py (learner variant 1)",
                        "reference.py (learner variant 2)", WRONG, "starter.py"]
    assert all(step.passed for step in report.steps)
    assert ProofReport.from_json(report.to_json()).steps == report.steps


def test_a_reference_whose_backward_is_wrong_is_refused_naming_gradcheck(judge):
    wrong_sign = SIN_REFERENCE.replace("return grad_output * torch.cos(x)", "return -grad_output * torch.cos(x)")
    _, report = prove_files(judge, "sin-function", sin_exercise({"reference.py": wrong_sign}))
    assert not report.passed
    fields = {p.field for p in report.problems}
    assert "check gradcheck" in fields and {p.file for p in report.problems} == {"reference.py"}
    gradcheck = next(p for p in report.problems if p.field == "check gradcheck")
    assert "by backward" in gradcheck.message and "finite differences" in gradcheck.message
    assert str(gradcheck).startswith("reference.py: check gradcheck: ")
    # Nothing else ran on a broken reference: the wrong files and the starter would be judged by it.
    assert [s.subject for s in report.steps] == ["reference.py (shared cases)"]


def test_an_expected_gradient_the_reference_does_not_give_names_its_field_and_line(judge):
    toml = SIN_TOML.replace("expected_grad = { x = [1.0] }", "expected_grad = { x = [2.0] }")
    _, report = prove_files(judge, "sin-function", sin_exercise({"exercise.toml": toml}))
    line = toml.splitlines().index("expected_grad = { x = [2.0] }") + 1
    assert problems_of(report) == [("exercise.toml", "code.boundary[0].expected_grad.x", line)]


def test_a_wrong_file_declaring_the_wrong_cause_is_refused_naming_its_expect_line(judge):
    misnamed = "\n" + SIN_FORGOT_GRAD_OUTPUT.replace("# expect: forgot_grad_output", "# expect: wrong_sign")
    _, report = prove_files(judge, "sin-function", sin_exercise({WRONG: misnamed}))
    assert problems_of(report) == [(WRONG, "# expect", 2)]
    assert "'wrong_sign'" in report.problems[0].message and "forgot_grad_output" in report.problems[0].message


def test_a_wrong_file_declaring_checks_that_pass_is_refused_naming_its_fails_line(judge):
    overclaims = SIN_FORGOT_GRAD_OUTPUT.replace("# fails: gradcheck, gradient", "# fails: gradcheck, forward")
    _, report = prove_files(judge, "sin-function", sin_exercise({WRONG: overclaims}))
    assert problems_of(report) == [(WRONG, "# fails", 2)]
    assert "forward" in report.problems[0].message


def test_a_wrong_file_that_passes_is_refused(judge):
    not_wrong = "# expect: forgot_grad_output\n" + SIN_REFERENCE
    _, report = prove_files(judge, "sin-function", sin_exercise({WRONG: not_wrong}))
    assert problems_of(report) == [(WRONG, "(grade)", 1)]
    assert "passes every check" in report.problems[0].message


def test_a_starter_that_is_the_solution_is_refused(judge):
    _, report = prove_files(judge, "sin-function", sin_exercise({"starter.py": SIN_REFERENCE}))
    assert problems_of(report) == [("starter.py", "(grade)", None)]
    assert "gives the answer away" in report.problems[0].message


def test_a_starter_that_does_not_define_the_entry_point_is_refused(judge):
    # The format check sees a class missing from the file; a name bound otherwise only the sandbox sees.
    aliased = SIN_STARTER.replace("class SinFn(", "class Sine(") + "\nSinFn = 3\n"
    exercise = sin_exercise({"starter.py": aliased})
    _, report = prove_files(judge, "sin-function", exercise)
    assert [(p.file, p.field) for p in report.problems] == [("starter.py", "(file)")]


def test_a_starter_with_a_syntax_error_is_refused_with_its_line(judge):
    broken = SIN_STARTER.replace("    def backward(ctx, grad_output):", "    def backward(ctx, grad_output)")
    line = broken.splitlines().index("    def backward(ctx, grad_output)") + 1
    exercise, report = prove_files(judge, "sin-function", sin_exercise({"starter.py": broken}))
    assert exercise is None
    assert problems_of(report) == [("starter.py", "(file)", line)]
    assert report.problems[0].message.startswith("syntax error")
    assert [s.subject for s in report.steps] == ["format"]


def test_a_typo_in_an_input_is_one_problem_naming_the_field(judge):
    toml = SIN_TOML.replace("range = [-3.0, 3.0]", "range_ = [-3.0, 3.0]")
    exercise, report = prove_files(judge, "sin-function", sin_exercise({"exercise.toml": toml}))
    assert exercise is None
    line = toml.splitlines().index("range_ = [-3.0, 3.0]") + 1
    assert problems_of(report) == [("exercise.toml", "code.inputs[0].range_", line)]
    assert report.problems[0].message == "unknown field (did you mean range?)"


def test_the_issue_typo_in_the_clamp_exercise_is_one_problem(judge):
    from tests.grading.support import EXERCISES

    files = {p.relative_to(EXERCISES / "clamp-function").as_posix(): p.read_bytes()
             for p in (EXERCISES / "clamp-function").rglob("*") if p.is_file()}
    files["exercise.toml"] = files["exercise.toml"].replace(b"\nrange = [", b"\nrange_ = [", 1)
    _, report = prove_files(judge, "clamp-function", files)
    assert [(p.field, p.message) for p in report.problems] == [
        ("code.inputs[0].range_", "unknown field (did you mean range?)")]


# --- quizzes: proven without a sandbox --------------------------------------------------------

QUIZ_HEAD = '''title = "A question"
topics = ["backward"]
difficulty = 1
explanation = "It is the sum."
'''


def quiz_report(body: str) -> ProofReport:
    files = {"exercise.toml": (QUIZ_HEAD + body).encode()}
    exercise, report = prove_files(None, "a-question", files)
    assert exercise is not None, report.problems
    return report


def test_a_numeric_wrong_value_the_item_accepts_is_named_with_the_parameters_where_it_does():
    body = '''kind = "numeric"
prompt = "What is {a} + {b}?"

[params]
a = { min = 0, max = 3 }
b = { values = [1, 2] }

[answer]
value = "a + b"
tolerance = 0.5

[[answer.wrong]]
value = "a * b"
feedback = "That is the product."

[[answer.wrong]]
value = "a - b"
feedback = "That is the difference."
'''
    report = quiz_report(body)
    # a * b == a + b at a = 2, b = 2 (and within 0.5 nowhere earlier); a - b is never within 0.5 of a + b.
    line = len(QUIZ_HEAD.splitlines()) + body.splitlines().index('value = "a * b"') + 1
    assert [(p.field, p.line) for p in report.problems] == [("answer.wrong[0].value", line)]
    assert "a = 2, b = 2" in report.problems[0].message


def test_a_numeric_wrong_value_within_the_tolerance_without_parameters():
    report = quiz_report('''kind = "numeric"
prompt = "How much is half?"

[answer]
value = 0.5
relative_tolerance = 0.1

[[answer.wrong]]
value = 0.52
feedback = "Close, but no."
''')
    assert [p.field for p in report.problems] == ["answer.wrong[0].value"]


def test_short_answer_contradictions_are_each_named():
    body = '''kind = "short_answer"
prompt = "Which method saves tensors for backward?"

[answer]
accepted = ["save_for_backward", "ctx.save_for_backward", "Save_For_Backward."]

[[answer.wrong]]
match = "saved_tensors"
feedback = "That reads them back."

[[answer.wrong]]
match = "`save_for_backward`"
feedback = "This is listed as wrong by mistake."
'''
    report = quiz_report(body)
    assert [p.field for p in report.problems] == ["answer.accepted[2]", "answer.wrong[1].match"]
    assert all(p.file == "exercise.toml" and p.line for p in report.problems)
    assert "answer.accepted[0]" in report.problems[0].message


def test_a_consistent_quiz_passes_without_a_judge():
    exercise = {"slug": "a-question", "spec": tomllib.loads(QUIZ_HEAD + '''
kind = "numeric"
prompt = "What is 1 + 1?"
[answer]
value = 2
''')}
    report = prove(None, {**exercise, "files": {}})
    assert report.passed and [s.subject for s in report.steps] == ["answers"]


def test_a_code_exercise_needs_a_judge():
    exercise, _ = prove_files(None, "x-y", {"exercise.toml": b"kind = 1"})
    assert exercise is None
    with pytest.raises(ValueError, match="sandbox"):
        prove(None, {"slug": "sin-function", "spec": {"kind": "code"}, "files": {}})


def test_a_reference_that_raises_is_refused_naming_the_step_and_line(judge):
    raising = SIN_REFERENCE.replace("        return grad_output * torch.cos(x)",
                                    "        raise RuntimeError('not written yet')")
    line = raising.splitlines().index("        raise RuntimeError('not written yet')") + 1
    _, report = prove_files(judge, "sin-function", sin_exercise({"reference.py": raising}))
    assert problems_of(report) == [("reference.py", "(backward)", line)]
    assert "not written yet" in report.problems[0].message


def test_a_reference_is_held_to_the_learners_time_limit(judge):
    """Author code is learner code to the sandbox: a reference that outruns the exercise's timeout is
    stopped there (it had 60 s before), and the proof says so."""
    import time

    toml = SIN_TOML.replace('entry_point = "SinFn"', 'entry_point = "SinFn"\ntimeout = 1.0')
    slow = SIN_REFERENCE.replace("        return torch.sin(x)", "        import time\n        time.sleep(20)\n"
                                                                 "        return torch.sin(x)")
    started = time.monotonic()
    _, report = prove_files(judge, "sin-function", sin_exercise({"exercise.toml": toml, "reference.py": slow}))
    assert time.monotonic() - started < 10
    assert [p.file for p in report.problems] == ["reference.py"]
    assert "timed out" in report.problems[0].message
