"""The batching checks, decided by the judge: does the Function work under torch.func.vmap
(``check_vmap``), and does its backward work for a batch of grad_outputs at once
(``check_batched_grad``, torch.autograd.gradcheck's check_batched_grad)?

The child computes numbers (harness._vmap_numbers, harness._batched_grad_numbers) for the judge's
plans (cases.VmapPlan, cases.BatchedGradPlan); reports.parse_report checks their structure against
the plans; everything said about them is decided here, in pure Python (no torch):

- vmap: for each call the plan makes (in_dims 0; the batch as a new last dimension with out_dims
  -1; some tensors shared by the whole batch), the outputs of vmap must have the shapes of one call
  per batch entry with the batch where out_dims puts it, and the values of each entry's own call
  (torch.allclose's rule, NaN where both have NaN allowed: both computed the same thing); then the
  gradients through vmap must be the gradients of each entry's own backward (summed over the batch
  for an input the call shares), for the same grad_outputs.
- batched_grad: for each output requiring grad, backward for the batch's grad_outputs at once must
  give each entry's gradients alone, compared as gradcheck compares them (torch.allclose, NaN never
  close).

An exception the learner's code raised is data: its message names the cause (``vmap_error_cause``).
In a grade (`ref`: the reference's report, computed in a trusted process for the same seeds), each
entry's own outputs and gradients must also be the reference's, so that a child reporting one set of
numbers twice cannot pass. Torch-free, like the rest of the judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .cases import Arg, BatchedGradPlan, Case, VmapConfig, VmapPlan, diff_inputs
from .checks import Outcome, error_cause, fmt, unravel
from .draws import numel
from .reports import CaseReport, ChildError, Grads, VmapCall, VmapNumbers

__all__ = ["check_vmap", "check_batched_grad", "vmap_error_cause"]

#: torch's messages (torch 2.13: torch/autograd/function.py, torch/_functorch/autograd_function.py,
#: the batching rules' errors) -> the cause they show.
_DATA_DEPENDENT = (".item()", "data-dependent control flow", "dynamic shape", "Cannot access data pointer",
                   "aten::item", "aten::is_nonzero", "aten::_local_scalar_dense", "numpy()")
_IN_PLACE = ("inplace", "in-place", "returned as-is", "doesn't match the broadcast shape", "not being vmapped over",
             "has more elements than `self`")


def vmap_error_cause(err: ChildError, rule: str = "none") -> str:
    """The likely cause of an exception raised under vmap (`rule`: VmapNumbers.rule)."""
    msg = err.message
    if "must override the setup_context" in msg:
        return "vmap_setup_context_missing"
    if "does not have vmap support" in msg or "both generate_vmap_rule=True and an overridden vmap" in msg:
        return "vmap_rule_missing"
    if rule == "staticmethod" and any(s in msg for s in ("vmap staticmethod", "out_dims", "Dimension out of range")):
        return "vmap_wrong_out_dims"
    if any(s in msg for s in _DATA_DEPENDENT):
        return "vmap_data_dependent"
    if any(s in msg.lower() for s in _IN_PLACE):
        return "vmap_in_place"
    if "does not require grad and does not have a grad_fn" in msg:
        return "output_detached"
    return "vmap_error"


# --------------------------------------------------------------------------- words


def _call_words(cfg: VmapConfig, names: Sequence[str]) -> str:
    dims = ", ".join("None" if d is None else str(d) for d in cfg.in_dims)
    shared = [names[i] for i, d in enumerate(cfg.in_dims) if d is None]
    words = f"vmap with in_dims=({dims}{',' if len(cfg.in_dims) == 1 else ''}) and out_dims={cfg.out_dims}"
    return words + (f" ({', '.join(shared)} shared by the whole batch)" if shared else "")


def _entry_words(plan: VmapPlan, b: int) -> str:
    return "batch entry 0 (your inputs)" if b == 0 else f"batch entry {b} (the batched inputs times {plan.scales[b]:g})"


def _out_words(k: int, n_out: int) -> str:
    return f"output {k}" if n_out > 1 else "the output"


def _error_words(err: ChildError) -> str:
    return f"{err.type}: {err.message}" if err.message else err.type


# --------------------------------------------------------------------------- numbers


def _same(a: Any, e: Any, atol: float, rtol: float, *, nan_equal: bool) -> bool:
    """torch.allclose's rule for one pair (e expected); with `nan_equal`, NaN matches NaN."""
    if a == e:
        return True
    if isinstance(a, float) and isinstance(e, float):
        if math.isnan(a) and math.isnan(e):
            return nan_equal
        if math.isinf(a) or math.isinf(e):
            return False  # equal infinities returned above; torch.allclose: no other pair is close
    return bool(abs(a - e) <= atol + rtol * abs(e))


