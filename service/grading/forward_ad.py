"""The forward-mode check: is this jvp the derivative of this forward? Decided by the judge.

A Function may define ``jvp(ctx, *tangents)``: forward-mode AD (``torch.autograd.forward_ad``,
``torch.func.jvp``, ``gradcheck(check_forward_ad=True)``) calls it with one tangent per forward
input and takes one tangent per output. The child reports plain numbers for a
``cases.ForwardAdPlan`` (``harness._forward_ad``); this module decides from them, in pure Python
(no torch), as ``checks.py`` decides gradcheck:

- finite differences along each random tangent v, computed here from forward's values at x - eps v
  and x + eps v, against jvp's output tangents J v, element by element (gradcheck's atol carried to
  a direction: ``atol * ||v|| + rtol * |fd|``); the tangents are the judge's draw from the plan's
  seed (``draws.forward_ad_tangents``), never the child's;
- those forward values against forward's own output at x (their midpoint): a child that reports
  zeros, or a forward that is not repeatable, fails there, before any comparison could pass;
- jvp for zero tangents gives exactly zero (as gradcheck asks of backward for a zero grad_output);
- each input requiring grad alone having a tangent, the others plain tensors (jvp gets zeros for
  them, or None after ``ctx.set_materialize_grads(False)``: gradcheck's undefined-tangent test),
  against finite differences along that input's part alone: this also names the input at fault;
- jvp changes no tangent in place (except an input forward returns, marked dirty: torch requires it);
- the dot-product test <J v, u> = <v, J^T u> against backward for the judge's random u;
- in a grade, jvp's tangents against the reference's for the same tangents.

Where torch's check (slow mode, basis tangents) and this one can differ: a jvp that ignores its
tangent passes torch's basis check for a one-element input (the basis tangent is 1), and torch does
not look at a tangent changed in place; both fail here. tests/grading/test_forward_ad.py holds the
verdict to torch's for right and wrong Functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .cases import Arg, Case, ForwardAdPlan, diff_inputs
from .checks import Diagnostic, Outcome, close, dot, fmt, projection_tolerance, unravel
from .draws import numel
from .reports import CaseReport, ChildError, ForwardAdNumbers

CHECK = "forward_ad"
#: Random tangents of a forward-mode check (grades and runs)
FORWARD_AD_TANGENTS = 3


def _out_label(k: int, n_out: int) -> str:
    return "output" if n_out == 1 else f"output {k}"


def _norm(v: Sequence[float]) -> float:
    return math.sqrt(dot(v, v))


def _zeros_if_none(t: list[Any] | None, n: int) -> list[float]:
    return t if t is not None else [0.0] * n


def error_cause(err: ChildError, fa: ForwardAdNumbers, stage: str | None) -> str:
    """The likely cause of an exception raised while forward mode ran the Function (its jvp mostly)."""
    msg = err.message
    if not fa.has_jvp or "must implement the jvp function" in msg:
        return "jvp_missing"
    if "invalid number of forward gradients" in msg or "expected Variable or None" in msg \
            or "its forward grad to be floating point" in msg:
        return "jvp_wrong_count"
    if "forward gradient that has a different size" in msg:
        return "jvp_wrong_shape"
    if "not modifying the forward mode gradients inplace" in msg:
        return "jvp_not_in_place"
    if err.type == "TypeError" and "positional argument" in msg:
        return "jvp_signature"
    if stage == "input_without_tangent" or (err.type == "TypeError" and "NoneType" in msg):
        return "jvp_missing_tangent"
    if ("values to unpack" in msg and "got 0)" in msg) or "tuple index out of range" in msg:
        return "jvp_not_saved_for_forward"  # ctx.saved_tensors is empty in jvp without ctx.save_for_forward
    return "jvp_error"


def _returned_cause(fa: ForwardAdNumbers, n_out: int, shapes: Sequence[Sequence[int]]) -> tuple[str, str] | None:
    """What jvp returned, when torch refused it: (cause, sentence)."""
    ret = fa.returned
    if ret is None:
        return None
    if ret.count != n_out:
        return "jvp_wrong_count", (f"jvp returned {ret.count} value(s) for {n_out} forward output(s): return one tangent "
                                   "per output.")
    for k, item in enumerate(ret.items):
        label = _out_label(k, n_out)
        if item.kind == "none" and k < len(fa.out_rg) and fa.out_rg[k]:
            return "jvp_wrong_count", f"jvp returned None for {label}, which needs a tangent."
        if item.kind == "other":
            return "jvp_wrong_count", f"jvp returned a {item.type} for {label}; return a tensor."
        if item.kind == "tensor" and k < len(shapes) and list(item.shape) != list(shapes[k]):
            return "jvp_wrong_shape", (f"jvp returned a tangent of shape {list(item.shape)} for {label}, whose shape is "
                                       f"{list(shapes[k])}.")
    return None


_STAGE_WORDS = {
    "jvp": "for a random tangent",
    "zero_tangent": "for zero tangents",
    "input_without_tangent": "when only one input had a tangent (jvp got zeros for the others, or None after "
                             "ctx.set_materialize_grads(False))",
}


def _raised(fa: ForwardAdNumbers, n_out: int) -> Outcome:
    """The first step that raised, said with its likely cause."""
    err = fa.error or ChildError(fa.stage or "forward_ad", "Error", "not computed", "", None)
    stage = fa.stage
    if stage in ("forward", "numerical"):
        return Outcome(False, f"forward raised {err.type} while the forward-mode check ran it: {err.message}",
                       "forward_error", error=err)
    if stage == "backward":
        return Outcome(False, f"backward raised {err.type} for a random grad_output (the forward-mode check's dot-product "
                              f"test): {err.message}", "backward_error", error=err)
    cause = error_cause(err, fa, stage)
    returned = _returned_cause(fa, n_out, fa.out_shapes)
    if returned is not None and cause in ("jvp_wrong_count", "jvp_wrong_shape", "jvp_error"):
        cause, sentence = returned
        return Outcome(False, f"{sentence.rstrip('.')} ({err.type}: {err.message}).", cause, error=err)
    if cause == "jvp_missing":
        return Outcome(False, "Your Function has no jvp, so forward mode cannot run it "
                              f"({err.type}: {err.message}).", cause, error=err)
    when = _STAGE_WORDS.get(stage or "", "")
    return Outcome(False, f"jvp raised {err.type} {when}: {err.message}".replace("  ", " "), cause, error=err)


def _fd(fa: ForwardAdNumbers, eps: float) -> list[list[float]]:
    """Central differences (f(x + eps v) - f(x - eps v)) / (2 eps), one row per direction, every output."""
    return [[(b - a) / (2 * eps) for a, b in zip(mr, pr)] for mr, pr in zip(fa.minus, fa.plus)]


def _offsets(shapes: Sequence[Sequence[int]]) -> list[int]:
    out, off = [], 0
    for sh in shapes:
        out.append(off)
        off += numel(sh)
    return out


def _forward_values(rep: CaseReport, shapes: Sequence[Sequence[int]]) -> list[list[Any] | None] | None:
    """forward's own outputs at x, per output (None: not sent), or None when they do not have the
    shapes the forward-mode check's forward gave."""
    outs = rep.forward.outputs
    if len(outs) != len(shapes):
        return None
    for o, sh in zip(outs, shapes):
        if o.kind == "tensor" and list(o.shape) != list(sh):
            return None
    return [o.values if o.kind == "tensor" else None for o in outs]


