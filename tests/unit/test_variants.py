"""A variant per learner, without a database or a sandbox: the expression evaluator, [params] and
`shuffle` validation, the draws (service/variants.py) and grading in a variant (service/quiz.py)."""

from __future__ import annotations

import copy
import math

import pytest

from service.catalog.loader import read_exercise
from service.expressions import ExpressionError, parse_expression
from service.quiz import QUIZ_KINDS, AnswerError, QuizVariant, grade_quiz, render_params
from service.variants import (
    choice_order,
    draw_params,
    quiz_variant,
    regrade_quiz_answer,
    variant_key,
    varies_per_learner,
)

SECRET = "unit-test-secret-key-0123456789abcdef"
DIGEST = "0" * 64
LEARNERS = [variant_key(1, f"learner-{k}") for k in range(40)]

SQUARE = {
    "kind": "numeric",
    "prompt": "SquareFn's gradient at x = {x}, with grad_output = {g}?",
    "params": {"x": {"min": 1, "max": 9}, "g": {"values": [0.5, 2.0, 3.0]}},
    "answer": {"value": "2 * x * g", "tolerance": 1e-9,
               "wrong": [{"value": "x ** 2 * g", "feedback": "That is the forward value at x = {x}, times {g}."}]},
}
CHOICES = {
    "kind": "multiple_choice",
    "choices": [{"id": f"c{k}", "text": f"choice {k}", "correct": k % 2 == 0, "feedback": f"about {k}"}
                for k in range(6)],
}


# --- the evaluator ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, values, expected", [
    ("2 * x", {"x": 3}, 6.0),
    ("-x ** 2 + (x - 1) / 4", {"x": 3}, -9.0 + 0.5),
    ("+x - -x", {"x": 2}, 4.0),
    ("exp(0) + log(e) + sqrt(16) + abs(-2)", {}, 1.0 + 1.0 + 4.0 + 2.0),
    ("sin(pi / 2) * cos(0) + tanh(0) + tan(0)", {}, 1.0),
    ("2 ** 0.5 * 2 ** 0.5", {}, 2.0),
    ("1e3 * x", {"x": 0.5}, 500.0),
])
def test_the_evaluator_computes_its_grammar(text, values, expected):
    assert math.isclose(parse_expression(text, list(values)).evaluate(values), expected, rel_tol=1e-12)


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",     # a call to anything but the math functions
    "x.real", "x[0]", "(x, x)", "[x]", "{x}", "{'a': x}",
    "lambda: 1", "x if x else 1", "x < 2", "x and 1", "not x", "x // 2", "x % 2", "x @ x", "x << 1", "~x",
    "'2'", "b'2'", "True", "None", "1j", "...",
    "y",                                   # a name that is no parameter
    "exp(x, 1)", "exp()", "exp(x=1)", "exp(*[x])", "math.exp(x)", "exp",
    "f'{x}'", "x := 2", "[i for i in x]", "x; 2", "import os", "",
    "9" * 300,                             # longer than MAX_LENGTH
    "(" * 150 + "x" + ")" * 150,
])
def test_the_evaluator_refuses_anything_outside_its_grammar(text):
    with pytest.raises(ExpressionError):
        parse_expression(text, ["x"])


@pytest.mark.parametrize("text, x", [
    ("1 / (x - 2)", 2), ("log(x - 2)", 2), ("sqrt(-x)", 2), ("(-x) ** 0.5", 2), ("10.0 ** 400", 1),
    ("exp(1000)", 1), ("x * 1e308 * 10", 2),
])
def test_a_value_that_is_not_a_finite_real_number_is_an_error(text, x):
    expression = parse_expression(text, ["x"])
    with pytest.raises(ExpressionError):
        expression.evaluate({"x": x})


def test_the_evaluator_never_calls_eval(monkeypatch):
    import builtins

    def refuse(*_args, **_kwargs):
        raise AssertionError("eval or exec called")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)  # (ast.parse compiles to a tree only, never to code)
    assert parse_expression("2 * x + exp(0)", ["x"]).evaluate({"x": 1}) == 3.0


# --- validation ------------------------------------------------------------------------------------


def _fields(spec: dict) -> dict[str, str]:
    return dict(QUIZ_KINDS[spec["kind"]].validate_spec(spec))


def test_a_numeric_item_with_parameters_is_valid():
    assert _fields(SQUARE) == {}


