"""The report frame a child sends: its one structural validator, before anything reads it.

A report is untrusted JSON. `validate_report` raises BadOutput unless it has exactly the
structure the harness produces for the cases the judge sent (ids, lengths, numbers where numbers
belong, the check mode the judge would choose); only then do the verdict (grades) and the check
engine (runs) read its numbers, and decide. The framing itself is protocol.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import checks
from .cases import Arg, Case, GradgradPlan, JacobianPlan, diff_inputs
from .errors import BadOutput
from .spec import numel

_MAX_OUTPUTS = 16


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_NUMBER_TYPES = frozenset({int, float})  # what JSON numbers decode to (bool is neither)


def _numlist(x: Any, n: int | None = None) -> bool:
    return isinstance(x, list) and (n is None or len(x) == n) and set(map(type, x)) <= _NUMBER_TYPES


def _require(cond: bool, what: str) -> None:
    if not cond:
        raise BadOutput(what)


def _check_error(e: Any) -> None:
    _require(isinstance(e, dict), "error is not an object")
    for k in ("type", "message", "traceback", "where"):
        _require(isinstance(e.get(k), str), f"error.{k}")
    _require(e.get("line") is None or (isinstance(e.get("line"), int) and not isinstance(e.get("line"), bool)), "error.line")


def _check_ok_block(b: Any, what: str) -> bool:
    _require(isinstance(b, dict) and isinstance(b.get("ok"), bool), f"{what}.ok")
    if not b["ok"]:
        _check_error(b.get("error"))
    ok: bool = b["ok"]
    return ok


def validate_report(report: Any, cases: Sequence[Case]) -> None:  # noqa: C901
    """Raise BadOutput unless `report` has exactly the structure the harness produces."""
    _require(isinstance(report, dict) and report.get("type") == "main", "not a main report")
    loaded = _check_ok_block(report.get("load"), "load")
    entry = report.get("entry")
    _require(entry is not None or not loaded or not cases, "entry missing")
    if entry is not None:
        _require(isinstance(entry, dict), "entry")
        for k in ("found", "is_class", "is_function"):
            _require(isinstance(entry.get(k), bool), f"entry.{k}")
    reps = report.get("cases")
    complete = bool(loaded and entry and entry.get("is_function"))
    _require(isinstance(reps, list) and len(reps) == (len(cases) if complete else 0), "cases")
    for rep, case in zip(reps, cases):
        _require(isinstance(rep, dict) and rep.get("id") == case.id, "case id")
        fwd = rep.get("forward")
        if not _check_ok_block(fwd, "forward"):
            continue
        outs = fwd.get("outputs")
        _require(isinstance(outs, list) and len(outs) <= _MAX_OUTPUTS, "outputs")
        _require(isinstance(fwd.get("count"), int) and not isinstance(fwd.get("count"), bool), "count")
        for o in outs:
            _require(isinstance(o, dict) and o.get("kind") in ("tensor", "other"), "output kind")
            if o["kind"] == "tensor":
                shape = o.get("shape")
                _require(isinstance(shape, list) and len(shape) <= 16 and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape), "output shape")
                _require(isinstance(o.get("dtype"), str) and isinstance(o.get("rg"), bool), "output dtype")
                _require(o.get("values") is None or _numlist(o["values"], numel(shape)), "output values")
            else:
                _require(isinstance(o.get("type"), str), "output type")
        after = fwd.get("inputs_after")
        _require(isinstance(after, list) and len(after) == len(case.args), "inputs_after")
        for a, spec in zip(after, case.args):
            if spec.kind == "tensor":
                _require(a is None or _numlist(a, spec.numel), "inputs_after values")
        if case.probe:
            continue
        vjps = rep.get("vjps", [])
        if case.grad_output_seed is not None:  # a run: the child drew ones and random grad_outputs
            _require(isinstance(vjps, list) and len(vjps) <= 1 + case.random_grad_outputs, "vjps")
            if vjps:
                _check_vjp_sets(rep)
        else:
            _require(isinstance(vjps, list) and len(vjps) == len(case.grad_outputs), "vjps")
        ret_in = rep.get("returned_inputs", [])
        _require(isinstance(ret_in, list) and all(isinstance(i, int) and 0 <= i < len(case.args) for i in ret_in),
                 "returned_inputs")
        n_in = len(diff_inputs(case.args))
        for vr in vjps:
            ok = _check_ok_block(vr, "vjp")
            if ok:
                grads = vr.get("grads")
                _require(isinstance(grads, list) and len(grads) == n_in and all(g is None or _numlist(g) for g in grads), "grads")
            _require(vr.get("v_changed") is None or isinstance(vr.get("v_changed"), bool), "v_changed")
            _check_returned(vr.get("returned"))
        if case.gradcheck is not None:
            _check_gradcheck_numbers(rep.get("gradcheck"), case.gradcheck, case.args)
        if "needs_input_grad" in rep:
            alone = rep["needs_input_grad"]
            _require(isinstance(alone, list) and len(alone) <= n_in, "needs_input_grad")
            for a in alone:
                if _check_ok_block(a, "needs_input_grad"):
                    _require(a.get("grad") is None or _numlist(a["grad"]), "needs_input_grad.grad")
                    _check_returned(a.get("returned"))
                _require(isinstance(a.get("arg"), int) and 0 <= a["arg"] < len(case.args), "needs_input_grad.arg")
        if case.gradgrad is not None:
            _check_gradgrad(rep.get("gradgrad"), case.gradgrad, case.args, n_in)


def _check_returned(ret: Any) -> None:
    """The structure of what backward returned, as the harness's recorder describes it."""
    if ret is None:
        return
    _require(isinstance(ret, dict) and isinstance(ret.get("count"), int) and isinstance(ret.get("items"), list), "returned")
    for it in ret["items"]:
        _require(isinstance(it, dict) and it.get("kind") in ("none", "tensor", "other"), "returned item")
        if it["kind"] == "tensor":
            _require(isinstance(it.get("shape"), list) and all(isinstance(d, int) for d in it["shape"]), "returned shape")
            _require(isinstance(it.get("dtype"), str), "returned dtype")


