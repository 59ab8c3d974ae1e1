"""Quiz grading: pure functions, no app."""

import pytest

from service.quiz import QUIZ_KINDS, AnswerError, grade_quiz, normalise_text

SINGLE = {
    "choices": [
        {"id": "none", "text": "None", "correct": True, "feedback": "right"},
        {"id": "zero", "text": "0", "correct": False, "feedback": "zero is a gradient value"},
        {"id": "omit", "text": "omit", "correct": False, "feedback": "one slot per input"},
    ]
}
MULTI = {
    "choices": [
        {"id": "a", "text": "A", "correct": True, "feedback": "fa"},
        {"id": "b", "text": "B", "correct": True, "feedback": "fb"},
        {"id": "c", "text": "C", "correct": False, "feedback": "fc"},
        {"id": "d", "text": "D", "correct": False, "feedback": "fd"},
    ]
}
SHORT = {"answer": {"accepted": ["None", "none returned"], "wrong": [{"match": "0", "feedback": "zero is a value"}]}}
NUMERIC = {"answer": {"value": [0.0, 1.0, 1.0, 0.0], "tolerance": 1e-6,
                      "wrong": [{"value": [1.0, 1.0, 1.0, 1.0], "feedback": "forgot the mask"}]}}


def test_single_choice_scores_and_names_the_misconception():
    wrong = grade_quiz("single_choice", SINGLE, "zero")
    assert (wrong.score, wrong.correct) == (0.0, False)
    picked = [f for f in wrong.feedback if f["selected"]]
    assert picked == [{"choice": "zero", "selected": True, "correct": False, "feedback": "zero is a gradient value"}]
    assert any(f["choice"] == "none" and f["correct"] and not f["selected"] for f in wrong.feedback)
    right = grade_quiz("single_choice", SINGLE, "none")
    assert (right.score, right.correct) == (1.0, True)


@pytest.mark.parametrize(
    ("answer", "score", "correct"),
    [(["a", "b"], 1.0, True), (["b", "a"], 1.0, True), (["a"], 0.5, False), (["a", "c"], 0.0, False),
     (["a", "b", "c"], 0.5, False), ([], 0.0, False), (["c", "d"], 0.0, False)],
)
def test_multiple_choice_partial_credit(answer, score, correct):
    grade = grade_quiz("multiple_choice", MULTI, answer)
    assert grade.score == pytest.approx(score)
    assert grade.correct is correct


@pytest.mark.parametrize("answer", ["None", "none", " `None`. ", "NONE", "none   returned", "“None”"])
def test_short_answer_normalises(answer):
    assert grade_quiz("short_answer", SHORT, answer).correct


def test_short_answer_wrong_answer_feedback():
    grade = grade_quiz("short_answer", SHORT, " 0 ")
    assert grade.score == 0.0
    assert grade.feedback == [{"answer": " 0 ", "feedback": "zero is a value"}]
    assert grade_quiz("short_answer", SHORT, "nil").feedback == []


def test_short_answer_case_sensitive():
    spec = {"answer": {"accepted": ["None"], "case_sensitive": True}}
    assert grade_quiz("short_answer", spec, "None").correct
    assert not grade_quiz("short_answer", spec, "none").correct


def test_normalise_text():
    assert normalise_text("  Hello\t World.  ") == "hello world"
    assert normalise_text("ｎｏｎｅ") == "none"  # NFKC folds full-width letters


def test_numeric_vector_with_tolerance_and_wrong_feedback():
    assert grade_quiz("numeric", NUMERIC, [0.0, 1.0, 1.0 + 1e-7, 0]).correct
    miss = grade_quiz("numeric", NUMERIC, [1, 1, 1, 1])
    assert not miss.correct and miss.feedback[0]["feedback"] == "forgot the mask"
    assert grade_quiz("numeric", NUMERIC, [0, 1, 1, 0.5]).feedback == []


