"""The in-place check ("in_place"): is a Function that changes an input in place safe inside a bigger
expression?

torch's rules (torch/autograd/function.py, ``FunctionCtx.mark_dirty``, and what
torch/csrc/autograd/custom_function.cpp does with it, as seen from Python in torch 2.13):

- a forward that changes an input in place must give it to ``ctx.mark_dirty`` and return it. torch
  then returns that very tensor object, bumps its version counter once more, and moves its history
  onto the Function (``x.grad_fn`` becomes the Function's node), so every later use of ``x`` goes
  through backward;
- without ``ctx.mark_dirty``, an input returned as is comes back as a *view* of it (``view_as``),
  and the input keeps its old history: a later use of ``x`` itself reaches the leaf around the
  Function, whose gradient is then silently wrong. torch's own gradcheck does not see it (on leaves
  it fails with "Output 0 of ... is a view and its base ... has been modified inplace" only because
  its finite differences write into the input; on clones it passes);
- an input marked dirty but not returned: "Some elements marked as dirty during the forward method
  were not returned as output" (forward raises);
- a tensor marked dirty that is not an input: a UserWarning ("ctx.mark_dirty() received a tensor that
  was not an input"), nothing else;
- an input marked dirty that is a leaf requiring grad: "a leaf Variable that requires grad has been
  used in an in-place operation", raised after forward already changed it. Without
  ``ctx.mark_dirty`` nothing is raised and the leaf's values change under autograd;
- a tensor saved with ``ctx.save_for_backward`` (or kept on ctx) before the in-place change is saved
  when forward returns, so the version check passes and backward reads the new values: a wrong
  gradient, nothing raised.

The child (``harness._in_place``) reports facts and numbers for a clone of each input that requires
grad (the op before), the Function, then each differentiable output and each clone as it is after
the call times w (the op after), with grad_outputs v; the judge redraws w and v
(``draws.in_place_vectors``), makes the finite differences of the whole expression itself from the
values reported at nearby points, and decides here. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .cases import Arg, Case, InPlacePlan, diff_inputs, to_float32
from .checks import Diagnostic, Outcome, close, detect_cause, dot, fmt, projection_tolerance, unravel
from .draws import in_place_vectors, projection_vectors
from .reports import CaseReport, ChildError, InPlaceInput, InPlaceNumbers

CHECK = "in_place"

#: torch's words for the mistakes it names itself (torch 2.13).
DIRTY_NOT_RETURNED = "marked as dirty during the forward method were not returned"
DIRTY_NOT_INPUT = "received a tensor that was not an input"
LEAF_IN_PLACE = "leaf Variable that requires grad"


def _same(after: Sequence[float], spec: Arg) -> bool:
    """Whether values reported after the call are the input's (as its dtype stores them)."""
    before = spec.values
    if len(after) != len(before):
        return False
    if spec.dtype == "float32":
        return all(a == to_float32(b) or (a != a and b != b) for a, b in zip(after, before))
    if spec.dtype in ("float64", "int64", "int32", "bool"):
        return all(a == b or (a != a and b != b) for a, b in zip(after, [int(v) if isinstance(v, bool) else v for v in before]))
    return all(abs(a - b) <= 1e-2 + 1e-2 * abs(b) for a, b in zip(after, before))  # half precision: rounded by torch


def changed(inp: InPlaceInput, spec: Arg) -> bool:
    """Whether the call changed the input in place: its version counter moved (an in-place op on it
    or on a view of it; ctx.mark_dirty moves it too), or its values differ (a change made through
    .data, which has a counter of its own)."""
    return inp.version_after > inp.version_before or (inp.values_after is not None and not _same(inp.values_after, spec))


def marked_dirty(inp: InPlaceInput) -> bool:
    """Whether the call returned the input object itself, its counter moved: what torch does with an
    input marked dirty (unmarked, it returns a view of it instead)."""
    return inp.returned_as is not None and inp.version_after > inp.version_before


def _overwritten(ip: InPlaceNumbers, diff: Sequence[int], args: Sequence[Arg]) -> list[int]:
    """The inputs whose values the call changed (not only their version counter)."""
    return [i for inp, i in zip(ip.inputs, diff) if inp.values_after is not None and not _same(inp.values_after, args[i])]


def _first_change(inp: InPlaceInput, spec: Arg) -> str:
    """Where the values changed, in words (empty when they did not, or are not known)."""
    after = inp.values_after
    if after is None or _same(after, spec):
        return ""
    j = next((j for j, (a, b) in enumerate(zip(after, spec.values)) if a != b), 0)
    return f"at index {unravel(j, spec.shape)} it was {fmt(spec.values[j])} and became {fmt(after[j])}"