def _midpoint(fa: ForwardAdNumbers, values: Sequence[list[Any] | None], plan: ForwardAdPlan,
              names_of_rows: Sequence[str]) -> Outcome | None:
    """(f(x - eps v) + f(x + eps v)) / 2 must be forward's own value f(x), within gradcheck's tolerances:
    the differences below are then differences of this forward, not of numbers made up."""
    offsets = _offsets(fa.out_shapes)
    n_out = len(fa.out_shapes)
    for r, (mr, pr) in enumerate(zip(fa.minus, fa.plus)):
        for k, vals in enumerate(values):
            if vals is None or not fa.out_rg[k]:
                continue
            off = offsets[k]
            mid = [(mr[off + e] + pr[off + e]) / 2 for e in range(len(vals))]
            # (a nan or inf that forward itself gives at x is the finite differences' to judge)
            bad = [e for e, (m, f) in enumerate(zip(mid, vals)) if math.isfinite(f) and not close(m, f, plan.atol, plan.rtol)]
            if bad:
                e = max(bad, key=lambda e: math.inf if mid[e] != mid[e] else abs(mid[e] - vals[e]) - plan.rtol * abs(vals[e]))
                idx = unravel(e, fa.out_shapes[k])
                return Outcome(False, f"forward is not repeatable: moved a little each way along {names_of_rows[r]}, "
                                      f"{_out_label(k, n_out)}{idx} averages {fmt(mid[e])}, but forward gives "
                                      f"{fmt(vals[e])} there.", "forward_not_repeatable")
    return None