@pytest.mark.parametrize("change, field, words", [
    (lambda s: s["answer"].update(value="2 * y"), "answer.value", "unknown name 'y'"),
    (lambda s: s["answer"].update(value="__import__('os')"), "answer.value", "functions"),
    (lambda s: s["answer"].update(value="2 * x"), "params.g", "does not use it"),
    (lambda s: s.update(prompt="The gradient at x = {x}?"), "params.g", "not in the prompt"),
    (lambda s: s["answer"].update(value="g / (x - 4)"), "answer.value", "x = 4"),
    (lambda s: s["answer"]["wrong"][0].update(value="log(9 - x) * g"), "answer.wrong[0].value", "x = 9"),
    (lambda s: s["params"].update(x={"min": 5, "max": 1}), "params.x", "min must not exceed max"),
    (lambda s: s["params"].update(x={"min": 1.5, "max": 3}), "params.x", "integers"),
    (lambda s: s["params"].update(x={"min": 1, "max": 3, "step": 1}), "params.x", "unknown keys"),
    (lambda s: s["params"].update(x={"min": 1, "max": 3, "values": [1]}), "params.x", "not both"),
    (lambda s: s["params"].update(g={"values": []}), "params.g.values", "non-empty"),
    (lambda s: s["params"].update(g={"values": [1, 1]}), "params.g.values", "distinct"),
    (lambda s: s["params"].update(g={"values": ["2"]}), "params.g.values", "finite numbers"),
    (lambda s: s["params"].update(x={"min": 0, "max": 999}, g={"values": list(range(1, 101))}), "params",
     "combinations"),
    (lambda s: s["params"].update(exp={"min": 1, "max": 2}), "params.exp", "not one of"),
    (lambda s: s.update(params=[1, 2]), "params", "must be a table"),
    (lambda s: s["answer"].update(value=["2 * x * g", 3, True]), "answer.value[2]", "finite number"),
])
def test_parameter_problems_name_the_field(change, field, words):
    spec = copy.deepcopy(SQUARE)
    change(spec)
    problems = _fields(spec)
    assert field in problems and words in problems[field], problems


def test_an_expression_needs_a_params_table_so_a_quoted_number_is_still_an_error():
    problems = _fields({"kind": "numeric", "prompt": "?", "answer": {"value": "2 * 4"}})
    assert "answer.value" in problems and "[params]" in problems["answer.value"]


@pytest.mark.parametrize("value, ok", [(True, True), (False, True), ("no", False), (0, False)])
def test_shuffle_is_true_or_false(value, ok):
    assert ("shuffle" in _fields({**CHOICES, "shuffle": value})) is not ok


def test_the_catalog_takes_params_and_shuffle_only_where_they_belong(tmp_path):
    common = ('title = "T"\nprompt = "At x = {x}?"\ntopics = ["backward"]\ndifficulty = 1\n'
              'explanation = "E"\n')
    folder = tmp_path / "with-params"
    folder.mkdir()
    (folder / "exercise.toml").write_text(common + 'kind = "numeric"\n[params]\nx = { min = 1, max = 3 }\n'
                                          '[answer]\nvalue = "2 * x"\n')
    exercise, problems = read_exercise(folder)
    assert problems == [] and exercise is not None and exercise.spec["params"] == {"x": {"min": 1, "max": 3}}
    (folder / "exercise.toml").write_text(common + 'kind = "short_answer"\nshuffle = false\n'
                                          '[params]\nx = { min = 1, max = 3 }\n[answer]\naccepted = ["a"]\n')
    exercise, problems = read_exercise(folder)
    assert exercise is None and any("params" in p.message and "shuffle" in p.message for p in problems), problems


# --- draws -----------------------------------------------------------------------------------------


def test_choice_orders_are_stable_per_learner_and_differ_between_learners():
    orders = {learner: choice_order(SECRET, learner, "quiz", CHOICES) for learner in LEARNERS}
    assert all(sorted(order) == sorted(c["id"] for c in CHOICES["choices"]) for order in orders.values())
    assert orders[LEARNERS[0]] == choice_order(SECRET, LEARNERS[0], "quiz", copy.deepcopy(CHOICES))
    assert len(set(orders.values())) > 10  # 6! = 720 orders, 40 learners
    # The secret decides: another server key, other orders.
    assert [choice_order("another-secret-key-0123456789abcdef", v, "quiz", CHOICES) for v in LEARNERS] != list(
        orders.values())
    # The same learner id at another client is another learner.
    assert choice_order(SECRET, variant_key(2, "learner-0"), "quiz", CHOICES) != orders[LEARNERS[0]] or \
        choice_order(SECRET, variant_key(2, "learner-1"), "quiz", CHOICES) != orders[LEARNERS[1]]


def test_shuffle_false_keeps_the_written_order_for_everyone():
    spec = {**CHOICES, "shuffle": False}
    assert not varies_per_learner(spec)
    assert {choice_order(SECRET, learner, "quiz", spec) for learner in LEARNERS} == {None}
    assert quiz_variant(SECRET, LEARNERS[0], "quiz", DIGEST, spec) is None