def _expression(names: Sequence[str]) -> str:
    """The bigger expression, in words."""
    clones = " and ".join(f"{n}.clone()" for n in names)
    return (f"a bigger expression ({clones}, your Function, then its output and {' and '.join(names)} after the call "
            "each times random factors)")


class _Gradient:
    """The expression's gradient against the judge's finite differences of the values reported."""

    def __init__(self, plan: InPlacePlan, args: Sequence[Arg], ip: InPlaceNumbers) -> None:
        self.plan, self.args, self.ip = plan, args, ip
        self.diff = diff_inputs(args)
        sizes = ip.part_sizes([args[i] for i in self.diff])
        _, v = in_place_vectors(plan.seed, sizes)
        self.v = [x for part in v for x in part]
        self.n_out = len(self.v)
        self.grads = [[0.0] * args[i].numel if g is None else list(g) for g, i in zip(ip.grads or [], self.diff)]

    def fd(self, m: int) -> list[float]:
        eps = self.plan.eps
        return [(b - a) / (2 * eps) for a, b in zip(self.ip.minus[m], self.ip.plus[m])]

    def mismatch(self, names: Sequence[str]) -> Outcome | None:
        """The first input (full mode: its worst element) or random direction where the gradient and
        finite differences disagree, as an Outcome with no cause yet; None when they agree."""
        atol, rtol = self.plan.atol, self.plan.rtol
        if self.ip.mode == "full":
            m = 0
            for pos, i in enumerate(self.diff):
                a = self.grads[pos]
                n = [dot(self.v, self.fd(m + j)) for j in range(self.args[i].numel)]
                m += self.args[i].numel
                bad = [j for j, (x, y) in enumerate(zip(a, n)) if not close(x, y, atol, rtol)]
                if bad:
                    j = max(bad, key=lambda j: math.inf if a[j] != a[j] or n[j] != n[j] else abs(a[j] - n[j]))
                    cause, info = detect_cause(a, n, None, False, atol, rtol, False)
                    diag = Diagnostic(CHECK, names[i], unravel(j, self.args[i].shape), a[j], n[j], self.args[i].values[j],
                                      "random", atol, rtol, cause, extra=info)
                    return Outcome(False, f"the gradient for {names[i]} at index {diag.index} is {fmt(a[j])}; finite "
                                          f"differences of the expression give {fmt(n[j])}", cause, (diag,))
            return None
        if self.ip.mode != "projections":
            return None
        proj = self.plan.projections
        n_in = sum(self.args[i].numel for i in self.diff)
        flat = [x for g in self.grads for x in g]
        scale = math.sqrt(dot(self.v, self.v) / self.n_out) if self.n_out else 1.0
        an, nu, tols = [], [], []
        for k, u in enumerate(projection_vectors(proj.seed, "u", proj.k, n_in)):
            d = self.fd(k)
            an.append(dot(flat, u))
            nu.append(dot(self.v, d))
            tols.append(projection_tolerance(atol, rtol, u, d, scale, self.n_out))
        bad = [k for k, (a, n, t) in enumerate(zip(an, nu, tols)) if not abs(a - n) <= t]
        if not bad:
            return None
        k = bad[0]
        cause, info = _projection_cause(an, nu, tols)
        who = ", ".join(names[i] for i in self.diff)
        diag = Diagnostic(CHECK, who, [], an[k], nu[k], None, "random", atol, rtol, cause,
                          extra={"direction": f"random u{k + 1}", "tolerance": tols[k], **info})
        return Outcome(False, f"the gradient projected on random direction u{k + 1} is {fmt(an[k])}; finite differences "
                              f"of the expression along u{k + 1} give {fmt(nu[k])} (tolerance {fmt(tols[k])})", cause, (diag,))


def _projection_cause(an: Sequence[float], nu: Sequence[float], tols: Sequence[float]) -> tuple[str, dict[str, float]]:
    """detect_cause over the projections, each with its own tolerance."""
    if not all(math.isfinite(a) for a in an):
        return "wrong_value", {}
    if all(abs(a + n) <= t for a, n, t in zip(an, nu, tols)):
        return "wrong_sign", {}
    nn = dot(nu, nu)
    if nn > 0:
        c = dot(an, nu) / nn
        if abs(c - 1) > 1e-3 and abs(c) > 1e-6 and all(abs(a - c * n) <= t for a, n, t in zip(an, nu, tols)):
            return "constant_factor", {"factor": round(c, 4)}
    return "wrong_value", {}