def _grad_rows(rows: Any, n_in: int) -> bool:
    return isinstance(rows, list) and all(
        isinstance(r, list) and len(r) == n_in and all(g is None or _numlist(g) for g in r) for r in rows)


def _is_shape(sh: Any) -> bool:
    return isinstance(sh, list) and len(sh) <= 16 and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in sh)


def _check_gradcheck_numbers(gc: Any, plan: JacobianPlan, args: Sequence[Arg]) -> None:  # noqa: C901
    """The structure of harness._gradcheck_numbers' report for `plan` over `args` (its numbers are
    judged in checks.py), the mode included: the one the plan gives for the shapes (JacobianPlan.mode)."""
    n_in = len(diff_inputs(args))
    _require(isinstance(gc, dict) and isinstance(gc.get("ok"), bool), "gradcheck.ok")
    _require(gc.get("stage") in (None, "forward", "numerical", "analytical", "zero_grad_output", "undefined_grad_output"),
             "gradcheck.stage")
    if not gc["ok"]:
        _check_error(gc.get("error"))
    if gc.get("stage") == "forward":
        return
    out_rg, shapes = gc.get("out_rg"), gc.get("out_shapes")
    _require(isinstance(out_rg, list) and len(out_rg) <= _MAX_OUTPUTS and all(isinstance(b, bool) for b in out_rg), "out_rg")
    _require(isinstance(shapes, list) and len(shapes) == len(out_rg) and all(_is_shape(sh) for sh in shapes), "out_shapes")
    mode = gc.get("mode")
    _require(mode == plan.mode(args, shapes), "gradcheck.mode")
    if mode == "too_large":
        _require(gc["ok"] and gc["stage"] is None, "gradcheck.too_large")
        return
    width = sum(numel(sh) for sh in shapes)
    n_points = len(plan.points_of(args) or []) if mode == "full" or plan.projections is None else plan.projections.k
    for key in ("minus", "plus"):
        rows = gc.get(key)
        _require(isinstance(rows, list) and len(rows) <= n_points and all(_numlist(r, width) for r in rows), f"gradcheck.{key}")
    if gc["ok"] or gc["stage"] not in ("numerical",):
        _require(len(gc["minus"]) == n_points and len(gc["plus"]) == n_points, "gradcheck rows")
    diff_out = [k for k, rg in enumerate(out_rg) if rg]
    rows = gc.get("rows")
    if rows is not None:
        _require(mode == "full" and isinstance(rows, list) and len(rows) <= len(diff_out), "gradcheck.rows")
        for pos, both in enumerate(rows):
            n_rows = numel(shapes[diff_out[pos]])
            _require(isinstance(both, list) and len(both) == 2 and all(
                isinstance(r, list) and len(r) == n_rows and _grad_rows(r, n_in) for r in both), "gradcheck.rows")
    for key, most in (("grads", n_points), ("grads2", 1)):  # grads2: backward again for the first grad_output
        if gc.get(key) is not None:
            _require(mode == "projections" and len(gc[key]) <= most and _grad_rows(gc[key], n_in), f"gradcheck.{key}")
    if mode == "projections" and diff_out and (gc["ok"] or gc["stage"] not in ("numerical", "analytical")):
        _require(len(gc.get("grads") or []) == n_points and len(gc.get("grads2") or []) == 1, "gradcheck.grads")
    for key in ("zero_grad_output",):
        if gc.get(key) is not None:
            _require(_grad_rows([gc[key]], n_in), f"gradcheck.{key}")
    if gc.get("undefined_grad_output") is not None:
        _require(_grad_rows(gc["undefined_grad_output"], n_in), "gradcheck.undefined_grad_output")


