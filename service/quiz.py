"""Grading of the quiz kinds: pure functions over an exercise's spec, no I/O.

Each kind is one class in `QUIZ_KINDS` (a registry, as CTFd does for challenge types) that knows
how to check its spec, what of it a learner may see, the shape an answer must have, and how to
grade one.

A learner may see their own variant of an exercise (a `QuizVariant`, drawn in service/variants.py):
the choices in an order of their own, and the values of a numeric item's `[params]`, from which
its answer is computed (service/expressions.py). Grading takes the variant; the grade's result
stores it, so the attempt's display and a regrade see what the learner saw.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .expressions import RESERVED, Expression, ExpressionError, parse_expression

Problem = tuple[str, str]  # (field path, message)

ID_PATTERN = re.compile(r"^[a-z0-9_-]{1,40}$")
MAX_TEXT_ANSWER = 1000
MAX_NUMERIC_LENGTH = 1000
# A numeric item's [params]: how many, how many values each may take, and how many combinations
# the catalog check evaluates the answer for (all of them).
PARAM_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,19}$")
MAX_PARAMS = 4
MAX_PARAM_VALUES = 1000
MAX_PARAM_COMBINATIONS = 10_000
MAX_PARAM_MAGNITUDE = 1e6
# A parameter's place in a prompt, a hint or a feedback text: {x}.
PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]{0,19})\}")

ParamValue = int | float


class AnswerError(ValueError):
    """The answer does not have the shape the exercise's kind expects."""


@dataclass(frozen=True)
class QuizVariant:
    """One learner's variant of a quiz exercise: the order its choices are shown in (None: as
    written) and the values of its [params] (None: it has none)."""

    order: tuple[str, ...] | None = None
    params: dict[str, ParamValue] | None = None

    def as_result(self) -> dict[str, Any]:
        """What an attempt's result keeps of it (nothing for an exercise that does not vary)."""
        kept: dict[str, Any] = {}
        if self.order is not None:
            kept["order"] = list(self.order)
        if self.params is not None:
            kept["params"] = dict(self.params)
        return kept

    @classmethod
    def from_result(cls, result: Mapping[str, Any] | None) -> QuizVariant | None:
        """The variant an attempt was graded in, as its result kept it (None: none kept)."""
        result = result or {}
        order, params = result.get("order"), result.get("params")
        kept_order = tuple(order) if isinstance(order, list) and all(isinstance(c, str) for c in order) else None
        kept_params = (dict(params) if isinstance(params, dict) and all(_is_number(v) for v in params.values())
                       else None)
        if kept_order is None and kept_params is None:
            return None
        return cls(kept_order, kept_params)


@dataclass(frozen=True)
class QuizGrade:
    score: float
    correct: bool
    feedback: list[dict[str, Any]] = field(default_factory=list)
    variant: QuizVariant | None = None

    def as_result(self) -> dict[str, Any]:
        # `score`: the answer's own score, before the scoring policy (service/scoring.py) makes the grader's.
        return {"feedback": self.feedback, "score": self.score, **(self.variant.as_result() if self.variant else {})}


