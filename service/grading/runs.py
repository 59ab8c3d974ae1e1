""""Try it yourself": the plan of a run and its summary, decided by the check engine (checks.py).

A run executes the learner's own Function on the learner's own inputs and answers the question a
grade answers, without a reference: is this backward the derivative of this forward? The child
reports numbers (harness.py); everything said here about them is decided in the judge, by the same
functions the grades use. Torch-free.

The case sent to the child:
- forward on the inputs as given (float32 stays float32: the learner sees their own values);
- grad_outputs drawn by the child from a seed of ours (it alone knows the outputs' shapes;
  draws.run_grad_outputs): ones first (the gradients shown, as after ``y.sum().backward()``), then
  two random ones;
- the numbers of torch.autograd.gradcheck (fast_mode off), and backward again with each input
  alone requiring grad, on float64 copies when an input is float32 (float32 cannot meet gradcheck's
  tolerances; torch itself warns so);
- when the Jacobian is too large to send element by element (more than MAX_JACOBIAN_SIDE input or
  output elements), the numbers of random projections instead (checks.projections: k directions
  and k grad_outputs from a seed of ours), and beyond MAX_PROJECTED_ELEMENTS none;
- when asked (``options`` holds "gradgradcheck"), the numbers of torch.autograd.gradgradcheck (fast_mode off)
  for grad_outputs the child draws from another seed of ours (and reports: the judge redraws them;
  draws.seeded_vectors, as w is drawn here), by projections when large.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from . import custom_ops
from .cases import (
    Arg,
    Case,
    CustomOpPlan,
    GradgradPlan,
    JacobianPlan,
    ProjectionPlan,
    all_points,
    diff_inputs,
)
from .checks import MAX_PROJECTED_ELEMENTS, PROJECTIONS, Outcome, jnum
from .code_table import DEFAULT_TOLERANCES, CodeSpec, Tolerances
from .draws import seeded_vectors
from .plan import optional_check_plans, run_cases
from .registry import OPTIONS, RUN_CHECKS, Check, run_results
from .reports import Output, TorchMessage, TorchMessages, parse_report
from .run_checks import RunCase
from .spec import MAX_JACOBIAN_SIDE, load_run_inputs

#: The full Jacobian is checked up to this many input elements and output elements (each side);
#: beyond that, by random projections (the full numbers would not fit a result frame in time).
RANDOM_VJPS = 2
VALUES_SHOWN = 100


@dataclass(frozen=True)
class RunPlan:
    cases: list[Case]
    names: list[str]
    #: the case the checks are made on: the run case itself, or its float64 copy
    check_case_id: str

    @property
    def has_function(self) -> bool:
        return bool(self.cases)


def _seed(source: str, purpose: str) -> int:
    """A seed of the run's own (repeatable: the same source gets the same numbers)."""
    data = purpose.encode() + b"\0" + source.encode("utf-8", "replace")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def _jacobian_plan(tol: Tolerances, *, points: bool, seed: int) -> JacobianPlan:
    return JacobianPlan(tol.eps, tol.gradcheck_atol, tol.gradcheck_rtol, points="all" if points else None,
                        max_side=MAX_JACOBIAN_SIDE, projections=ProjectionPlan(seed, PROJECTIONS, MAX_PROJECTED_ELEMENTS))


def _float64(a: Arg) -> Arg:
    return dataclasses.replace(a, dtype="float64") if a.kind == "tensor" and a.dtype == "float32" else a