def _jvp_cause(fa: ForwardAdNumbers, fd: Sequence[Sequence[float]], keep: Sequence[int], tangents: Sequence[Sequence[float]],
               plan: ForwardAdPlan) -> tuple[str, dict[str, Any]]:
    """Name what is likely wrong with jvp, from all its random tangents at once."""
    a = [_flat_keep(t, fa.out_shapes, keep) for t in fa.jvps]
    n = [[row[e] for e in keep] for row in fd[:len(a)]]
    tols = [[plan.atol * _norm(v) + plan.rtol * abs(x) for x in nr] for v, nr in zip(tangents, n)]
    flat_a = [x for r in a for x in r]
    flat_n = [x for r in n for x in r]
    if not all(math.isfinite(x) for x in flat_a):
        return "jvp_wrong_derivative", {"nan": True}
    zero = _flat_keep(fa.zero, fa.out_shapes, keep) if fa.zero is not None else None
    if zero is not None and any(x != 0 for x in zero):
        return "jvp_ignores_tangent", {}
    for m in range(1, len(a)):  # the same answer for different tangents, where forward's slopes differ
        if any(a[0]) and _near(a[m], a[0], tols[m]) and not _near(n[m], n[0], tols[m]):
            return "jvp_ignores_tangent", {}
    nn = dot(flat_n, flat_n)
    if nn > 0:
        c = dot(flat_a, flat_n) / nn
        if abs(c - 1) > 1e-3 and abs(c) > 1e-6 and _near(flat_a, [c * x for x in flat_n], [t for r in tols for t in r]):
            return "jvp_wrong_derivative", {"factor": round(c, 4)}
    return "jvp_wrong_derivative", {}


def _near(a: Sequence[float], b: Sequence[float], tol: Sequence[float]) -> bool:
    return len(a) == len(b) and all(x == y or abs(x - y) <= t for x, y, t in zip(a, b, tol))


def _flat_keep(ts: Sequence[list[Any] | None] | None, shapes: Sequence[Sequence[int]], keep: Sequence[int]) -> list[float]:
    """The output tangents (None as zeros, as torch reads them) flattened, at the positions `keep`."""
    flat = [x for t, sh in zip(ts or [], shapes) for x in _zeros_if_none(t, numel(sh))]
    return [flat[e] for e in keep]


def _first_mismatch(a: Sequence[float], n: Sequence[float], v: Sequence[float], plan: ForwardAdPlan) -> int | None:
    """The worst element of jvp's tangent `a` outside gradcheck's tolerance of finite differences `n` along `v`."""
    scale = plan.atol * _norm(v)
    bad = [e for e, (x, y) in enumerate(zip(a, n)) if not (x == y or abs(x - y) <= scale + plan.rtol * abs(y))]
    if not bad:
        return None
    return max(bad, key=lambda e: math.inf if a[e] != a[e] or n[e] != n[e] else abs(a[e] - n[e]) - plan.rtol * abs(n[e]))


