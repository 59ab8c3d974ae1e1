"""Every check of the engine, one entry each: its name, its weight in a grade, when it applies, what
the child must report for it, and how a grade and a run decide it.

A check's words (title, what it checks, the sentence when it fails) live in terms.CHECKS, under the
same name; how it decides lives in the function an entry names: a method of verdict.Verdict for a
grade (it compares the submission's numbers with the reference's), a function of run_checks for a
"Try it yourself" run (it compares the learner's backward with finite differences of the learner's
forward). Both return a checks.Outcome, and both are reported in one shape, `CheckResult`.

The order of CHECKS is the order every report lists its checks in. An optional check (`option`)
is turned on by the `[code]` key of that name and, unless a run makes it unasked (`detected`: a
custom op's tests), by the run request's field of that name (as `gradgradcheck`).

Torch-free: imported by the web process (spec.py reads the weights and the options here).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from . import custom_ops, run_checks
from .checks import Outcome
from .code_table import CodeSpec
from .terms import CHECKS as TERMS, CheckTerm
from .verdict import Verdict


def _always(code: CodeSpec) -> bool:
    return True


@dataclass(frozen=True)
class Check:
    """One check of the engine (its words: terms.CHECKS[name])."""

    name: str
    #: its default weight in a grade (an exercise's [code.weights] may change it); None: runs only
    weight: float | None = None
    #: how a grade decides it, from the submission's and the reference's reports, recording its
    #: Outcome in the Verdict's `outcomes` (None: runs only)
    grade: Callable[[Verdict], None] | None = None
    #: how a run decides it, from the learner's own numbers; None from the function: it does not
    #: apply to this run (such as gradcheck when the Jacobian is checked by projections)
    run: Callable[[run_checks.RunCase], Outcome | None] | None = None
    #: whether it applies to an exercise's grade (every applicable weight is normalised to sum to 1)
    applies: Callable[[CodeSpec], bool] = _always
    #: the `[code]` key and run request field that ask for it (an optional check; off by default)
    option: str | None = None
    #: a run makes it whenever the code calls for it (a custom op), unasked: its option is a
    #: `[code]` key, not a run request field
    detected: bool = False
    #: a run decides it even when forward raised on the run's inputs (its numbers are made apart)
    after_forward_error: bool = False
    #: what the child reports for it: the fields of a planned cases.Case it reads
    reports: tuple[str, ...] = ()
    #: when it fails, a grade decides nothing after it (the code did not load or has no entry point)
    gate: bool = False
    #: it judges gradients: a submission that fakes its results must earn nothing here
    judges_gradients: bool = False
    #: it checks a derivative the Function defines (what backward returns, its gradients, that it
    #: leaves grad_output alone; jvp's): under the `gate` scoring rule a failed one caps the score
    #: (service/scoring.py)
    judges_backward: bool = False

    @property
    def term(self) -> CheckTerm:
        return TERMS[self.name]


CHECKS: tuple[Check, ...] = (
    Check("parses", 0.0, Verdict.parses),
    Check("entry_point", 0.0, Verdict.entry_point, gate=True),
    Check("forward", 0.20, Verdict.forward),
    Check("output_shape_dtype", 0.05, Verdict.output_shape_dtype),
    Check("inputs_unchanged", 0.05, Verdict.inputs_unchanged, run_checks.inputs_unchanged),
    Check("backward_arity", 0.10, Verdict.backward_arity, run_checks.backward_arity, reports=("grad_outputs",),
          judges_backward=True),
    Check("gradcheck", 0.20, Verdict.gradcheck, run_checks.gradcheck, applies=lambda code: code.differentiable,
          reports=("gradcheck",), judges_gradients=True, judges_backward=True),
    Check("jacobian_projections", run=run_checks.jacobian_projections, reports=("gradcheck",)),
    Check("random_vjp", run=run_checks.random_vjp, reports=("grad_outputs", "gradcheck")),
    Check("gradient", 0.20, Verdict.gradient, reports=("grad_outputs",), judges_gradients=True, judges_backward=True),
    Check("boundary", 0.10, Verdict.boundary, applies=lambda code: bool(code.boundary), reports=("grad_outputs",),
          judges_gradients=True, judges_backward=True),
    Check("needs_input_grad", run=run_checks.needs_input_grad, reports=("needs_input_grad",)),
    Check("gradgradcheck", 0.15, Verdict.gradgradcheck, run_checks.gradgradcheck, applies=lambda code: code.gradgradcheck,
          option="gradgradcheck", reports=("gradgrad",), judges_gradients=True, judges_backward=True),
    Check("forward_ad", 0.15, Verdict.forward_ad, run_checks.forward_ad, option="forward_ad",
          applies=lambda code: code.forward_ad and code.differentiable, reports=("forward_ad",),
          judges_gradients=True, judges_backward=True),
    Check("in_place", 0.15, Verdict.in_place, run_checks.in_place, option="in_place",
          applies=lambda code: code.in_place and code.differentiable, reports=("in_place", "clone_inputs"),
          judges_gradients=True, after_forward_error=True),
    Check("vmap", 0.10, Verdict.vmap, run_checks.vmap, option="vmap", applies=lambda code: code.vmap,
          reports=("vmap",), judges_gradients=True),
    Check("batched_grad", 0.05, Verdict.batched_grad, run_checks.batched_grad, option="vmap",
          applies=lambda code: code.vmap and code.differentiable, reports=("batched_grad",), judges_gradients=True,
          judges_backward=True),
    # a custom op's (torch.library.custom_op): torch.library.opcheck's four tests, on the op's own facts
    Check("op_schema", 0.05, Verdict.op_schema, run_checks.op_schema, option="custom_op", detected=True,
          applies=lambda code: code.custom_op, reports=("custom_op",), after_forward_error=True),
    Check("op_autograd_registration", 0.05, Verdict.op_autograd_registration, run_checks.op_autograd_registration,
          option="custom_op", detected=True, applies=lambda code: code.custom_op, reports=("custom_op",),
          after_forward_error=True),
    Check("op_fake_tensor", 0.10, Verdict.op_fake_tensor, run_checks.op_fake_tensor, option="custom_op", detected=True,
          applies=lambda code: code.custom_op, reports=("custom_op",), after_forward_error=True),
    Check("op_aot_dispatch", 0.10, Verdict.op_aot_dispatch, run_checks.op_aot_dispatch, option="custom_op",
          detected=True, applies=lambda code: code.custom_op, reports=("custom_op",), after_forward_error=True),
    Check("grad_output_unchanged", 0.05, Verdict.grad_output_unchanged, run_checks.grad_output_unchanged,
          reports=("grad_outputs",), judges_backward=True),
    Check("technique", 0.10, Verdict.technique, applies=lambda code: bool(code.technique)),
)

BY_NAME: Mapping[str, Check] = MappingProxyType({c.name: c for c in CHECKS})
GRADE_CHECKS: tuple[Check, ...] = tuple(c for c in CHECKS if c.grade is not None)
RUN_CHECKS: tuple[Check, ...] = tuple(c for c in CHECKS if c.run is not None)
#: name -> default weight of every check a grade makes, in report order
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType({c.name: c.weight or 0.0 for c in GRADE_CHECKS})
GRADIENT_CHECKS: tuple[str, ...] = tuple(c.name for c in CHECKS if c.judges_gradients)
BACKWARD_CHECKS: tuple[str, ...] = tuple(c.name for c in CHECKS if c.judges_backward)
#: the optional checks, by the `[code]` key that asks for them (a run: plan_run's `options`)
OPTIONS: tuple[str, ...] = tuple(dict.fromkeys(c.option for c in CHECKS if c.option))
#: the options a run request names (the others a run makes when the code calls for them)
RUN_OPTIONS: tuple[str, ...] = tuple(dict.fromkeys(c.option for c in CHECKS if c.option and not c.detected))


def default_weights(options: Collection[str]) -> dict[str, float]:
    """The default weight of each check a grade can make. An optional check's only when its option
    is asked for, except gradgradcheck's, which every table has always carried: the weights are
    seed material of a grade's plan (plan.base_cases), so a table without the newer options draws
    what it drew."""
    return {c.name: c.weight or 0.0 for c in GRADE_CHECKS if c.option in (None, "gradgradcheck") or c.option in options}


def applicable(code: CodeSpec, weights: Mapping[str, float]) -> dict[str, float]:
    """The checks of an exercise's grade, in report order, weights normalised to sum to 1."""
    w = {c.name: weights[c.name] for c in GRADE_CHECKS if c.applies(code)}
    total = sum(w.values())
    return {k: (v / total if total > 0 else 0.0) for k, v in w.items()}