def plan_run(source: str, entry_point: str | None, inputs: list[Any] | None, *, options: Collection[str] = ()) -> RunPlan:
    """The cases of a run, with the optional checks asked for (registry.OPTIONS: "gradgradcheck",
    "forward_ad", "in_place", "vmap"). Raises ValueError for an invalid input spec or an unknown option."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise ValueError(f"unknown checks asked for: {', '.join(sorted(unknown))}")
    if inputs is None and entry_point is None:
        return RunPlan([], [], "")
    if not entry_point or inputs is None:
        raise ValueError("give both entry_point and inputs, or neither")
    norm, problems = load_run_inputs(inputs)
    if problems:
        raise ValueError("; ".join(f"{f}: {m}" for f, m in problems))
    names = [inp.name or f"input {i}" for i, inp in enumerate(norm)]
    (drawn,) = run_cases(norm, source)
    seed = int.from_bytes(hashlib.sha256(source.encode("utf-8", "replace")).digest()[:8], "big")
    case = dataclasses.replace(drawn, grad_output_seed=seed, random_grad_outputs=RANDOM_VJPS)
    cases = [case]
    check_case = case
    if any(a.differentiable and a.dtype == "float32" for a in case.args):
        check_case = dataclasses.replace(case, id="run-float64", name="float64 copies of your inputs",
                                         args=tuple(_float64(a) for a in case.args))
        cases.append(check_case)
    if all_points(check_case.args):
        cases[-1] = _checks_planned(check_case, source, options)
    # opcheck's facts on the inputs as given: the child reports them only if the entry point is a custom op
    # (however the code made it: no reading of the source decides it)
    cases[0] = dataclasses.replace(cases[0], custom_op=CustomOpPlan())
    if "in_place" in options:  # an in-place Function's input must not be a leaf that requires grad
        cases = [dataclasses.replace(c, clone_inputs=True) for c in cases]
    return RunPlan(cases, names, cases[-1].id)


def _checks_planned(check_case: Case, source: str, options: Collection[str]) -> Case:
    """The check case with the numbers of its checks asked for: gradcheck's (in full when small, by
    projections else), backward with each input alone, and the optional checks' asked for."""
    tol = DEFAULT_TOLERANCES
    small = len(all_points(check_case.args)) <= MAX_JACOBIAN_SIDE
    gradgradcheck = "gradgradcheck" in options
    gradgrad = None
    if gradgradcheck:
        # w: a random grad_output for backward's gradients (double backward for it is checked too)
        w = seeded_vectors(_seed(source, "gradgrad w"), [check_case.args[i].numel for i in diff_inputs(check_case.args)])
        gradgrad = GradgradPlan(_jacobian_plan(tol, points=True, seed=_seed(source, "gradgrad projections")), w,
                                v_seed=_seed(source, "gradgrad grad_outputs"))
    # differentiable: a check case has inputs that require grad (plan_run makes one only then)
    optional = optional_check_plans(check_case.args, options, lambda purpose: _seed(source, purpose), tol,
                                    differentiable=True)
    # torch's message is asked for when the Jacobian is made in full
    return dataclasses.replace(check_case, gradcheck=_jacobian_plan(tol, points=small, seed=_seed(source, "projections")),
                               needs_input_grad=True, torch_gradcheck=small, gradgrad=gradgrad,
                               torch_gradgradcheck=gradgradcheck, **optional)


def exercise_run_inputs(code: CodeSpec) -> list[dict[str, Any]]:
    """The input specs a "Run" of an exercise uses: its [[code.inputs]] as written (ranges, not the
    judge's hidden draws; fixed values stay fixed)."""
    return [inp.as_table() for inp in code.inputs]


def _shown(values: list[Any] | None) -> list[Any] | None:
    return None if values is None else [jnum(x) for x in values[:VALUES_SHOWN]]


def _public_inputs(case: Case, names: list[str]) -> list[dict[str, Any]]:
    """The values the run used (drawn from `range` where no value was given)."""
    out = []
    for name, a in zip(names, case.args):
        item: dict[str, Any] = {"name": name, "type": a.kind}
        if a.kind == "tensor":
            item.update(dtype=a.dtype, shape=a.shape, requires_grad=a.requires_grad, values=[jnum(x) for x in a.values])
        elif a.kind == "ints":
            item.update(value=a.value, container=a.container)
        elif a.kind != "none":
            item["value"] = jnum(a.value)
        out.append(item)
    return out