def normalise_text(text: str, *, case_sensitive: bool = False) -> str:
    """The form short answers are compared in (see exercises/README.md)."""
    text = unicodedata.normalize("NFKC", text).strip()
    text = text.strip("`'\"“”‘’ ").rstrip(".").strip("`'\"“”‘’ ")
    text = re.sub(r"\s+", " ", text)
    return text if case_sensitive else text.casefold()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _answer_table(spec: Mapping[str, Any], allowed: set[str]) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The [answer] table of a short_answer or numeric spec, and its unknown keys."""
    answer = spec.get("answer")
    if not isinstance(answer, dict):
        return None, [("answer", "needs an [answer] table")]
    unknown = set(answer) - allowed
    return answer, [("answer", f"unknown keys: {', '.join(sorted(unknown))}")] if unknown else []


def _check_feedback_list(spec: Mapping[str, Any], problems: list[Problem]) -> None:
    wrong = spec.get("answer", {}).get("wrong", [])
    if not isinstance(wrong, list):
        problems.append(("answer.wrong", "must be a list of tables"))
        return
    for i, entry in enumerate(wrong):
        if not isinstance(entry, dict) or not isinstance(entry.get("feedback"), str) or not entry["feedback"].strip():
            problems.append((f"answer.wrong[{i}].feedback", "must be a non-empty string"))


class QuizKind:
    name: ClassVar[str]
    # Keys this kind adds to the common fields of exercise.toml.
    spec_keys: ClassVar[frozenset[str]]

    def validate_spec(self, spec: Mapping[str, Any]) -> list[Problem]:
        raise NotImplementedError

    def consistency_problems(self, spec: Mapping[str, Any]) -> list[Problem]:
        """Answers of a valid spec that contradict each other (the proof's part of a quiz,
        service/catalog/proof.py): each names the one field at fault."""
        return []

    def public_view(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """What a learner may see before answering: never which answer is correct."""
        return {}

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> Any:
        """Return the answer in canonical form, or raise AnswerError naming what is wrong."""
        raise NotImplementedError

    def grade(self, spec: Mapping[str, Any], answer: Any, variant: QuizVariant | None = None) -> QuizGrade:
        raise NotImplementedError


class ChoiceKind(QuizKind):
    spec_keys = frozenset({"choices", "shuffle"})
    # How many correct choices a valid spec may have.
    correct_count: ClassVar[tuple[int, int]]

    def validate_spec(self, spec: Mapping[str, Any]) -> list[Problem]:  # noqa: C901
        problems: list[Problem] = []
        if not isinstance(spec.get("shuffle", True), bool):
            problems.append(("shuffle", "must be true (the default: each learner sees the choices in an order of "
                                        "their own) or false"))
        choices = spec.get("choices")
        if not isinstance(choices, list) or len(choices) < 2:
            return problems + [("choices", "needs at least two [[choices]]")]
        seen: set[str] = set()
        for i, choice in enumerate(choices):
            where = f"choices[{i}]"
            if not isinstance(choice, dict):
                problems.append((where, "must be a table"))
                continue
            unknown = set(choice) - {"id", "text", "correct", "feedback"}
            if unknown:
                problems.append((where, f"unknown keys: {', '.join(sorted(unknown))}"))
            cid = choice.get("id")
            if not isinstance(cid, str) or not ID_PATTERN.match(cid):
                problems.append((f"{where}.id", "must match [a-z0-9_-]{1,40}"))
            elif cid in seen:
                problems.append((f"{where}.id", f"duplicate id {cid!r}"))
            else:
                seen.add(cid)
            for key in ("text", "feedback"):
                if not isinstance(choice.get(key), str) or not choice[key].strip():
                    problems.append((f"{where}.{key}", "must be a non-empty string"))
            if not isinstance(choice.get("correct"), bool):
                problems.append((f"{where}.correct", "must be true or false"))
        n_correct = sum(1 for c in choices if isinstance(c, dict) and c.get("correct") is True)
        low, high = self.correct_count
        if not low <= n_correct <= high:
            wanted = "exactly one" if low == high else f"at least {low}"
            problems.append(("choices", f"{self.name} needs {wanted} correct choice, found {n_correct}"))
        return problems

    def public_view(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        return {"choices": [{"id": c["id"], "text": c["text"]} for c in spec["choices"]]}

    def _choice_feedback(self, spec: Mapping[str, Any], selected: set[str],
                         variant: QuizVariant | None) -> list[dict[str, Any]]:
        # Feedback on every choice the learner picked, and on every correct one they missed, in
        # the order the learner saw the choices.
        return [
            {
                "choice": c["id"],
                "selected": c["id"] in selected,
                "correct": c["correct"],
                "feedback": c["feedback"],
            }
            for c in in_order(spec["choices"], variant.order if variant else None)
            if c["id"] in selected or c["correct"]
        ]


class SingleChoice(ChoiceKind):
    name = "single_choice"
    correct_count = (1, 1)

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> str:
        if not isinstance(answer, str):
            raise AnswerError("a single_choice answer is one choice id (a string)")
        if answer not in {c["id"] for c in spec["choices"]}:
            raise AnswerError(f"{answer!r} is not one of this exercise's choices")
        return answer

    def grade(self, spec: Mapping[str, Any], answer: Any, variant: QuizVariant | None = None) -> QuizGrade:
        choice = self.check_answer(spec, answer)
        correct = next(c for c in spec["choices"] if c["id"] == choice)["correct"]
        return QuizGrade(1.0 if correct else 0.0, correct, self._choice_feedback(spec, {choice}, variant), variant)


class MultipleChoice(ChoiceKind):
    name = "multiple_choice"
    correct_count = (1, 10_000)

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> list[str]:
        if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
            raise AnswerError("a multiple_choice answer is a list of choice ids (strings)")
        if len(set(answer)) != len(answer):
            raise AnswerError("a choice id appears more than once")
        ids = {c["id"] for c in spec["choices"]}
        unknown = [a for a in answer if a not in ids]
        if unknown:
            raise AnswerError(f"not choices of this exercise: {', '.join(map(repr, unknown))}")
        return sorted(answer)

    def grade(self, spec: Mapping[str, Any], answer: Any, variant: QuizVariant | None = None) -> QuizGrade:
        selected = set(self.check_answer(spec, answer))
        correct_ids = {c["id"] for c in spec["choices"] if c["correct"]}
        hits = len(selected & correct_ids)
        wrong_picks = len(selected - correct_ids)
        score = max(0.0, (hits - wrong_picks) / len(correct_ids))
        exact = selected == correct_ids
        return QuizGrade(1.0 if exact else score, exact, self._choice_feedback(spec, selected, variant), variant)


class ShortAnswer(QuizKind):
    name = "short_answer"
    spec_keys = frozenset({"answer"})

    def validate_spec(self, spec: Mapping[str, Any]) -> list[Problem]:
        answer, problems = _answer_table(spec, {"accepted", "case_sensitive", "wrong"})
        if answer is None:
            return problems
        accepted = answer.get("accepted")
        if (not isinstance(accepted, list) or not accepted
                or not all(isinstance(a, str) and a.strip() for a in accepted)):
            problems.append(("answer.accepted", "must be a non-empty list of non-empty strings"))
        if not isinstance(answer.get("case_sensitive", False), bool):
            problems.append(("answer.case_sensitive", "must be true or false"))
        _check_feedback_list(spec, problems)
        for i, entry in enumerate(answer.get("wrong", []) if isinstance(answer.get("wrong"), list) else []):
            if not isinstance(entry, dict) or not isinstance(entry.get("match"), str):
                problems.append((f"answer.wrong[{i}].match", "must be a string"))
        return problems

    def consistency_problems(self, spec: Mapping[str, Any]) -> list[Problem]:
        answer = spec["answer"]
        case_sensitive = answer.get("case_sensitive", False)
        first: dict[str, int] = {}
        problems: list[Problem] = []
        for i, text in enumerate(answer["accepted"]):
            key = normalise_text(text, case_sensitive=case_sensitive)
            if key in first:
                problems.append((f"answer.accepted[{i}]", f"the same answer as answer.accepted[{first[key]}] once "
                                                          f"normalised ({key!r})"))
            else:
                first[key] = i
        for i, entry in enumerate(answer.get("wrong", [])):
            key = normalise_text(entry["match"], case_sensitive=case_sensitive)
            if key in first:
                problems.append((f"answer.wrong[{i}].match", f"the item accepts it as right: once normalised "
                                                             f"({key!r}) it is answer.accepted[{first[key]}]"))
        return problems

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> str:
        if not isinstance(answer, str):
            raise AnswerError("a short_answer answer is a string")
        if not answer.strip():
            raise AnswerError("the answer is empty")
        if len(answer) > MAX_TEXT_ANSWER:
            raise AnswerError(f"the answer is longer than {MAX_TEXT_ANSWER} characters")
        return answer

    def grade(self, spec: Mapping[str, Any], answer: Any, variant: QuizVariant | None = None) -> QuizGrade:
        text = self.check_answer(spec, answer)
        case_sensitive = spec["answer"].get("case_sensitive", False)
        given = normalise_text(text, case_sensitive=case_sensitive)
        accepted = {normalise_text(a, case_sensitive=case_sensitive) for a in spec["answer"]["accepted"]}
        if given in accepted:
            return QuizGrade(1.0, True, [])
        feedback = [
            {"answer": text, "feedback": w["feedback"]}
            for w in spec["answer"].get("wrong", [])
            if normalise_text(w["match"], case_sensitive=case_sensitive) == given
        ]
        return QuizGrade(0.0, False, feedback)


def in_order(choices: list[dict[str, Any]], order: tuple[str, ...] | None) -> list[dict[str, Any]]:
    """The choices in a learner's `order` (ids it does not name last, as written)."""
    if not order:
        return list(choices)
    rank = {cid: i for i, cid in enumerate(order)}
    return sorted(choices, key=lambda c: rank.get(c["id"], len(rank)))