def _where(flat_e: int, shapes: Sequence[Sequence[int]]) -> tuple[int, list[int]]:
    """(output, index in it) of element flat_e of the outputs flattened and concatenated."""
    for k, off in enumerate(_offsets(shapes)):
        if flat_e < off + numel(shapes[k]):
            return k, unravel(flat_e - off, shapes[k])
    return len(shapes) - 1, []


def _input_value(args: Sequence[Arg], i: int, out_shape: Sequence[int], idx: list[int]) -> float | None:
    """x at the same index as the output element, when input i has the output's shape (elementwise)."""
    a = args[i]
    if list(a.shape) != list(out_shape) or not a.values:
        return None
    flat = 0
    for d, j in zip(a.shape, idx):
        flat = flat * d + j
    return float(a.values[flat]) if flat < len(a.values) else None


def check_forward_ad(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:  # noqa: C901
    """The forward-mode check of one case from the child's numbers (module docstring): the first
    failure, with its likely cause, or a pass. `ref`: the reference's report for the same case (a
    grade), whose jvp tangents the submission's must match."""
    plan = case.forward_ad
    if plan is None:
        raise ValueError(f"case {case.id} has no forward-mode plan")
    args = case.args
    diff = diff_inputs(args)
    if not diff:
        return Outcome(False, "The forward-mode check needs at least one input tensor that requires grad.", "wrong_value")
    if not rep.forward.ok:
        err = rep.forward.error
        return Outcome(False, f"forward raised {err.type if err else 'an exception'}: the forward-mode check could not run.",
                       "forward_error", error=err)
    fa = rep.forward_ad
    if fa is None:
        return Outcome(False, "The forward-mode check was not computed.", "forward_error")
    n_out = len(fa.out_shapes)
    if fa.stage in ("forward", "numerical"):
        return _raised(fa, n_out)
    if fa.too_large:
        n_in = sum(args[i].numel for i in diff)
        width = sum(numel(s) for s in fa.out_shapes)
        return Outcome(False, f"Not checked: forward mode's numbers ({width} output elements and {n_in} input elements) "
                              f"are too many to check in one run (up to {plan.max_elements} together). Use smaller inputs.")
    differs = _outputs_differ(fa, rep, ref, n_out)
    if differs is not None:
        return differs
    sizes = [args[i].numel for i in diff]
    tangents = plan.tangents(sizes)
    flat_tangents = [[x for part in t for x in part] for t in tangents]
    alone_tangents = [[x if q == p else 0.0 for q, part in enumerate(tangents[0]) for x in part]
                      for p in range(len(diff))] if len(diff) > 1 else []
    row_names = ([f"random tangent {m + 1}" for m in range(plan.k)]
                 + [f"{names[i]}'s part of random tangent 1" for i in diff][:len(alone_tangents)])
    values = _forward_values(rep, fa.out_shapes)
    if values is None:
        return Outcome(False, "forward's outputs changed shape between two calls on the same inputs.", "wrong_shape")
    failed = _midpoint(fa, values, plan, row_names)
    if failed is not None:
        return failed
    fd = _fd(fa, plan.eps)
    offsets = _offsets(fa.out_shapes)
    keep = [off + e for k, off in enumerate(offsets) if fa.out_rg[k] for e in range(numel(fa.out_shapes[k]))]
    if not keep:  # torch: no differentiable output, so forward must not change with the inputs
        for r, row in enumerate(fd):
            e = next((e for e, x in enumerate(row) if x != 0), None)
            if e is not None:
                k, idx = _where(e, fa.out_shapes)
                return Outcome(False, f"No output requires grad, yet {_out_label(k, n_out)}{idx} changes along "
                                      f"{row_names[r]}: the output is cut off from autograd.", "output_detached")
        return Outcome(True, "No output requires grad and none depends on the inputs.")
    if fa.stage == "jvp":
        return _raised(fa, n_out)
    # jvp for each random tangent against finite differences along it
    kept_shapes = [fa.out_shapes[k] for k in range(n_out) if fa.out_rg[k]]
    for m, (t, v) in enumerate(zip(fa.jvps, flat_tangents)):
        a = _flat_keep(t, fa.out_shapes, keep)
        n = [fd[m][e] for e in keep]
        e = _first_mismatch(a, n, v, plan)
        if e is None:
            continue
        return _mismatch(case, fa, fd, keep, tangents, flat_tangents, alone_tangents, names, m, e, a, n)
    # zero tangents give zero
    if fa.stage == "zero_tangent":
        return _raised(fa, n_out)
    zero = _flat_keep(fa.zero, fa.out_shapes, keep)
    e0 = next((e for e, x in enumerate(zero) if x != 0), None)
    if e0 is not None:
        k, idx = _where(keep[e0], fa.out_shapes)
        return Outcome(False, f"jvp is not multiplied by the tangent: for zero tangents it returned {fmt(zero[e0])} for "
                              f"{_out_label(k, n_out)}{idx} (it must be 0).", "jvp_ignores_tangent",
                       (Diagnostic(CHECK, ", ".join(names[i] for i in diff), idx, zero[e0], 0.0, None, "zero tangent",
                                   plan.atol, plan.rtol, "jvp_ignores_tangent", output=k),))
    # each input alone having a tangent (the others plain tensors)
    if fa.stage == "input_without_tangent":
        return _raised(fa, n_out)
    for p, (t, v) in enumerate(zip(fa.alone, alone_tangents)):
        a = _flat_keep(t, fa.out_shapes, keep)
        n = [fd[plan.k + p][e] for e in keep]
        e = _first_mismatch(a, n, v, plan)
        if e is None:
            continue
        i = diff[p]
        k, idx = _where(keep[e], fa.out_shapes)
        others = ", ".join(names[j] for j in diff if j != i)
        diag = Diagnostic(CHECK, names[i], idx, a[e], n[e], None, f"tangent for {names[i]} alone", plan.atol, plan.rtol,
                          "jvp_missing_tangent", output=k)
        return Outcome(False, f"With a tangent for {names[i]} only ({others} without one: jvp got zeros for it, or None "
                              f"after ctx.set_materialize_grads(False)), jvp gives {fmt(a[e])} for "
                              f"{_out_label(k, n_out)}{idx}; finite differences along {names[i]}'s tangent give "
                              f"{fmt(n[e])}.", "jvp_missing_tangent", (diag,))
    # no tangent changed in place, but a dirty input's
    for p in fa.tangent_changed:
        if diff[p] not in rep.returned_inputs and p not in fa.tangent_returned:
            return Outcome(False, f"jvp changed the tangent of {names[diff[p]]} in place; compute a new tensor instead "
                                  "(the caller's tangent must stay as it was).", "jvp_modifies_tangent")
    # the dot-product test against backward
    if fa.stage == "backward":
        return _raised(fa, n_out)
    failed = _dot_test(fa, plan, keep, kept_shapes, flat_tangents, fd, args, diff, names)
    if failed is not None:
        return failed
    if ref is not None:
        failed = _against_reference(fa, ref.forward_ad, plan, keep, flat_tangents, names, diff)
        if failed is not None:
            return failed
    alone = f", each input alone with a tangent ({len(alone_tangents)})" if alone_tangents else ""
    return Outcome(True, f"jvp matches finite differences of forward along {plan.k} random tangents (atol {plan.atol:g}, "
                         f"rtol {plan.rtol:g}){alone}, gives zero for zero tangents, and agrees with backward "
                         "(<J v, u> = <v, J^T u>).")


def _mismatch(case: Case, fa: ForwardAdNumbers, fd: Sequence[Sequence[float]], keep: Sequence[int],
              tangents: Sequence[Sequence[Sequence[float]]], flat_tangents: Sequence[Sequence[float]],
              alone_tangents: Sequence[Sequence[float]], names: Sequence[str], m: int, e: int, a: Sequence[float],
              n: Sequence[float]) -> Outcome:
    """jvp's tangent for random tangent m differs from finite differences at kept element e: the
    message names the output element and, where the numbers tell, the input whose tangent is at fault."""
    plan = case.forward_ad
    assert plan is not None
    args = case.args
    diff = diff_inputs(args)
    n_out = len(fa.out_shapes)
    cause, info = _jvp_cause(fa, fd, keep, flat_tangents, plan)
    k, idx = _where(keep[e], fa.out_shapes)
    culprit: int | None = diff[0] if len(diff) == 1 else None
    if culprit is None and fa.alone:
        for p, (t, v) in enumerate(zip(fa.alone, alone_tangents)):
            if _first_mismatch(_flat_keep(t, fa.out_shapes, keep), [fd[plan.k + p][x] for x in keep], v, plan) is not None:
                culprit = diff[p]
                break
    who = names[culprit] if culprit is not None else ", ".join(names[i] for i in diff)
    x = _input_value(args, culprit, fa.out_shapes[k], idx) if culprit is not None else None
    facts: dict[str, Any] = {"output_index": idx, "output_shape": list(fa.out_shapes[k]), "tangent": f"random {m + 1}"}
    if x is not None and culprit is not None:
        pos = diff.index(culprit)
        flat = 0
        for d, j in zip(args[culprit].shape, idx):
            flat = flat * d + j
        facts["tangent_value"] = tangents[m][pos][flat]
    diag = Diagnostic(CHECK, who, idx, a[e], n[e], x, f"random tangent {m + 1}", plan.atol, plan.rtol, cause, output=k,
                      extra={**info, **facts})
    at = f" (at {names[culprit]}{idx} = {fmt(x)})" if x is not None and culprit is not None else ""
    factor = f"; it is off by a factor of {fmt(info['factor'])}" if "factor" in info else ""
    return Outcome(False, f"For a random tangent of {who}{at}, jvp gives {fmt(a[e])} for {_out_label(k, n_out)}{idx}; "
                          f"finite differences of forward along the tangent give {fmt(n[e])}{factor}.", cause, (diag,))


def _dot_test(fa: ForwardAdNumbers, plan: ForwardAdPlan, keep: Sequence[int], kept_shapes: Sequence[Sequence[int]],
              flat_tangents: Sequence[Sequence[float]], fd: Sequence[Sequence[float]], args: Sequence[Arg],
              diff: Sequence[int], names: Sequence[str]) -> Outcome | None:
    """<J v, u> by jvp against <v, J^T u> by backward, for each random tangent v and the judge's u,
    within gradcheck's tolerances carried to one projection (checks.projection_tolerance)."""
    if fa.vjp is None:
        return Outcome(False, "Not checked: backward's gradient for the dot-product test was not computed.", "backward_error")
    u = [x for part in plan.grad_outputs([numel(s) for s in kept_shapes]) for x in part]
    jtu = [x for g, i in zip(fa.vjp, diff) for x in _zeros_if_none(g, args[i].numel)]
    m_out = len(u)
    u_scale = _norm(u) / math.sqrt(m_out) if m_out else 1.0
    for m, (t, v) in enumerate(zip(fa.jvps, flat_tangents)):
        jv = _flat_keep(t, fa.out_shapes, keep)
        d = [fd[m][e] for e in keep]
        lhs, rhs = dot(jv, u), dot(v, jtu)
        tol = projection_tolerance(plan.atol, plan.rtol, v, d, u_scale, m_out)
        if not (lhs == rhs or abs(lhs - rhs) <= tol):
            diag = Diagnostic(CHECK, ", ".join(names[i] for i in diff), [], rhs, lhs, None,
                              "random grad_output u", plan.atol, plan.rtol, "jvp_backward_disagree",
                              extra={"tangent": f"random {m + 1}", "tolerance": tol})
            return Outcome(False, f"jvp and backward disagree: for random tangent {m + 1} and a random grad_output u, "
                                  f"<J v, u> by jvp is {fmt(lhs)} but <v, J^T u> by backward is {fmt(rhs)} (tolerance "
                                  f"{fmt(tol)}). jvp matches finite differences, so backward is the one to look at.",
                           "jvp_backward_disagree", (diag,))
    return None


def _outputs_differ(fa: ForwardAdNumbers, rep: CaseReport, ref: CaseReport | None, n_out: int) -> Outcome | None:
    """Forward mode's outputs (their shapes, which require grad) are forward's own, and in a grade the
    model answer's: a report whose outputs claim no gradient would pass untested otherwise."""
    plain = [o.kind == "tensor" and o.requires_grad for o in rep.forward.outputs]
    if plain[:len(fa.out_rg)] != list(fa.out_rg):
        return Outcome(False, "Forward mode's outputs do not require grad as forward's own outputs do: forward does not "
                              "give the same outputs on the same inputs.", "forward_not_repeatable")
    theirs = ref.forward_ad if ref is not None else None
    if theirs is None or not theirs.ok or theirs.too_large:
        return None
    if list(fa.out_shapes) != list(theirs.out_shapes):
        return Outcome(False, f"In forward mode your outputs have shapes {list(fa.out_shapes)}; the model answer's have "
                              f"{list(theirs.out_shapes)}.", "wrong_shape")
    if list(fa.out_rg) != list(theirs.out_rg):
        k = next(k for k, (a, b) in enumerate(zip(fa.out_rg, theirs.out_rg)) if a != b)
        which = f"{_out_label(k, n_out)} " + ("requires grad, but the model answer's does not"
                                              if fa.out_rg[k] else "does not require grad, but the model answer's does")
        return Outcome(False, f"In forward mode your {which}.", "output_detached" if not fa.out_rg[k]
                       else "not_marked_non_differentiable")
    return None


def _against_reference(fa: ForwardAdNumbers, ref: ForwardAdNumbers | None, plan: ForwardAdPlan, keep: Sequence[int],
                       flat_tangents: Sequence[Sequence[float]], names: Sequence[str], diff: Sequence[int]) -> Outcome | None:
    """A grade: jvp's tangents for the judge's random tangents must be the reference's (computed in a
    trusted process for the same tangents)."""
    if ref is None or not ref.ok or ref.too_large:  # (their outputs are the same: _outputs_differ)
        return None
    n_out = len(fa.out_shapes)
    for m, (mine, theirs, v) in enumerate(zip(fa.jvps, ref.jvps, flat_tangents)):
        a = _flat_keep(mine, fa.out_shapes, keep)
        r = _flat_keep(theirs, ref.out_shapes, keep)
        e = _first_mismatch(a, r, v, plan)
        if e is None:
            continue
        k, idx = _where(keep[e], fa.out_shapes)
        cause = "jvp_wrong_derivative"  # (zero tangents were checked before: jvp multiplies by the tangent)
        who = ", ".join(names[i] for i in diff)
        diag = Diagnostic(CHECK, who, idx, a[e], r[e], None, f"random tangent {m + 1}", plan.atol, plan.rtol, cause,
                          output=k, extra={"tangent": f"random {m + 1}", "model_answer": True})
        return Outcome(False, f"For random tangent {m + 1}, jvp gives {fmt(a[e])} for {_out_label(k, n_out)}{idx}; the "
                              f"model answer's jvp gives {fmt(r[e])}.", cause, (diag,))
    return None
