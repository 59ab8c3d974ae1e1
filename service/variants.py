"""A variant per learner: what makes one learner's exercise their own, drawn from secrets.

- Code exercises: the judge draws the hidden inputs and grad_outputs from its secret, the exercise
  version and the learner's `variant_key` (service/grading/plan.py); the worker and a regrade pass
  the same key (services/preparations.py grade_in_variant), so a regrade sees the inputs the
  attempt saw.
- Quiz choices (single_choice, multiple_choice) are shown in an order of the learner's own, unless
  the exercise says `shuffle = false`; the same learner always sees the same order.
- A numeric item's [params] are drawn per learner and exercise version; its answer is computed
  from them (service/quiz.py, service/expressions.py).

The quiz draws are HMACs keyed from the web process's SECRET_KEY (no torch, no judge there): a
learner who knows their own variant cannot work out another's. Every draw is an HMAC per item
(a choice's rank, a parameter's index), never a `random` generator, so the same inputs give the
same variant on every Python version. An attempt's result keeps the variant it was graded in
(QuizVariant.as_result): its display and a regrade read it there rather than draw it again.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, Protocol

from .quiz import (
    QUIZ_KINDS,
    ParamValue,
    QuizGrade,
    QuizVariant,
    in_order,
    param_domains,
    render_params,
)

CHOICE_KINDS = ("single_choice", "multiple_choice")


def variant_key(client_id: int, learner: str) -> str:
    """The one name of a learner's variant: their API client and their id there (a learner id is
    the client's own, so two clients' "ada" are two learners)."""
    return f"{client_id}:{learner}"


def _key(secret_key: str) -> bytes:
    return hmac.new(secret_key.encode(), b"gradquiz quiz variants", hashlib.sha256).digest()


def _draw(key: bytes, purpose: str, *parts: str) -> int:
    msg = "\0".join(("gradquiz-variant-v1", purpose, *parts)).encode()
    return int.from_bytes(hmac.new(key, msg, hashlib.sha256).digest(), "big")


def varies_per_learner(spec: Mapping[str, Any]) -> bool:
    """Whether learners see the exercise differently: shuffled choices, or drawn [params]. (A code
    exercise's hidden inputs vary too, but nothing of them is shown.)"""
    if spec.get("kind") in CHOICE_KINDS:
        return spec.get("shuffle", True) is not False
    return spec.get("kind") == "numeric" and bool(spec.get("params"))


def choice_order(secret_key: str, variant: str, slug: str, spec: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The order the learner sees the choices in (None: as written). Each choice's rank is an HMAC
    of the learner and its id, not of the version: an edit elsewhere in the exercise keeps it."""
    if not (spec.get("kind") in CHOICE_KINDS and varies_per_learner(spec)):
        return None
    key = _key(secret_key)
    ids = [c["id"] for c in spec["choices"]]
    return tuple(sorted(ids, key=lambda cid: _draw(key, "choice", variant, slug, cid)))


def draw_params(secret_key: str, variant: str, slug: str, digest: str,
                spec: Mapping[str, Any]) -> dict[str, ParamValue] | None:
    """The learner's values of a numeric item's [params] for this version (`digest`), or None."""
    if spec.get("kind") != "numeric" or not spec.get("params"):
        return None
    key = _key(secret_key)
    return {name: domain[_draw(key, "param", variant, slug, digest, name) % len(domain)]
            for name, domain in param_domains(spec).items()}


def quiz_variant(secret_key: str, variant: str, slug: str, digest: str, spec: Mapping[str, Any]) -> QuizVariant | None:
    """The learner's variant of a quiz exercise version, or None when it looks the same to all."""
    order = choice_order(secret_key, variant, slug, spec)
    params = draw_params(secret_key, variant, slug, digest, spec)
    return QuizVariant(order, params) if order is not None or params is not None else None


class _Version(Protocol):
    digest: str

    @property
    def spec(self) -> dict[str, Any]: ...


def grade_quiz_answer(slug: str, version: _Version, client_id: int, learner: str, answer: Any) -> QuizGrade:
    """Grade a new quiz attempt in the learner's variant of `version` (raises AnswerError as
    QuizKind.grade does). Needs the Flask app: the variant is keyed from its SECRET_KEY."""
    from flask import current_app

    spec = version.spec
    variant = quiz_variant(current_app.config["SECRET_KEY"], variant_key(client_id, learner), slug, version.digest,
                           spec)
    return QUIZ_KINDS[spec["kind"]].grade(spec, answer, variant)


def regrade_quiz_answer(spec: Mapping[str, Any], answer: Any, result: Mapping[str, Any] | None) -> QuizGrade:
    """Grade an attempt's answer again, against another version's `spec`, in the variant its
    `result` kept: the same parameters (so the answer computed for them stays right) and order.
    An attempt that kept no parameters, at a version that has them, cannot be graded: AnswerError."""
    return QUIZ_KINDS[spec["kind"]].grade(spec, answer, QuizVariant.from_result(result))


def personalise_detail(detail: dict[str, Any], spec: Mapping[str, Any], variant: QuizVariant | None,
                       learner: str) -> dict[str, Any]:
    """An exercise's public detail (GET /api/v1/exercises/{slug}) as `learner` sees it: choices in
    their order, the prompt and hints with their parameters' values, and those values."""
    mine = dict(detail, learner=learner)
    if variant is None:
        return mine
    if variant.order is not None and "choices" in mine:
        mine["choices"] = in_order(mine["choices"], variant.order)
    if variant.params is not None:
        mine["params"] = dict(variant.params)
        mine["prompt"] = render_params(mine["prompt"], variant.params)
        mine["hints"] = [render_params(hint, variant.params) for hint in mine.get("hints", [])]
    return mine


__all__ = ["choice_order", "draw_params", "grade_quiz_answer", "personalise_detail",
           "quiz_variant", "regrade_quiz_answer", "variant_key", "varies_per_learner"]