def summarize_run(plan: RunPlan, frame: Any, torch_msgs: dict[str, TorchMessages], entry_point: str | None, source: str) -> dict[str, Any]:  # noqa: C901
    """The public result of a run from the child's report frame. Raises BadOutput for a malformed report."""
    result: dict[str, Any] = {"status": "ok", "error": None, "forward": None, "gradcheck": None}
    report = parse_report(frame, plan.cases)
    if report.load_error is not None:
        result.update(status="error", error=report.load_error.to_json())
        return result
    if not plan.has_function:
        return result
    if report.entry is None or not report.entry.runs:
        result.update(status="error", error={"where": "entry point", "type": "NameError",
                                             "message": f"{entry_point} is not defined as a torch.autograd.Function subclass"
                                                        " or a torch.library custom op",
                                             "traceback": "", "line": None})
        return result
    reps = {r.id: r for r in report.cases}
    run_case, run_rep = plan.cases[0], reps[plan.cases[0].id]
    result["inputs"] = _public_inputs(run_case, plan.names)
    f = run_rep.forward
    if f.error is not None:
        result.update(status="error", error=f.error.to_json())
        # the checks whose numbers are made apart (on clones, on the op's own facts) still say what went wrong
        check_case = next(c for c in plan.cases if c.id == plan.check_case_id)
        checked = RunCase(check_case, reps[check_case.id], run_case, run_rep, plan.names, source)
        outcomes = _decided(checked, [c for c in RUN_CHECKS if c.after_forward_error])
        if outcomes:
            result.update(checks=[c.to_json() for c in run_results(outcomes)], passed=False,
                          likely_causes=list(dict.fromkeys(o.likely_cause for o in outcomes.values()
                                                           if not o.passed and o.likely_cause)))
        return result
    result["forward"] = {"outputs": [_public_output(o) for o in f.outputs]}
    diff_in = diff_inputs(run_case.args)
    vjps = run_rep.vjps
    if not diff_in or not vjps:
        return result
    if vjps[0].error is not None:
        result.update(status="error", error=vjps[0].error.to_json())
    else:
        result["gradients"] = {plan.names[i]: _shown(g) for i, g in zip(diff_in, vjps[0].grads)}

    case = next(c for c in plan.cases if c.id == plan.check_case_id)
    rep = reps[case.id]
    float32 = case is not run_case
    outcomes = _decided(RunCase(case, rep, run_case, run_rep, plan.names, source), RUN_CHECKS)
    if run_rep.custom_op is not None:
        outcomes = custom_ops.with_op_causes(outcomes, run_rep.custom_op)
    torch_msg = torch_msgs.get(case.id) or TorchMessages()
    name = "jacobian_projections" if "jacobian_projections" in outcomes else "gradcheck"
    result["gradcheck"] = _summary(name, outcomes[name], torch_msg.gradcheck)
    if float32:
        result["gradcheck"]["note"] = ("float32 cannot be checked to gradcheck's tolerances: the checks ran on float64 "
                                       "copies of your inputs; the values and gradients shown are your float32 ones.")
    if "gradgradcheck" in outcomes:
        result["gradgradcheck"] = _summary("gradgradcheck", outcomes["gradgradcheck"], torch_msg.gradgradcheck)
        if rep.gradgrad is not None and rep.gradgrad.ok:
            result["gradgradcheck"]["grad_outputs"] = [{"shape": v.shape, "dtype": v.dtype, "values": _shown(v.values)}
                                                       for v in rep.gradgrad.v]
    result["checks"] = [c.to_json() for c in run_results(outcomes)]
    result["passed"] = all(o.passed for o in outcomes.values())
    result["likely_causes"] = list(dict.fromkeys(o.likely_cause for o in outcomes.values() if not o.passed and o.likely_cause))
    for o in outcomes.values():
        if o.error is not None and result["error"] is None:
            result["error"] = o.error.to_json()
    return result


def _decided(checked: RunCase, checks: Iterable[Check]) -> dict[str, Outcome]:
    """The outcome of each of `checks` that applies to this run, by name, in report order."""
    outcomes: dict[str, Outcome] = {}
    for check in checks:
        assert check.run is not None
        outcome = check.run(checked)
        if outcome is not None:
            outcomes[check.name] = outcome
    return outcomes


def _public_output(o: Output) -> dict[str, Any]:
    if o.kind != "tensor":
        return {"kind": o.kind, "type": o.type}
    return {"kind": o.kind, "shape": o.shape, "dtype": o.dtype, "requires_grad": o.requires_grad, "values": _shown(o.values)}


def _summary(name: str, outcome: Outcome, torch_msg: TorchMessage | None) -> dict[str, Any]:
    """A Jacobian check at the top of a run's result: which check was made, its verdict, and torch's
    own message (informative only; given when the Jacobian is made in full)."""
    out = {"check": name, "passed": outcome.passed, "message": outcome.message,
           "diagnostics": [d.to_json() for d in outcome.diagnostics],
           "torch_message": torch_msg.message if torch_msg else None}
    if not outcome.passed and outcome.likely_cause:
        out["likely_cause"] = outcome.likely_cause
    return out