def test_params_are_drawn_from_their_domain_per_learner_and_version():
    drawn = [draw_params(SECRET, learner, "square", DIGEST, SQUARE) for learner in LEARNERS]
    assert all(1 <= p["x"] <= 9 and isinstance(p["x"], int) and p["g"] in (0.5, 2.0, 3.0) for p in drawn)
    assert len({(p["x"], p["g"]) for p in drawn}) > 10
    assert drawn[0] == draw_params(SECRET, LEARNERS[0], "square", DIGEST, SQUARE)
    other_version = [draw_params(SECRET, learner, "square", "1" * 64, SQUARE) for learner in LEARNERS]
    assert other_version != drawn


def test_feedback_follows_the_learners_order():
    learner = LEARNERS[3]
    variant = quiz_variant(SECRET, learner, "quiz", DIGEST, CHOICES)
    assert variant is not None and variant.order is not None
    grade = grade_quiz("multiple_choice", CHOICES, ["c0", "c1", "c3"], variant)
    shown = [f["choice"] for f in grade.feedback]
    assert shown == [c for c in variant.order if c in {"c0", "c1", "c2", "c3", "c4"}]
    assert grade.as_result()["order"] == list(variant.order)
    # Grading is by choice id: the order changes nothing of the score.
    assert grade.score == grade_quiz("multiple_choice", CHOICES, ["c0", "c1", "c3"]).score


def _two_learners_with_different_answers() -> tuple[tuple[str, dict], tuple[str, dict]]:
    seen: dict[float, tuple[str, dict]] = {}
    for learner in LEARNERS:
        params = draw_params(SECRET, learner, "square", DIGEST, SQUARE)
        assert params is not None
        seen.setdefault(2 * params["x"] * params["g"], (learner, params))
    first, second = list(seen.values())[:2]
    return first, second


def test_the_answer_for_the_learners_own_values_is_right_and_anothers_is_wrong():
    (ada, ada_params), (bob, bob_params) = _two_learners_with_different_answers()
    ada_variant = quiz_variant(SECRET, ada, "square", DIGEST, SQUARE)
    assert ada_variant is not None and ada_variant.params == ada_params
    ada_answer = 2 * ada_params["x"] * ada_params["g"]
    bob_answer = 2 * bob_params["x"] * bob_params["g"]
    right = grade_quiz("numeric", SQUARE, ada_answer, ada_variant)
    assert (right.score, right.correct) == (1.0, True)
    assert right.as_result() == {"feedback": right.feedback, "score": right.score, "params": ada_params}
    assert right.feedback[0]["params"] == ada_params and f"x = {ada_params['x']}" in right.feedback[0]["feedback"]
    wrong = grade_quiz("numeric", SQUARE, bob_answer, ada_variant)
    assert (wrong.score, wrong.correct) == (0.0, False)
    # A known mistake, computed for the learner's values, with its feedback written with them.
    forward = ada_params["x"] ** 2 * ada_params["g"]
    if not math.isclose(forward, ada_answer):
        mistake = grade_quiz("numeric", SQUARE, forward, ada_variant)
        assert mistake.feedback[-1]["feedback"] == render_params(SQUARE["answer"]["wrong"][0]["feedback"], ada_params)
        assert f"x = {ada_params['x']}" in mistake.feedback[-1]["feedback"]


def test_an_item_with_parameters_is_not_graded_without_them():
    with pytest.raises(AnswerError, match="values of x, g"):
        grade_quiz("numeric", SQUARE, 4.0)
    with pytest.raises(AnswerError, match="not this exercise's parameters"):
        grade_quiz("numeric", SQUARE, 4.0, QuizVariant(params={"x": 2}))


def test_a_regrade_uses_the_values_the_attempt_kept():
    (ada, ada_params), _ = _two_learners_with_different_answers()
    first = grade_quiz("numeric", SQUARE, 2 * ada_params["x"] * ada_params["g"],
                       quiz_variant(SECRET, ada, "square", DIGEST, SQUARE))
    # A new version (its digest would draw other values): the attempt's own values still grade it.
    again = regrade_quiz_answer(SQUARE, 2 * ada_params["x"] * ada_params["g"], first.as_result())
    assert (again.correct, again.as_result()["params"]) == (True, ada_params)
    with pytest.raises(AnswerError):
        regrade_quiz_answer(SQUARE, 4.0, {"feedback": []})  # an attempt from before the item had parameters


def test_render_params_leaves_other_braces_alone():
    assert render_params("x = {x}, {y}, {} and {{x}}", {"x": 3}) == "x = 3, {y}, {} and {3}"
    assert render_params("g = {g}", {"g": 2.0}) == "g = 2"
    assert render_params("g = {g}", {"g": 0.5}) == "g = 0.5"