def format_param(value: ParamValue) -> str:
    """A parameter's value as a prompt shows it: 3, 0.5, -2 (never 3.0)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def render_params(text: str, params: Mapping[str, ParamValue] | None) -> str:
    """`text` with each {name} of a parameter in `params` replaced by its value; any other
    brace is left as written."""
    if not params:
        return text
    return PLACEHOLDER.sub(lambda m: format_param(params[m[1]]) if m[1] in params else m[0], text)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def param_names(spec: Mapping[str, Any]) -> list[str]:
    """A spec's [params] in the order the prompt first shows them (then by name): the same order
    whatever kept the spec (PostgreSQL's JSONB does not keep a table's order)."""
    prompt = _text(spec.get("prompt"))

    def first_seen(name: str) -> tuple[int, str]:
        at = prompt.find("{" + name + "}")
        return (at if at >= 0 else len(prompt), name)

    return sorted(spec.get("params") or {}, key=first_seen)


def param_domains(spec: Mapping[str, Any]) -> dict[str, list[ParamValue]]:
    """The values each of a (valid) spec's [params] may take (min..max, or `values`), in
    param_names order."""
    domains: dict[str, list[ParamValue]] = {}
    for name in param_names(spec):
        table = spec["params"][name]
        domains[name] = list(table["values"]) if "values" in table else list(range(table["min"], table["max"] + 1))
    return domains


def _param_problems(params: Any) -> tuple[dict[str, list[ParamValue]], list[Problem]]:  # noqa: C901
    """The valid parameters' domains, and what is wrong with the [params] table."""
    if not isinstance(params, dict) or not params:
        return {}, [("params", "must be a table of parameters, e.g. x = { min = 1, max = 5 }")]
    problems: list[Problem] = []
    if len(params) > MAX_PARAMS:
        problems.append(("params", f"at most {MAX_PARAMS} parameters"))
    domains: dict[str, list[ParamValue]] = {}
    for name, table in params.items():
        where = f"params.{name}"
        if not PARAM_NAME.match(name) or name in RESERVED:
            problems.append((where, "a parameter's name is a lowercase identifier (at most 20 characters), not "
                                    f"one of {', '.join(sorted(RESERVED))}"))
            continue
        if not isinstance(table, dict):
            problems.append((where, "must be a table: { min = 1, max = 5 } or { values = [0.5, 2] }"))
            continue
        unknown = set(table) - {"min", "max", "values"}
        if unknown:
            problems.append((where, f"unknown keys: {', '.join(sorted(unknown))}"))
        if "values" in table:
            values = table["values"]
            if set(table) & {"min", "max"}:
                problems.append((where, "takes min and max, or values, not both"))
            elif (not isinstance(values, list) or not values or not all(map(_is_number, values))
                  or len(set(values)) != len(values)):
                problems.append((f"{where}.values", "must be a non-empty list of distinct finite numbers"))
            elif len(values) > MAX_PARAM_VALUES or any(abs(v) > MAX_PARAM_MAGNITUDE for v in values):
                problems.append((f"{where}.values", f"at most {MAX_PARAM_VALUES} numbers, each within "
                                                    f"±{MAX_PARAM_MAGNITUDE:g}"))
            else:
                domains[name] = list(values)
            continue
        low, high = table.get("min"), table.get("max")
        if not (isinstance(low, int) and isinstance(high, int)) or isinstance(low, bool) or isinstance(high, bool):
            problems.append((where, "needs integers min and max (or a list of values)"))
        elif low > high:
            problems.append((where, "min must not exceed max"))
        elif high - low + 1 > MAX_PARAM_VALUES or max(abs(low), abs(high)) > MAX_PARAM_MAGNITUDE:
            problems.append((where, f"at most {MAX_PARAM_VALUES} values, each within ±{MAX_PARAM_MAGNITUDE:g}"))
        else:
            domains[name] = list(range(low, high + 1))
    return domains, problems