def decide_grade(verdict: Verdict) -> Verdict:
    """Every check of the grade's exercise, in order, decided into `verdict.outcomes`."""
    for check in GRADE_CHECKS:
        if check.name in verdict.code.checks:
            assert check.grade is not None
            check.grade(verdict)
            if check.gate and not verdict.passed(check.name):
                break
    # a custom op's gradient checks in its own terms, as a run's (runs.py): no formula registered
    co = next((s.custom_op for s in verdict.sub_cases.values() if s.custom_op is not None), None)
    if co is not None:
        verdict.outcomes = custom_ops.with_op_causes(verdict.outcomes, co)
    return verdict


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CheckResult:
    """One check of a report, grades and runs alike: its verdict and, for a grade, its weight; for
    a run, what it checks (a run's page shows it beside the verdict)."""

    name: str
    outcome: Outcome
    weight: float | None = None
    description: str | None = None

    @property
    def passed(self) -> bool:
        return self.outcome.passed

    def causes(self) -> list[str]:
        """The likely causes it names, when it failed: its own first."""
        o = self.outcome
        return [] if o.passed else [c for c in (o.likely_cause, *o.other_causes) if c]

    def to_json(self) -> dict[str, Any]:
        o = self.outcome
        item: dict[str, Any] = {"name": self.name}
        if self.weight is not None:
            item["weight"] = round(self.weight, 6)
        item.update(passed=o.passed, message=o.message)
        if self.description is not None:
            item["description"] = self.description
        if not o.passed:
            if o.likely_cause:
                item["likely_cause"] = o.likely_cause
            if o.other_causes:
                item["other_causes"] = list(o.other_causes)
            if o.torch_message:
                item["torch_message"] = o.torch_message
            if o.shapes:
                item["shapes"] = o.shapes
        if o.diagnostics:
            item["diagnostics"] = [d.to_json() for d in o.diagnostics]
        return item


