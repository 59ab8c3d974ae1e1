"""Grading of the quiz kinds: pure functions over an exercise's spec, no I/O.

Each kind is one class in `QUIZ_KINDS` (a registry, as CTFd does for challenge types) that knows
how to check its spec, what of it a learner may see, the shape an answer must have, and how to
grade one.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

Problem = tuple[str, str]  # (field path, message)

ID_PATTERN = re.compile(r"^[a-z0-9_-]{1,40}$")
MAX_TEXT_ANSWER = 1000
MAX_NUMERIC_LENGTH = 1000


class AnswerError(ValueError):
    """The answer does not have the shape the exercise's kind expects."""


@dataclass(frozen=True)
class QuizGrade:
    score: float
    correct: bool
    feedback: list[dict[str, Any]] = field(default_factory=list)

    def as_result(self) -> dict[str, Any]:
        return {"feedback": self.feedback}


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

    def public_view(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """What a learner may see before answering: never which answer is correct."""
        return {}

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> Any:
        """Return the answer in canonical form, or raise AnswerError naming what is wrong."""
        raise NotImplementedError

    def grade(self, spec: Mapping[str, Any], answer: Any) -> QuizGrade:
        raise NotImplementedError


class ChoiceKind(QuizKind):
    spec_keys = frozenset({"choices"})
    # How many correct choices a valid spec may have.
    correct_count: ClassVar[tuple[int, int]]

    def validate_spec(self, spec: Mapping[str, Any]) -> list[Problem]:  # noqa: C901
        problems: list[Problem] = []
        choices = spec.get("choices")
        if not isinstance(choices, list) or len(choices) < 2:
            return [("choices", "needs at least two [[choices]]")]
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

    def _choice_feedback(self, spec: Mapping[str, Any], selected: set[str]) -> list[dict[str, Any]]:
        # Feedback on every choice the learner picked, and on every correct one they missed.
        return [
            {
                "choice": c["id"],
                "selected": c["id"] in selected,
                "correct": c["correct"],
                "feedback": c["feedback"],
            }
            for c in spec["choices"]
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

    def grade(self, spec: Mapping[str, Any], answer: Any) -> QuizGrade:
        choice = self.check_answer(spec, answer)
        correct = next(c for c in spec["choices"] if c["id"] == choice)["correct"]
        return QuizGrade(1.0 if correct else 0.0, correct, self._choice_feedback(spec, {choice}))


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

    def grade(self, spec: Mapping[str, Any], answer: Any) -> QuizGrade:
        selected = set(self.check_answer(spec, answer))
        correct_ids = {c["id"] for c in spec["choices"] if c["correct"]}
        hits = len(selected & correct_ids)
        wrong_picks = len(selected - correct_ids)
        score = max(0.0, (hits - wrong_picks) / len(correct_ids))
        exact = selected == correct_ids
        return QuizGrade(1.0 if exact else score, exact, self._choice_feedback(spec, selected))


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

    def check_answer(self, spec: Mapping[str, Any], answer: Any) -> str:
        if not isinstance(answer, str):
            raise AnswerError("a short_answer answer is a string")
        if not answer.strip():
            raise AnswerError("the answer is empty")
        if len(answer) > MAX_TEXT_ANSWER:
            raise AnswerError(f"the answer is longer than {MAX_TEXT_ANSWER} characters")
        return answer

    def grade(self, spec: Mapping[str, Any], answer: Any) -> QuizGrade:
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


class Numeric(QuizKind):
    name = "numeric"
    spec_keys = frozenset({"answer"})

    def validate_spec(self, spec: Mapping[str, Any]) -> list[Problem]:
        answer, problems = _answer_table(spec, {"value", "tolerance", "relative_tolerance", "wrong"})
        if answer is None:
            return problems
        value = answer.get("value")
        if not (_is_number(value) or (isinstance(value, list) and value and all(map(_is_number, value)))):
            problems.append(("answer.value", "must be a finite number or a non-empty list of them"))
        for key in ("tolerance", "relative_tolerance"):
            tol = answer.get(key, 0.0)
            if not _is_number(tol) or tol < 0:
                problems.append((f"answer.{key}", "must be a number >= 0"))
        _check_feedback_list(spec, problems)
        for i, entry in enumerate(answer.get("wrong", []) if isinstance(answer.get("wrong"), list) else []):
            wrong_value = entry.get("value") if isinstance(entry, dict) else None
            if not (_is_number(wrong_value) or isinstance(wrong_value, list)):
                problems.append((f"answer.wrong[{i}].value", "must be a number or a list of numbers"))
            elif isinstance(value, list) != isinstance(wrong_value, list) or (
                isinstance(value, list) and isinstance(wrong_value, list) and len(value) != len(wrong_value)
            ):
                problems.append((f"answer.wrong[{i}].value", "must have the same shape as answer.value"))
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

    def grade(self, spec: Mapping[str, Any], answer: Any) -> QuizGrade:
        given = self.check_answer(spec, answer)
        spec_answer = spec["answer"]
        if self._close(given, spec_answer["value"], spec_answer):
            return QuizGrade(1.0, True, [])
        feedback = [
            {"answer": given, "feedback": w["feedback"]}
            for w in spec_answer.get("wrong", [])
            if self._close(given, w["value"], spec_answer)
        ]
        return QuizGrade(0.0, False, feedback)


QUIZ_KINDS: dict[str, QuizKind] = {k.name: k for k in (SingleChoice(), MultipleChoice(), ShortAnswer(), Numeric())}


def grade_quiz(kind: str, spec: Mapping[str, Any], answer: Any) -> QuizGrade:
    """Grade `answer` for a quiz exercise; raises AnswerError when its shape is wrong."""
    return QUIZ_KINDS[kind].grade(spec, answer)