def _first_differing(a: Sequence[Any], e: Sequence[Any], atol: float, rtol: float, *, nan_equal: bool) -> int | None:
    """The element furthest outside tolerance (a NaN first), None when all are close."""
    worst_j, worst = None, -math.inf
    for j, (x, y) in enumerate(zip(a, e)):
        if _same(x, y, atol, rtol, nan_equal=nan_equal):
            continue
        d = abs(x - y) - (atol + rtol * abs(y))
        if d != d:
            return j
        if d > worst:
            worst_j, worst = j, d
    return worst_j


def _batch_position(out_dims: int, ndim: int) -> int:
    """Where out_dims puts the batch in an output whose entries have `ndim` dimensions."""
    return out_dims if out_dims >= 0 else out_dims + ndim + 1


def _batched_shape(single: Sequence[int], batch: int, out_dims: int) -> list[int] | None:
    d = _batch_position(out_dims, len(single))
    if not 0 <= d <= len(single):
        return None
    return list(single[:d]) + [batch] + list(single[d:])


def _entry_of(values: Sequence[Any], single: Sequence[int], batch: int, d: int, b: int) -> list[Any]:
    """Entry b of a batched tensor's flat values, the batch at dimension d of a tensor whose entries
    have shape `single`."""
    post = numel(single[d:])
    pre = numel(single[:d])
    return [values[(p * batch + b) * post + q] for p in range(pre) for q in range(post)]


def _zeros_if_none(g: list[Any] | None, n: int) -> list[Any]:
    return g if g is not None else [0.0] * n


def _sum_entries(rows: Sequence[list[Any]]) -> list[float]:
    if not rows:
        return []
    out = []
    for column in zip(*rows):
        try:
            out.append(math.fsum(column))
        except (ValueError, OverflowError):
            out.append(float(sum(column)))
    return out


# --------------------------------------------------------------------------- vmap