@functools.lru_cache(maxsize=1024)
def _expression(text: str, names: frozenset[str]) -> Expression:
    return parse_expression(text, names)


def _value_problems(where: str, value: Any, names: frozenset[str] | None, used: set[str]) -> list[Problem]:
    """What is wrong with an answer value: a number or a list of numbers; with [params] (`names`
    not None) an expression over them may stand for any number."""
    if names is None:
        if _is_number(value) or (isinstance(value, list) and value and all(map(_is_number, value))):
            return []
        return [(where, "must be a finite number or a non-empty list of them (an expression, a string, "
                        "needs a [params] table)")]
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        return [(where, "must not be an empty list")]
    problems: list[Problem] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]" if isinstance(value, list) else where
        if isinstance(item, str):
            try:
                used |= _expression(item, names).names
            except ExpressionError as exc:
                problems.append((at, str(exc)))
        elif not _is_number(item):
            problems.append((at, "must be a finite number or an expression over the parameters (a string)"))
    return problems


def _compute(value: Any, params: Mapping[str, ParamValue]) -> float | list[float]:
    """An answer value for these parameters (validated value; raises ExpressionError)."""
    if isinstance(value, list):
        return [_compute_one(v, params) for v in value]
    return _compute_one(value, params)


def _compute_one(value: Any, params: Mapping[str, ParamValue]) -> float:
    if isinstance(value, str):
        return _expression(value, frozenset(params)).evaluate(params)
    return float(value)