def _error_outcome(ip: InPlaceNumbers, err: ChildError, dnames: Sequence[str]) -> Outcome:
    expr = _expression(dnames)
    if ip.stage == "forward":
        if DIRTY_NOT_RETURNED in err.message:
            return Outcome(False, f"forward marked an input dirty with ctx.mark_dirty but did not return it (torch: "
                                  f"\"{err.message}\"). Return the input you changed itself (return x).",
                           "dirty_not_returned", error=err)
        return Outcome(False, f"forward raised {err.type} when called in {expr}: {err.message}", "forward_error",
                       error=err)
    if ip.stage == "backward":  # (torch's "is a view and its base ... modified inplace": an unmarked input, named before)
        return Outcome(False, f"backward raised {err.type} in {expr}: {err.message}", "backward_error", error=err)
    return Outcome(False, f"forward raised {err.type} when the check moved {', '.join(dnames)} a little: {err.message}",
                   "forward_error", error=err)


def _leaf_words(ip: InPlaceNumbers, diff: Sequence[int], args: Sequence[Arg], names: Sequence[str]) -> tuple[list[str], str]:
    """The inputs a call on the leaves changed while torch said nothing, and what it did say."""
    leaf = ip.leaf
    silent = [names[i] for inp, i in zip(leaf.inputs, diff) if changed(inp, args[i])] if not leaf.raised else []
    if leaf.raised and leaf.error is not None and LEAF_IN_PLACE in leaf.error.message:
        said = "on a leaf that requires grad, torch refused the in-place change, as it should"
    elif leaf.raised and leaf.error is not None:
        said = f"on leaves that require grad, forward raised {leaf.error.type}: {leaf.error.message}"
    else:
        said = "on leaves that require grad, torch raised nothing"
    return silent, said