def _check_gradgrad(gg: Any, plan: GradgradPlan, args: Sequence[Arg], n_in: int) -> None:
    """The structure of harness._gradgrad's report: the grad_outputs it used (the judge's, or those
    its seed gives), then gradcheck numbers of the function (inputs, grad_outputs) -> gradients."""
    if not _check_ok_block(gg, "gradgrad"):
        return
    v = gg.get("v")
    _require(isinstance(v, list) and 1 <= len(v) <= _MAX_OUTPUTS, "gradgrad.v")
    for item in v:
        _require(isinstance(item, dict) and _is_shape(item.get("shape")) and isinstance(item.get("dtype"), str), "gradgrad.v")
        _require(item.get("values") is None or _numlist(item["values"], numel(item["shape"])), "gradgrad.v values")
    numbers = gg.get("numbers")
    _require(isinstance(numbers, dict), "gradgrad.numbers")
    ext = checks.gradgrad_args(args, gg)
    _check_gradcheck_numbers(numbers, plan.jacobian, ext)
    if any(item["values"] is None for item in v):
        _require(numbers.get("mode") == "too_large", "gradgrad.v values")
    else:
        planned = plan.grad_outputs([numel(it["shape"]) for it in v])
        _require(len(planned) == len(v) and all(checks.same_grad_output(it, p) for it, p in zip(v, planned)),
                 "gradgrad.v: not the judge's grad_outputs")
    present = gg.get("present")
    _require(isinstance(present, list) and all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p < n_in
                                                for p in present) and present == sorted(set(present)), "gradgrad.present")
    if numbers.get("stage") != "forward" and numbers.get("out_shapes") is not None:
        _require(len(present) == len(numbers["out_shapes"]), "gradgrad.present")
    if gg.get("w_product") is not None:
        _require(_grad_rows([gg["w_product"]], len(diff_inputs(ext))), "gradgrad.w_product")


def torch_messages(frame: Any) -> dict[str, dict[str, Any]]:
    """case id -> {"torch_gradcheck": {...}, ...} from the optional second frame (informative)."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(frame, dict) or frame.get("type") != "torch_checks" or not isinstance(frame.get("cases"), list):
        return out
    for c in frame["cases"]:
        if not isinstance(c, dict) or not isinstance(c.get("id"), str):
            continue
        entry = {}
        for k in ("torch_gradcheck", "torch_gradgradcheck"):
            v = c.get(k)
            if isinstance(v, dict) and isinstance(v.get("ok"), bool) and isinstance(v.get("message"), str):
                entry[k] = {"ok": v["ok"], "message": v["message"][:4000]}
        out[c["id"]] = entry
    return out


def _check_vjp_sets(rep: dict[str, Any]) -> None:
    """A run's grad_outputs, drawn by the child from our seed (one set per VJP, one vector per
    differentiable output), and which outputs were differentiable."""
    vsets = rep.get("vjp_sets")
    outs = rep["forward"]["outputs"]
    diff_out = rep.get("diff_outputs")
    if not isinstance(diff_out, list) or not all(isinstance(k, int) and 0 <= k < len(outs) for k in diff_out):
        raise BadOutput("diff_outputs")
    if not isinstance(vsets, list) or len(vsets) != len(rep.get("vjps", [])):
        raise BadOutput("vjp_sets")
    for vset in vsets:
        if not (isinstance(vset, list) and len(vset) == len(diff_out)):
            raise BadOutput("vjp_set")
        for v, k in zip(vset, diff_out):
            if not (isinstance(v, list) and len(v) == numel(outs[k].get("shape") or [])
                    and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
                raise BadOutput("vjp values")