def test_numeric_relative_tolerance():
    spec = {"answer": {"value": 1000.0, "tolerance": 0.0, "relative_tolerance": 1e-3}}
    assert grade_quiz("numeric", spec, 1000.9).correct
    assert not grade_quiz("numeric", spec, 1001.1).correct


@pytest.mark.parametrize(
    ("kind", "spec", "answer", "message"),
    [
        ("single_choice", SINGLE, ["none"], "one choice id"),
        ("single_choice", SINGLE, "maybe", "not one of"),
        ("multiple_choice", MULTI, "a", "list of choice ids"),
        ("multiple_choice", MULTI, ["a", "a"], "more than once"),
        ("multiple_choice", MULTI, ["a", "z"], "not choices"),
        ("short_answer", SHORT, 3, "a string"),
        ("short_answer", SHORT, "   ", "empty"),
        ("short_answer", SHORT, "x" * 1001, "longer than"),
        ("numeric", NUMERIC, 1.0, "list of 4"),
        ("numeric", NUMERIC, [1, 2], "expected 4"),
        ("numeric", NUMERIC, [1, 2, "3", 4], "list of 4"),
        ("numeric", {"answer": {"value": 8.0}}, True, "one finite number"),
        ("numeric", {"answer": {"value": 8.0}}, [8.0], "one finite number"),
    ],
)
def test_answer_of_the_wrong_shape_is_refused(kind, spec, answer, message):
    with pytest.raises(AnswerError, match=message):
        grade_quiz(kind, spec, answer)


def test_nan_and_infinity_are_refused():
    with pytest.raises(AnswerError):
        grade_quiz("numeric", {"answer": {"value": 8.0}}, float("nan"))
    with pytest.raises(AnswerError):
        grade_quiz("numeric", {"answer": {"value": 8.0}}, float("inf"))


@pytest.mark.parametrize(
    ("kind", "spec", "field"),
    [
        ("single_choice", {"choices": SINGLE["choices"][:1]}, "choices"),
        ("single_choice", {"choices": [{**c, "correct": True} for c in SINGLE["choices"]]}, "choices"),
        ("multiple_choice", {"choices": [{**c, "correct": False} for c in MULTI["choices"]]}, "choices"),
        ("single_choice", {"choices": [SINGLE["choices"][0], {**SINGLE["choices"][1], "id": "none"}]}, "choices[1].id"),
        ("single_choice", {"choices": [SINGLE["choices"][0], {**SINGLE["choices"][1], "feedback": ""}]}, "choices[1].feedback"),
        ("single_choice", {"choices": [SINGLE["choices"][0], {**SINGLE["choices"][1], "colour": "red"}]}, "choices[1]"),
        ("short_answer", {"answer": {"accepted": []}}, "answer.accepted"),
        ("short_answer", {"answer": {"accepted": ["x"], "wrong": [{"match": "y"}]}}, "answer.wrong[0].feedback"),
        ("numeric", {"answer": {"value": "8"}}, "answer.value"),
        ("numeric", {"answer": {"value": 8.0, "tolerance": -1}}, "answer.tolerance"),
        ("numeric", {"answer": {"value": [1.0, 2.0], "wrong": [{"value": [1.0], "feedback": "f"}]}}, "answer.wrong[0].value"),
        ("numeric", {}, "answer"),
    ],
)
def test_invalid_specs_name_the_field(kind, spec, field):
    problems = QUIZ_KINDS[kind].validate_spec(spec)
    assert field in [f for f, _ in problems], problems


def test_public_view_hides_correctness_and_feedback():
    view = QUIZ_KINDS["single_choice"].public_view(SINGLE)
    assert view == {"choices": [{"id": c["id"], "text": c["text"]} for c in SINGLE["choices"]]}
    assert QUIZ_KINDS["numeric"].public_view(NUMERIC) == {"answer_length": 4}
    assert QUIZ_KINDS["short_answer"].public_view(SHORT) == {}
