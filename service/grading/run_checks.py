"""How a "Try it yourself" run decides each of its checks (registry.py names them, in order).

A run has no reference: each check compares the learner's backward with finite differences of the
learner's own forward, from the numbers the child reported for the run's check case (the run case
itself, or its float64 copy), by the check engine's functions (checks.py), as grades do. A function
returns None when its check does not apply to this run: the Jacobian is checked in full
(gradcheck) or by random projections (jacobian_projections), and the checks of backward's answers
need the numbers of one of them. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from . import batching, checks, custom_ops
from .cases import Case, diff_inputs
from .checks import MAX_PROJECTED_ELEMENTS, Jacobians, Outcome
from .draws import numel
from .forward_ad import check_forward_ad
from .in_place import check_in_place
from .reports import CaseReport, Returned


@dataclass(frozen=True)
class RunCase:
    """The numbers a run's checks read: the check case and its report, and the run case as given
    (forward's effect on the learner's own inputs is checked there)."""

    case: Case
    rep: CaseReport
    run_case: Case
    run_rep: CaseReport
    names: list[str]
    source: str

    @property
    def mode(self) -> str:
        gc = self.rep.gradcheck
        return gc.mode if gc else "full"

    @cached_property
    def float32(self) -> bool:
        return self.rep.forward.ok and checks.computes_in_float32(self.case.args, self.rep.forward.outputs)

    @cached_property
    def jacobian(self) -> Jacobians | None:
        """The numerical Jacobian of a full check, when forward's numbers allow it and both forwards
        agree on which outputs require grad."""
        gc, plan = self.rep.gradcheck, self.case.gradcheck
        if self.mode != "full" or gc is None or plan is None or gc.stage in ("forward", "numerical"):
            return None
        try:
            jac = checks.numerical_jacobian(self.case.args, gc, plan)
        except (ValueError, IndexError, TypeError):
            return None
        if jac.diff_outputs and self.rep.diff_outputs != jac.diff_outputs:
            return None  # two forwards disagree on which outputs require grad
        return jac

    @cached_property
    def backward_comparable(self) -> bool:
        """Whether backward's answers can be checked: it was called, and the Jacobian's numbers
        (in full or projected) cover the outputs it was called for."""
        if not self.rep.vjps:
            return False
        if self.mode == "projections":
            gc = self.rep.gradcheck
            assert gc is not None
            return (gc.stage not in ("forward", "numerical") and any(gc.out_rg)
                    and self.rep.diff_outputs == [k for k, rg in enumerate(gc.out_rg) if rg])
        jac = self.jacobian
        return jac is not None and bool(jac.diff_outputs)

    @property
    def returned(self) -> Returned | None:
        return next((vr.returned for vr in self.rep.vjps if vr.returned is not None), None)


def gradcheck(r: RunCase) -> Outcome | None:
    """torch.autograd.gradcheck's verdict, decided from its numbers (or why the Jacobian is too large)."""
    args, gc, plan = r.case.args, r.rep.gradcheck, r.case.gradcheck
    assert plan is not None  # planned whenever an input requires grad, and gradients were shown
    if r.mode == "projections":
        return None
    if gc is not None and r.mode == "too_large":
        n_in = sum(args[i].numel for i in diff_inputs(args))
        width = sum(numel(s) for s in gc.out_shapes)
        return Outcome(False, f"Not checked: the Jacobian ({width} output elements by {n_in} input elements) "
                              f"is too large to check in one run, even by random projections (made up to "
                              f"{MAX_PROJECTED_ELEMENTS} input and output elements together). Use smaller inputs.")
    return checks.jacobian(args, gc, plan, r.names, float32=r.float32)


def jacobian_projections(r: RunCase) -> Outcome | None:
    if r.mode != "projections":
        return None
    plan = r.case.gradcheck
    assert plan is not None
    return checks.projections(r.case.args, r.rep.gradcheck, plan, r.names, float32=r.float32)


def random_vjp(r: RunCase) -> Outcome | None:
    if not r.backward_comparable:
        return None
    args, plan, rep = r.case.args, r.case.gradcheck, r.rep
    assert plan is not None
    if r.mode == "projections":
        assert rep.gradcheck is not None
        return checks.projected_vjps(args, rep.gradcheck, plan, rep.vjp_sets, rep.vjps, r.names, float32=r.float32)
    assert r.jacobian is not None
    return checks.random_vjps(args, r.jacobian, rep.vjp_sets, rep.vjps, 0, r.names, plan.atol, plan.rtol, float32=r.float32)


def backward_arity(r: RunCase) -> Outcome | None:
    return checks.backward_arity(r.case.args, r.returned, r.names) if r.backward_comparable else None


def needs_input_grad(r: RunCase) -> Outcome | None:
    alone, vjps, plan = r.rep.needs_input_grad, r.rep.vjps, r.case.gradcheck
    if not r.backward_comparable or alone is None or plan is None:
        return None
    args = r.case.args
    consulted = checks.uses_needs_input_grad(r.source)
    if r.mode == "projections":
        if not vjps[-1].ok:
            return None
        return checks.needs_input_grad(args, checks.grads_by_input(args, vjps[-1].grads), alone, r.names, plan.atol, plan.rtol,
                                       consulted=consulted, returned=r.returned,
                                       source="with every input requiring grad (checked by projections) it gave")
    assert r.jacobian is not None
    return checks.needs_input_grad(args, checks.numerical_vjp(r.jacobian, args, r.rep.vjp_sets[-1]), alone, r.names,
                                   plan.atol, plan.rtol, consulted=consulted, returned=r.returned)


def grad_output_unchanged(r: RunCase) -> Outcome | None:
    return checks.grad_output_unchanged(r.rep.vjps) if r.backward_comparable else None


def inputs_unchanged(r: RunCase) -> Outcome | None:
    return checks.inputs_unchanged(r.run_case.args, r.run_rep.forward.inputs_after, r.names, r.run_rep.returned_inputs)


def gradgradcheck(r: RunCase) -> Outcome | None:
    if r.case.gradgrad is None:
        return None
    return checks.gradgradcheck(r.case.args, r.rep.gradgrad, r.case.gradgrad, r.names)


def forward_ad(r: RunCase) -> Outcome | None:
    return None if r.case.forward_ad is None else check_forward_ad(r.case, r.rep, r.names)


def in_place(r: RunCase) -> Outcome | None:
    return None if r.case.in_place is None else check_in_place(r.case, r.rep, r.names)
def vmap(r: RunCase) -> Outcome | None:
    return None if r.case.vmap is None else batching.check_vmap(r.case, r.rep, r.names)


def batched_grad(r: RunCase) -> Outcome | None:
    return None if r.case.batched_grad is None else batching.check_batched_grad(r.case, r.rep, r.names)


def _op_check(decide: Callable[..., Outcome]) -> Callable[[RunCase], Outcome | None]:
    """One of opcheck's tests, on the run case (the inputs as given), when the entry point is a custom op."""
    def run(r: RunCase) -> Outcome | None:
        return None if r.run_rep.custom_op is None else decide(r.run_case, r.run_rep, r.names)
    return run


op_schema = _op_check(custom_ops.check_op_schema)
op_autograd_registration = _op_check(custom_ops.check_op_autograd_registration)
op_fake_tensor = _op_check(custom_ops.check_op_fake_tensor)
op_aot_dispatch = _op_check(custom_ops.check_op_aot_dispatch)