def check_vmap(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:
    """vmap of the Function over the plan's batch against one call per batch entry: outputs (shapes,
    then values), then gradients, call after call; the first difference is the verdict."""
    plan = case.vmap
    if plan is None:
        raise ValueError(f"case {case.id} has no vmap plan")
    numbers = rep.vmap
    if not rep.forward.ok or numbers is None:
        err = rep.forward.error
        return Outcome(False, "Not checked: forward raised an exception" + (f" ({_error_words(err)})." if err else "."),
                       "forward_error", error=err)
    if numbers.error is not None:
        return Outcome(False, f"Your Function could not be looked at for vmap: {_error_words(numbers.error)}",
                       "vmap_error", error=numbers.error)
    ref_numbers = ref.vmap if ref is not None else None
    if ref_numbers is not None and (ref_numbers.error is not None or any(
            c.single_error or c.vmap_error or c.single_grads_error or c.vmap_grads_error for c in ref_numbers.calls)):
        ref_numbers = None  # the model answer itself does not run under vmap: the submission is checked alone
    zero_dims_passed = False
    differentiable = _differentiable_outputs(rep)
    for pos, (cfg, call) in enumerate(zip(plan.configs, numbers.calls)):
        ref_call = ref_numbers.calls[pos] if ref_numbers is not None else None
        unlike = _unlike_forward(plan.grads and cfg.grads and bool(diff_inputs(case.args)), call, differentiable, ref_call)
        if unlike is not None:
            return unlike
        out = _check_call(case.args, plan, cfg, call, numbers, names, zero_dims_passed, ref_call)
        if not out.passed:
            return out
        zero_dims_passed = zero_dims_passed or (all(d in (None, 0) for d in cfg.in_dims) and cfg.out_dims == 0)
    n = len(plan.configs)
    grads = " and gradients" if plan.grads and diff_inputs(case.args) else ""
    return Outcome(True, f"vmap over a batch of {plan.batch} gives the outputs{grads} of one call per batch entry "
                         f"({n} way{'s' if n > 1 else ''} of batching).")


def _check_call(args: Sequence[Arg], plan: VmapPlan, cfg: VmapConfig, call: VmapCall, numbers: VmapNumbers,  # noqa: C901
                names: Sequence[str], zero_dims_passed: bool, ref: VmapCall | None) -> Outcome:
    how = _call_words(cfg, names)
    if call.single_error is not None:
        err = call.single_error
        return Outcome(False, f"Called on one batch entry alone (your inputs, or the batched ones times a factor below "
                              f"one), forward raised {_error_words(err)}", "forward_error", error=err)
    if call.vmap_error is not None:
        err = call.vmap_error
        return Outcome(False, f"Under {how}, your Function raised {_error_words(err)}",
                       vmap_error_cause(err, numbers.rule), error=err)
    assert call.vmap is not None  # parsed: a call without an error has vmap's outputs
    n_out = len(call.single[0])
    if len(call.vmap) != n_out:
        return Outcome(False, f"Under {how}, your Function returned {len(call.vmap)} output(s); called on one batch "
                              f"entry alone it returns {n_out}.", "vmap_mismatch")
    nonzero = any(d not in (None, 0) for d in cfg.in_dims) or cfg.out_dims != 0
    out_dims_cause = "vmap_wrong_out_dims" if numbers.rule == "staticmethod" else "vmap_mismatch"
    for k in range(n_out):
        got = call.vmap[k]
        entries = [e[k] for e in call.single]
        what = _out_words(k, n_out)
        if got.kind != "tensor" or any(e.kind != "tensor" for e in entries):  # torch's vmap raises for those
            return Outcome(False, f"Under {how}, {what} is not a tensor: vmap batches tensor outputs only.",
                           "vmap_mismatch")
        shape = entries[0].shape
        if any(e.shape != shape for e in entries):
            return Outcome(False, f"Called on each batch entry alone, {what} has a different shape for different "
                                  f"entries ({', '.join(str(e.shape) for e in entries)}): vmap cannot stack them.",
                           "vmap_mismatch")
        want = _batched_shape(shape, plan.batch, cfg.out_dims)
        if got.shape != want:
            return Outcome(False, f"Under {how}, {what} has shape {got.shape}; called on one batch entry alone it has "
                                  f"shape {shape}, so with a batch of {plan.batch} it should have shape {want} (the "
                                  f"batch at dimension {_batch_position(cfg.out_dims, len(shape))}).", out_dims_cause,
                           shapes={"output": what, "vmap": list(got.shape), "expected": want})
        if got.dtype != entries[0].dtype:
            return Outcome(False, f"Under {how}, {what} has dtype {got.dtype}; called alone it has dtype "
                                  f"{entries[0].dtype}.", "vmap_mismatch")
        if got.values is None or any(e.values is None for e in entries):
            return Outcome(False, f"Not checked: {what} is too large to compare under vmap. Use smaller inputs.")
        d = _batch_position(cfg.out_dims, len(shape))
        for b, e in enumerate(entries):
            a = _entry_of(got.values, shape, plan.batch, d, b)
            assert e.values is not None
            j = _first_differing(a, e.values, plan.atol, plan.rtol, nan_equal=True)
            if j is not None:
                cause = out_dims_cause if nonzero and zero_dims_passed else "vmap_mismatch"
                return Outcome(False, f"Under {how}, {_entry_words(plan, b)} of {what} differs from calling your "
                                      f"Function on that entry alone: at index {unravel(j, shape)} vmap gives "
                                      f"{fmt(a[j])}; alone it gives {fmt(e.values[j])}.", cause)
            if ref is not None and ref.single:
                r = ref.single[b][k] if k < len(ref.single[b]) else None
                if r is None or r.values is None or r.shape != shape:
                    return Outcome(False, f"Called on {_entry_words(plan, b)} alone, {what} is not the model answer's "
                                          "(see the forward check).", "forward_wrong")
                j = _first_differing(e.values, r.values, plan.atol, plan.rtol, nan_equal=True)
                if j is not None:
                    return Outcome(False, f"Called on {_entry_words(plan, b)} alone, {what} at index "
                                          f"{unravel(j, shape)} is {fmt(e.values[j])}; the model answer gives "
                                          f"{fmt(r.values[j])} (see the forward check).", "forward_wrong")
    return _check_call_grads(args, plan, cfg, call, numbers, names, ref)


def _check_call_grads(args: Sequence[Arg], plan: VmapPlan, cfg: VmapConfig, call: VmapCall, numbers: VmapNumbers,  # noqa: C901
                      names: Sequence[str], ref: VmapCall | None) -> Outcome:
    """The gradients through vmap against each entry's own backward, for the same grad_outputs."""
    how = _call_words(cfg, names)
    if call.single_grads_error is not None:
        err = call.single_grads_error
        return Outcome(False, f"backward, called for one batch entry alone, raised {_error_words(err)}",
                       error_cause(err, "backward", len(call.diff_outputs or ())), error=err)
    if call.vmap_grads_error is not None:
        err = call.vmap_grads_error
        return Outcome(False, f"Through {how}, backward raised {_error_words(err)}", vmap_error_cause(err, numbers.rule),
                       error=err)
    if call.single_grads is None or call.vmap_grads is None:
        return Outcome(True, "")  # no gradient asked, or no output requires grad
    for p, i in enumerate(diff_inputs(args)):
        n = args[i].numel
        alone = [_zeros_if_none(g[p], n) for g in call.single_grads]
        through = call.vmap_grads[p]
        if cfg.in_dims[i] is None:
            a, e = _zeros_if_none(through[0], n), _sum_entries(alone)
            j = _first_differing(a, e, plan.atol * plan.batch, plan.rtol, nan_equal=True)
            if j is not None:
                return Outcome(False, f"Through {how}, the gradient for {names[i]} at index {unravel(j, args[i].shape)} "
                                      f"is {fmt(a[j])}; the sum of backward's gradients for each batch entry alone is "
                                      f"{fmt(e[j])}.", "vmap_mismatch")
        else:
            for b, e in enumerate(alone):
                a = _zeros_if_none(through[b], n)
                j = _first_differing(a, e, plan.atol, plan.rtol, nan_equal=True)
                if j is not None:
                    return Outcome(False, f"Through {how}, the gradient for {names[i]} of {_entry_words(plan, b)} at "
                                          f"index {unravel(j, args[i].shape)} is {fmt(a[j])}; backward for that entry "
                                          f"alone gives {fmt(e[j])}.", "vmap_mismatch")
        if ref is not None and ref.single_grads is not None:
            for b, e in enumerate(alone):
                r = _zeros_if_none(ref.single_grads[b][p], n)
                j = _first_differing(e, r, plan.atol, plan.rtol, nan_equal=True)
                if j is not None:
                    return Outcome(False, f"backward's gradient for {names[i]} of {_entry_words(plan, b)} at index "
                                          f"{unravel(j, args[i].shape)} is {fmt(e[j])}; the model answer gives "
                                          f"{fmt(r[j])} (see the gradient checks).", "wrong_value")
    return Outcome(True, "")


def _differentiable_outputs(rep: CaseReport) -> list[int]:
    """The outputs of forward's own call that require grad: those whose gradients are compared."""
    return [k for k, o in enumerate(rep.forward.outputs) if o.kind == "tensor" and o.requires_grad]


def _unlike_forward(grads: bool, call: VmapCall, differentiable: list[int], ref: VmapCall | None) -> Outcome | None:
    """A call's numbers must be of forward's differentiable outputs (and in a grade the model
    answer's): a report that names none would have its gradients never compared."""
    if not grads or call.single_error or call.vmap_error or call.single_grads_error or call.vmap_grads_error:
        return None
    named = list(call.diff_outputs or [])
    if named != differentiable or (differentiable and (call.single_grads is None or call.vmap_grads is None)):
        return Outcome(False, "The gradients through vmap are not those of forward's outputs that require grad: "
                              "forward does not give the same outputs on the same inputs.", "forward_not_repeatable")
    if ref is not None and ref.diff_outputs is not None and list(ref.diff_outputs) != named:
        return Outcome(False, f"Under vmap the outputs that require grad are {named}; the model answer's are "
                              f"{list(ref.diff_outputs)}.", "output_detached")
    return None


# --------------------------------------------------------------------------- batched gradients


def check_batched_grad(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:  # noqa: C901
    """torch.autograd.gradcheck's check_batched_grad, decided from the child's numbers: for each
    output requiring grad, backward for the batch's grad_outputs at once against each alone."""
    plan = case.batched_grad
    if plan is None:
        raise ValueError(f"case {case.id} has no batched-gradient plan")
    numbers = rep.batched_grad
    if not rep.forward.ok or numbers is None or numbers.error is not None:
        err = rep.forward.error or (numbers.error if numbers is not None else None)
        return Outcome(False, "Not checked: forward raised an exception" + (f" ({_error_words(err)})." if err else "."),
                       "forward_error", error=err)
    ref_numbers = ref.batched_grad if ref is not None else None
    named = [o.index for o in numbers.outputs]
    if named != _differentiable_outputs(rep):
        return Outcome(False, "The batched gradients are not those of forward's outputs that require grad: forward "
                              "does not give the same outputs on the same inputs.", "forward_not_repeatable")
    if ref_numbers is not None and ref_numbers.ok and [o.index for o in ref_numbers.outputs] != named:
        return Outcome(False, f"The outputs that require grad are {named}; the model answer's are "
                              f"{[o.index for o in ref_numbers.outputs]}.", "output_detached")
    if not numbers.outputs:
        return Outcome(True, "No output requires grad: there is no backward to batch.")
    n_out = max(len(rep.forward.outputs), 1 + max(o.index for o in numbers.outputs))
    for pos, item in enumerate(numbers.outputs):
        what = _out_words(item.index, n_out)
        if item.single_error is not None:
            err = item.single_error
            return Outcome(False, f"backward for a grad_output of {what} raised {_error_words(err)}",
                           error_cause(err, "backward", len(numbers.outputs)), error=err)
        if item.batched_error is not None:
            err = item.batched_error
            cause = vmap_error_cause(err)
            return Outcome(False, f"backward for a batch of {plan.batch} grad_outputs of {what} at once raised "
                                  f"{_error_words(err)}", "backward_error" if cause == "vmap_error" else cause, error=err)
        out = _compare_batched(case.args, plan, item.single or [], item.batched or [], what, names)
        if not out.passed:
            return out
        if ref_numbers is not None and ref_numbers.ok:
            r = ref_numbers.outputs[pos]  # the same outputs as the submission's (above)
            if r.single is not None:
                out = _compare_with_ref(case.args, plan, item.single or [], r.single, what, names)
                if not out.passed:
                    return out
    return Outcome(True, f"backward for a batch of {plan.batch} grad_outputs at once gives each one's gradients "
                         f"({len(numbers.outputs)} output(s) requiring grad).")


def _compare_batched(args: Sequence[Arg], plan: BatchedGradPlan, single: Sequence[Grads], batched: Grads, what: str,
                     names: Sequence[str]) -> Outcome:
    for p, i in enumerate(diff_inputs(args)):
        n = args[i].numel
        flat = _zeros_if_none(batched[p], plan.batch * n)
        for b, grads in enumerate(single):
            a, e = flat[b * n:(b + 1) * n], _zeros_if_none(grads[p], n)
            j = _first_differing(a, e, plan.atol, plan.rtol, nan_equal=False)
            if j is not None:
                return Outcome(False, f"For a batch of {plan.batch} grad_outputs of {what} at once, backward's gradient "
                                      f"for {names[i]} for grad_output {b} at index {unravel(j, args[i].shape)} is "
                                      f"{fmt(a[j])}; for that grad_output alone it is {fmt(e[j])}.",
                               "batched_grad_mismatch")
    return Outcome(True, "")


def _compare_with_ref(args: Sequence[Arg], plan: BatchedGradPlan, single: Sequence[Grads], ref: Sequence[Grads], what: str,
                      names: Sequence[str]) -> Outcome:
    for p, i in enumerate(diff_inputs(args)):
        n = args[i].numel
        for b, (grads, want) in enumerate(zip(single, ref)):
            a, e = _zeros_if_none(grads[p], n), _zeros_if_none(want[p], n)
            j = _first_differing(a, e, plan.atol, plan.rtol, nan_equal=True)
            if j is not None:
                return Outcome(False, f"For random grad_output {b} of {what}, backward's gradient for {names[i]} at index "
                                      f"{unravel(j, args[i].shape)} is {fmt(a[j])}; the model answer gives {fmt(e[j])} "
                                      "(see the gradient checks).", "wrong_value")
    return Outcome(True, "")