@dataclass(frozen=True)
class GradeSummary:
    score: float
    checks: tuple[CheckResult, ...]
    likely_causes: tuple[str, ...]

    def checks_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.checks]


def grade_summary(code: CodeSpec, outcomes: Mapping[str, Outcome], diagnostics: Sequence[Mapping[str, Any]],
                  not_run: str) -> GradeSummary:
    """A grade's checks in report order (a check not reached says why: `not_run`), its score (the
    weights of the checks passed) and its likely causes (the checks' first, then the diagnostics')."""
    results = []
    for name, weight in code.checks.items():
        outcome = outcomes.get(name) or Outcome(False, f"Not run: {not_run}")
        results.append(CheckResult(name, outcome, weight=weight))
    score = sum(r.weight or 0.0 for r in results if r.passed)
    causes = [c for r in results for c in r.causes()]
    causes += [str(d["likely_cause"]) for d in diagnostics if d.get("likely_cause")]
    return GradeSummary(round(min(1.0, score), 6), tuple(results), tuple(dict.fromkeys(causes)))


def run_results(outcomes: Mapping[str, Outcome]) -> list[CheckResult]:
    """A run's checks in report order, each with what it checks."""
    return [CheckResult(c.name, outcomes[c.name], description=c.term.description) for c in RUN_CHECKS if c.name in outcomes]


def gradient_score(result: Mapping[str, Any]) -> float:
    """Weight a grade earned on the checks of gradients (what a faked result must never get)."""
    return float(sum(c["weight"] for c in result.get("checks", []) if c["name"] in GRADIENT_CHECKS and c["passed"]))