def _where(params: Mapping[str, ParamValue]) -> str:
    return ", ".join(f"{k} = {format_param(v)}" for k, v in params.items()) or "(no parameters)"


class Numeric(QuizKind):
    name = "numeric"
    spec_keys = frozenset({"answer", "params"})

    def validate_spec(self, spec: Mapping[str, Any]) -> list[Problem]:  # noqa: C901
        answer, problems = _answer_table(spec, {"value", "tolerance", "relative_tolerance", "wrong"})
        domains: dict[str, list[ParamValue]] = {}
        param_problems: list[Problem] = []
        if "params" in spec:
            domains, param_problems = _param_problems(spec["params"])
            problems += param_problems
        if answer is None:
            return problems
        names = frozenset(domains) if "params" in spec else None
        used: set[str] = set()
        value = answer.get("value")
        value_problems = _value_problems("answer.value", value, names, used)
        problems += value_problems
        for key in ("tolerance", "relative_tolerance"):
            tol = answer.get(key, 0.0)
            if not _is_number(tol) or tol < 0:
                problems.append((f"answer.{key}", "must be a number >= 0"))
        _check_feedback_list(spec, problems)
        wrong = answer.get("wrong", []) if isinstance(answer.get("wrong"), list) else []
        for i, entry in enumerate(wrong):
            where = f"answer.wrong[{i}].value"
            wrong_value = entry.get("value") if isinstance(entry, dict) else None
            found = _value_problems(where, wrong_value, names, set())
            if found:
                problems += found
                value_problems += found
            elif isinstance(value, list) != isinstance(wrong_value, list) or (
                isinstance(value, list) and isinstance(wrong_value, list) and len(value) != len(wrong_value)
            ):
                problems.append((where, "must have the same shape as answer.value"))
        shown = set(PLACEHOLDER.findall(_text(spec.get("prompt"))))
        for name in domains:
            if name not in shown:
                problems.append((f"params.{name}", f"not in the prompt: write {{{name}}} where the learner reads it"))
            if name not in used and not any(f == "answer.value" or f.startswith("answer.value[") for f, _ in value_problems):
                problems.append((f"params.{name}", "answer.value does not use it"))
        if value_problems or param_problems:
            return problems
        return problems + self._evaluation_problems(value, wrong, domains)

    @staticmethod
    def _evaluation_problems(value: Any, wrong: list[Any], domains: dict[str, list[ParamValue]]) -> list[Problem]:
        """Every value computed for every combination of the parameters (so a learner's grade
        never fails): the first combination each one fails for."""
        combinations = math.prod(len(d) for d in domains.values())
        if combinations > MAX_PARAM_COMBINATIONS:
            return [("params", f"{combinations} combinations of values: at most {MAX_PARAM_COMBINATIONS}, so that "
                               "every one can be checked")]
        fields = [("answer.value", value)] + [(f"answer.wrong[{i}].value", w["value"]) for i, w in enumerate(wrong)]
        problems: list[Problem] = []
        for where, item in fields:
            if not (isinstance(item, str) or (isinstance(item, list) and any(isinstance(v, str) for v in item))):
                continue
            for combination in itertools.product(*domains.values()):
                params = dict(zip(domains, combination))
                try:
                    _compute(item, params)
                except ExpressionError as exc:
                    problems.append((where, f"cannot be computed at {_where(params)}: {exc}"))
                    break
        return problems

    def consistency_problems(self, spec: Mapping[str, Any]) -> list[Problem]:
        """A listed wrong value the item would accept as right (within the tolerance), for the
        first combination of the parameters where it would."""
        answer = spec["answer"]
        domains = param_domains(spec) if spec.get("params") else {}
        combinations = [dict(zip(domains, c)) for c in itertools.product(*domains.values())]
        problems: list[Problem] = []
        for i, entry in enumerate(answer.get("wrong", [])):
            for params in combinations:
                expected, wrong_value = _compute(answer["value"], params), _compute(entry["value"], params)
                if self._close(wrong_value, expected, answer):
                    at = f" at {_where(params)}" if params else ""
                    problems.append((f"answer.wrong[{i}].value", f"the item accepts it as right{at}: {wrong_value} is "
                                                                 f"within the tolerance of answer.value ({expected})"))
                    break
        return problems

    def public_view(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        value = spec["answer"]["value"]
        return {"answer_length": len(value) if isinstance(value, list) else None}

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> float | list[float]:
        expected = spec["answer"]["value"]
        if isinstance(expected, list):
            if not isinstance(answer, list) or not all(map(_is_number, answer)):
                raise AnswerError(f"this answer is a list of {len(expected)} finite numbers")
            if len(answer) != len(expected):
                raise AnswerError(f"expected {len(expected)} numbers, got {len(answer)}")
            return [float(a) for a in answer]
        if not _is_number(answer):
            raise AnswerError("this answer is one finite number")
        return float(answer)

    @staticmethod
    def _close(given: float | list[float], expected: Any, spec_answer: Mapping[str, Any]) -> bool:
        tol = spec_answer.get("tolerance", 1e-9)
        rel = spec_answer.get("relative_tolerance", 0.0)
        pairs = zip(given, expected) if isinstance(given, list) else [(given, expected)]
        return all(abs(g - e) <= max(tol, rel * abs(e)) for g, e in pairs)

    @staticmethod
    def learner_params(spec: Mapping[str, Any], variant: QuizVariant | None) -> dict[str, ParamValue]:
        """The parameters to grade with: the variant's, which must be the spec's; {} without [params].
        Raises AnswerError when the spec has parameters and the variant does not give them."""
        declared = spec.get("params") or {}
        if not declared:
            return {}
        given = variant.params if variant is not None else None
        if given is None:
            raise AnswerError(f"this exercise's answer depends on the learner's values of {', '.join(declared)}, "
                              "and none were given")
        if set(given) != set(declared):
            raise AnswerError(f"the values given ({', '.join(sorted(given)) or 'none'}) are not this exercise's "
                              f"parameters ({', '.join(sorted(declared))})")
        return {name: given[name] for name in param_names(spec)}

    def grade(self, spec: Mapping[str, Any], answer: Any, variant: QuizVariant | None = None) -> QuizGrade:
        given = self.check_answer(spec, answer)
        params = self.learner_params(spec, variant)
        spec_answer = spec["answer"]
        try:
            expected = _compute(spec_answer["value"], params)
            wrong = [(w, _compute(w["value"], params)) for w in spec_answer.get("wrong", [])]
        except ExpressionError as exc:
            raise AnswerError(f"the answer cannot be computed at {_where(params)}: {exc}") from None
        kept = QuizVariant(variant.order, params) if params and variant is not None else None
        feedback: list[dict[str, Any]] = []
        if params:
            feedback.append({"params": params, "feedback": f"Your values: {_where(params)}."})
        if self._close(given, expected, spec_answer):
            return QuizGrade(1.0, True, feedback, kept)
        feedback += [
            {"answer": given, "feedback": render_params(w["feedback"], params)}
            for w, wrong_value in wrong
            if self._close(given, wrong_value, spec_answer)
        ]
        return QuizGrade(0.0, False, feedback, kept)


QUIZ_KINDS: dict[str, QuizKind] = {k.name: k for k in (SingleChoice(), MultipleChoice(), ShortAnswer(), Numeric())}


def grade_quiz(kind: str, spec: Mapping[str, Any], answer: Any, variant: QuizVariant | None = None) -> QuizGrade:
    """Grade `answer` for a quiz exercise (in a learner's `variant`); raises AnswerError when its
    shape is wrong, or when the exercise has [params] and the variant does not give them."""
    return QUIZ_KINDS[kind].grade(spec, answer, variant)