def check_in_place(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:  # noqa: C901
    """The in-place check of one case from the child's numbers (`ref`: the reference's report for the
    same case, in a grade; None in a run).

    In order: forward raised inside the expression (torch names a dirty input not returned); an input
    changed in place yet not returned marked dirty; ctx.mark_dirty given a tensor that is not an
    input; backward or a forward at a nearby point raised; the gradient of the whole expression
    against finite differences (wrong where forward overwrote an input: backward read the new
    values); a leaf that requires grad changed without torch objecting; and in a grade, an in-place
    model answer beside a Function that changes nothing, and the gradient against the model answer's."""
    plan, ip = case.in_place, rep.in_place
    args = case.args
    diff = diff_inputs(args)
    dnames = [names[i] for i in diff]
    if plan is None or ip is None or not diff:
        return Outcome(False, "The in-place check was not made (it needs an input that requires grad).", "forward_error")
    expr = _expression(dnames)
    if ip.error is not None and ip.stage == "forward":  # no output: nothing to say of what it returned
        return _error_outcome(ip, ip.error, dnames)
    silent, said = _leaf_words(ip, diff, args, names)
    grad = _Gradient(plan, args, ip) if ip.stage is None else None
    mismatch = grad.mismatch(names) if grad is not None else None
    for inp, i in zip(ip.inputs, diff):
        if changed(inp, args[i]) and not marked_dirty(inp):
            how = _first_change(inp, args[i])
            returned = (f"torch returned a view of {names[i]} (output {inp.view_of}) in its place" if inp.view_of is not None
                        else f"{names[i]} is not among its outputs")
            facts = [how] if how else []
            if inp.version_after > inp.version_before:
                facts.append(f"its version counter went from {inp.version_before} to {inp.version_after}")
            msg = (f"forward changed {names[i]} in place ({'; '.join(facts)}) without marking it with "
                   f"ctx.mark_dirty({names[i]}): {returned}, and {names[i]} kept its old history, so a later use of "
                   f"{names[i]} bypasses your backward.")
            if mismatch is not None:
                msg += f" In {expr}, {mismatch.message}."
            if names[i] in silent:
                msg += f" Called on {names[i]} itself, a leaf that requires grad, forward changed it and torch said nothing."
            return Outcome(False, msg, "not_marked_dirty", mismatch.diagnostics if mismatch else (), ip.error)
    if ip.error is not None:
        return _error_outcome(ip, ip.error, dnames)
    touched = [i for inp, i in zip(ip.inputs, diff) if changed(inp, args[i])]
    stray = next((w for w in ip.warnings if DIRTY_NOT_INPUT in w), None)
    if stray is not None and not touched:
        return Outcome(False, "forward gave ctx.mark_dirty a tensor that is not one of its inputs (torch warned: "
                              f"\"{stray.split(' (Triggered')[0]}\"); it changes no input in place.", "dirty_not_input")
    if ip.mode == "too_large":
        return Outcome(False, f"Not checked: {', '.join(dnames)} and the expression are too large for finite differences "
                              "in one run, even along random directions. Use smaller inputs.")
    if mismatch is not None:
        cause = mismatch.likely_cause
        msg = f"In {expr}, {mismatch.message}."
        overwritten = _overwritten(ip, diff, args) or touched
        if cause == "wrong_value" and overwritten:
            cause = "overwritten_input"
            who = names[overwritten[0]]
            msg += (f" forward overwrote {who}: a tensor saved before the change (with ctx.save_for_backward({who}) or on "
                    f"ctx) holds the new values when backward reads it.")
        diags = tuple(Diagnostic(d.check, d.input, d.index, d.analytical, d.expected, d.input_value, d.grad_output, d.atol,
                                 d.rtol, cause or d.likely_cause, d.output, d.extra) for d in mismatch.diagnostics)
        return Outcome(False, msg, cause, diags)
    if silent:
        return Outcome(False, f"Called on {silent[0]} itself, a leaf that requires grad, forward changed it in place and "
                              "torch said nothing: the change went past autograd.", "leaf_in_place")
    if ref is not None:
        failed = _against_reference(case, ip, ref.in_place, names, touched)
        if failed is not None:
            return failed
    if not touched:
        return Outcome(True, f"forward changes no input in place; in {expr}, the gradient matches finite differences.")
    dirty = "; ".join(f"{names[i]} itself, marked dirty (its version counter went from {inp.version_before} to "
                      f"{inp.version_after})" for inp, i in zip(ip.inputs, diff) if i in touched)
    return Outcome(True, f"forward returns {dirty}; in {expr}, the gradient matches finite differences; {said}.")


def _against_reference(case: Case, ip: InPlaceNumbers, want: InPlaceNumbers | None, names: Sequence[str],
                       touched: Sequence[int]) -> Outcome | None:
    """A grade's look beyond the Function's own consistency: the model answer's facts and gradient
    for the same expression (same seed, same inputs)."""
    if want is None or want.error is not None:
        return None
    args = case.args
    diff = diff_inputs(args)
    ref_dirty = [i for inp, i in zip(want.inputs, diff) if changed(inp, args[i]) and marked_dirty(inp)]
    missing = [i for i in ref_dirty if i not in touched]
    if missing:
        who = names[missing[0]]
        return Outcome(False, f"forward leaves {who} unchanged: this exercise asks for an in-place Function, which changes "
                              f"{who} in place, marks it with ctx.mark_dirty({who}) and returns it.", "not_in_place")
    assert case.in_place is not None
    atol, rtol = case.in_place.atol, case.in_place.rtol
    if want.grads is None or want.outputs is None:
        return None  # the model answer's own expression raised: nothing to compare with
    if ip.grads is None or ip.outputs is None:
        return Outcome(False, "The expression's gradient was not reported, though the model answer's was.",
                       "forward_not_repeatable")
    if [(o.shape, o.requires_grad) for o in ip.outputs] != [(o.shape, o.requires_grad) for o in want.outputs]:
        # other outputs (w and v were drawn for other sizes): no gradient to compare, and a failure
        return Outcome(False, f"In {_expression([names[k] for k in diff])}, the Function's outputs have shapes "
                              f"{[o.shape for o in ip.outputs]} (requiring grad: {[o.requires_grad for o in ip.outputs]}); "
                              f"the model answer's have {[o.shape for o in want.outputs]} "
                              f"({[o.requires_grad for o in want.outputs]}).", "wrong_shape")
    for g, e, i in zip(ip.grads, want.grads, diff):
        n = args[i].numel
        a, r = g or [0.0] * n, e or [0.0] * n
        bad = [j for j, (x, y) in enumerate(zip(a, r)) if not close(x, y, atol, rtol)]
        if bad:
            j = bad[0]
            cause, info = detect_cause(list(a), list(r), None, False, atol, rtol, False)
            if cause == "wrong_value" and (_overwritten(ip, diff, args) or touched):
                cause = "overwritten_input"
            diag = Diagnostic(CHECK, names[i], unravel(j, args[i].shape), a[j], r[j], args[i].values[j], "random", atol,
                              rtol, cause, extra=info)
            return Outcome(False, f"In {_expression([names[k] for k in diff])}, the gradient for {names[i]} at index "
                                  f"{diag.index} is {fmt(a[j])}; the model answer's is {fmt(r[j])}.", cause, (diag,))
    return None
