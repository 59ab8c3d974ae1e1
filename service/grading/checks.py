"""The check engine: "is this backward the derivative of this forward?", asked one way for grades
and for runs.

Pure Python on plain numbers (no torch): the child computes numbers (harness.py), the judge
decides here. Every function takes one case's arguments (the plan's wire form: ``{"t": "tensor",
"values": [...], "shape": [...], "rg": bool}`` and the like) and the child's numbers for it, already
checked for structure by ``verdict.validate_report``, and returns an ``Outcome``.

``jacobian`` is torch.autograd.gradcheck (fast_mode off) decided from the numbers its procedure
produces (see ``harness._gradcheck_numbers``): finite differences of every output element against
every element of every input that requires grad, the analytical Jacobian from one backward per
basis grad_output (computed twice: reentrancy), backward for zero grad_outputs and for undefined
ones, each compared as torch compares them (``|a - n| <= atol + rtol * |n|``, NaN never close).
Its verdict therefore agrees with torch's on the same inputs; ``tests/grading/test_agreement.py``
holds it to that. The other checks are hygiene that torch's gradcheck does not make, each named for
what it checks.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from .spec import LIKELY_CAUSES, numel

#: The checks of a run, in the order they are reported (grades name theirs in spec.CHECKS).
RUN_CHECKS: dict[str, str] = {
    "gradcheck": "torch.autograd.gradcheck's checks (fast_mode off): the full Jacobian by finite differences "
                 "against backward for every basis grad_output, reentrancy, zero and undefined grad_outputs.",
    "random_vjp": "backward's vector-Jacobian products for random grad_outputs match finite differences.",
    "backward_arity": "backward returns one value per forward input, None for each input that is not a tensor, "
                      "each gradient shaped like its input.",
    "needs_input_grad": "backward gives the same gradient when only one input requires grad "
                        "(ctx.needs_input_grad honoured).",
    "inputs_unchanged": "forward leaves its inputs unchanged (unless it returns them, marked dirty).",
    "grad_output_unchanged": "backward leaves grad_output unchanged.",
    "gradgradcheck": "double backward agrees with finite differences of backward (torch.autograd.gradgradcheck).",
}


@dataclass(frozen=True)
class Diagnostic:
    """The worst element of a failed numerical comparison."""

    check: str
    input: str
    index: list[int]
    analytical: float
    expected: float
    input_value: float
    grad_output: str
    atol: float
    rtol: float
    likely_cause: str
    output: int | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self, *, case: str | None = None, expected_key: str = "numerical") -> dict:
        d: dict[str, Any] = {"check": self.check}
        if case is not None:
            d["case"] = case
        d.update(input=self.input, index=self.index, analytical=jnum(self.analytical),
                 input_value=jnum(self.input_value), grad_output=self.grad_output, atol=self.atol, rtol=self.rtol,
                 likely_cause=self.likely_cause, hint=LIKELY_CAUSES.get(self.likely_cause, ""))
        d[expected_key] = jnum(self.expected)
        if self.output is not None:
            d["output"] = self.output
        d.update({k: jnum(v) for k, v in self.extra.items()})
        return d


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str
    likely_cause: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    #: the child's exception, when the check failed because code raised
    error: dict | None = None


PASSED = Outcome(True, "")


# --------------------------------------------------------------------------- numbers


def close(a: float, b: float, atol: float, rtol: float) -> bool:
    """torch.allclose's rule for one pair (b is the expected value): NaN is never close."""
    return a == b or abs(a - b) <= atol + rtol * abs(b)


def allclose(a: Sequence[float], b: Sequence[float], atol: float, rtol: float) -> bool:
    return len(a) == len(b) and all(close(x, y, atol, rtol) for x, y in zip(a, b))


def worst(a: Sequence[float], b: Sequence[float], atol: float, rtol: float) -> int:
    """Index of the element furthest outside tolerance (NaN counts as worst)."""
    best_i, best = 0, -math.inf
    for i, (x, y) in enumerate(zip(a, b)):
        d = abs(x - y) - (atol + rtol * abs(y))
        if d != d:
            return i
        if d > best:
            best_i, best = i, d
    return best_i


def unravel(i: int, shape: Sequence[int]) -> list[int]:
    idx = []
    for d in reversed(shape):
        idx.append(i % d if d else 0)
        i = i // d if d else 0
    return list(reversed(idx)) if shape else []


def jnum(x: Any) -> Any:
    """A JSON-safe number: NaN and infinities become strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if x != x else ("inf" if x > 0 else "-inf")
    return x


def fmt(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def fsum(values) -> float:
    """math.fsum, or NaN/inf where fsum refuses (inf - inf, overflow): a learner's numbers may be anything."""
    values = list(values)
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):
        return sum(values)


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return fsum(x * y for x, y in zip(a, b))


def detect_cause(a: list, r: list, r_ones: list | None, v_is_ones: bool, atol: float, rtol: float,
                 float32: bool) -> tuple[str, dict]:
    """Name what is likely wrong when analytical `a` differs from expected `r`."""
    if not all(math.isfinite(x) for x in a):
        return "wrong_value", {"nan": True}
    if r_ones is not None and not v_is_ones and allclose(a, r_ones, atol, rtol) and not allclose(r, r_ones, atol, rtol):
        return "forgot_grad_output", {}
    rr = dot(r, r)
    if rr > 0:
        if allclose(a, [-x for x in r], atol, rtol):
            return "wrong_sign", {}
        c = dot(a, r) / rr
        if abs(c - 1) > 1e-3 and abs(c) > 1e-6 and allclose(a, [c * x for x in r], max(atol, 1e-6), max(rtol, 1e-4)):
            return "constant_factor", {"factor": round(c, 4)}
    if float32:
        return "float32_imprecise", {}
    return "wrong_value", {}


def error_cause(err: dict, where: str, n_outputs: int) -> str:
    """The likely cause of an exception raised by forward or backward."""
    msg = err.get("message", "")
    if "incorrect number of gradients" in msg:
        return "wrong_number_of_returns"
    if "different than None" in msg:
        return "gradient_for_non_tensor"
    if "does not require grad and does not have a grad_fn" in msg:
        return "output_detached"
    if "returned an invalid gradient" in msg:
        return "wrong_shape"
    if err.get("type") == "TypeError" and "positional argument" in msg and n_outputs > 1 and err.get("where") == "backward":
        return "grad_output_not_used_per_output"
    return "forward_error" if where == "forward" else "backward_error"


def diff_inputs(args: Sequence[dict]) -> list[int]:
    """Positions of the arguments that are tensors requiring grad."""
    return [i for i, a in enumerate(args) if a["t"] == "tensor" and a.get("rg")]


def all_points(args: Sequence[dict]) -> list[list[int]]:
    """Every element of every input that requires grad, in torch's order (the full Jacobian)."""
    return [[i, j] for i in diff_inputs(args) for j in range(numel(args[i]["shape"]))]


# --------------------------------------------------------------------------- the Jacobian


@dataclass(frozen=True)
class Jacobians:
    """Numerical and analytical Jacobians of one case, per differentiable output and input."""

    #: numerical[k][arg_i][j] = d out_k (flat, all elements) / d x_arg_i[j], one column per point
    numerical: dict[int, dict[int, list[list[float]]]]
    out_shapes: list[list[int]]
    diff_outputs: list[int]


def numerical_jacobian(args: Sequence[dict], gc: dict, plan: dict) -> Jacobians:
    """Central differences (x + eps) - (x - eps) over 2 eps, as torch computes them, from the rows of
    forward values the child reported at the plan's points. Raises ValueError on ragged rows."""
    eps = plan["eps"]
    out_rg: list[bool] = gc["out_rg"]
    minus, plus = gc["minus"], gc["plus"]
    if len(minus) != len(plan["points"]) or len(plus) != len(minus):
        raise ValueError("rows")
    width = len(minus[0]) if minus else 0
    n_out = len(out_rg)
    shapes = gc["out_shapes"]
    numels = [numel(s) for s in shapes]
    if len(numels) != n_out or (minus and sum(numels) != width):
        raise ValueError("output sizes")
    offsets = [sum(numels[:k]) for k in range(n_out)]
    diff_out = [k for k in range(n_out) if out_rg[k]]
    num: dict[int, dict[int, list[list[float]]]] = {
        k: {i: [[0.0] * numel(args[i]["shape"]) for _ in range(numels[k])] for i in diff_inputs(args)}
        for k in range(n_out)}
    for p, (arg_i, flat_j) in enumerate(plan["points"]):
        a, b = minus[p], plus[p]
        if len(a) != width or len(b) != width:
            raise ValueError("row length")
        for k in range(n_out):
            col = num[k][arg_i]
            for e in range(numels[k]):
                col[e][flat_j] = (b[offsets[k] + e] - a[offsets[k] + e]) / (2 * eps)
    return Jacobians(num, [list(s) for s in shapes], diff_out)


def _grad_or_zeros(g: list | None, n: int) -> list[float]:
    return g if g is not None else [0.0] * n


def jacobian(args: Sequence[dict], gc: dict | None, plan: dict, names: Sequence[str], *, label: str = "",
             float32: bool = False) -> Outcome:
    """torch.autograd.gradcheck's verdict (fast_mode off), from the child's numbers for `plan`."""
    atol, rtol = plan["atol"], plan["rtol"]
    where = f" ({label})" if label else ""
    diff_in = diff_inputs(args)
    if not diff_in:
        return Outcome(False, "gradcheck needs at least one input tensor that requires grad.", "wrong_value")
    if gc is None:
        return Outcome(False, "gradcheck was not computed.", "forward_error")
    if not gc["ok"] and gc["stage"] in ("forward", "numerical"):
        err = gc["error"]
        return Outcome(False, f"forward raised {err['type']} while gradcheck ran it{where}: {err['message']}",
                       "forward_error", error=err)
    try:
        jac = numerical_jacobian(args, gc, plan)
    except (ValueError, IndexError, TypeError):
        return Outcome(False, "forward's outputs changed size while gradcheck perturbed the inputs.", "wrong_shape")
    if not jac.diff_outputs:
        # torch: with no differentiable output, the numerical gradient must be zero
        for k, per_in in jac.numerical.items():
            for arg_i, rows in per_in.items():
                for e, row in enumerate(rows):
                    j = next((j for j, v in enumerate(row) if v != 0), None)
                    if j is not None:
                        return Outcome(False, f"No output requires grad, yet output {k} changes with {names[arg_i]} "
                                              f"(at index {unravel(j, args[arg_i]['shape'])}): the output is cut off "
                                              "from autograd.", "output_detached")
        return Outcome(True, f"No output requires grad and none depends on the inputs{where}.")
    rows = gc.get("rows") or []
    for pos, k in enumerate(jac.diff_outputs):
        if pos >= len(rows):
            err = gc.get("error") or {"type": "Error", "message": "backward was not computed", "where": "backward"}
            return Outcome(False, f"backward raised {err['type']}{where}: {err['message']}",
                           error_cause(err, "backward", len(jac.diff_outputs)), error=err)
        first, second = rows[pos]
        sizes = {i: numel(args[i]["shape"]) for i in diff_in}
        for row in first + second:
            for g, i in zip(row, diff_in):
                if g is not None and len(g) != sizes[i]:
                    return Outcome(False, f"backward's gradient for {names[i]} has {len(g)} elements; the input has {sizes[i]}.",
                                   "wrong_shape")
        # reentrancy: the same grad_output twice must give the same gradient (torch's nondet_tol is 0)
        for row1, row2 in zip(first, second):
            for g1, g2, i in zip(row1, row2, diff_in):
                a1, a2 = _grad_or_zeros(g1, sizes[i]), _grad_or_zeros(g2, sizes[i])
                if any(abs(x - y) > 0 for x, y in zip(a1, a2)):
                    return Outcome(False, f"backward is not reentrant: called twice with the same grad_output it returned "
                                          f"different gradients for {names[i]}{where}.", "not_reentrant")
        for i in diff_in:
            for e, row in enumerate(first):
                a = _grad_or_zeros(row[diff_in.index(i)], sizes[i])
                n = jac.numerical[k][i]
                col_n = [n[e][j] for j in range(sizes[i])]
                if allclose(a, col_n, atol, rtol):
                    continue
                # torch reports the whole Jacobian; the learner gets its worst element, and a cause
                # named from the whole Jacobian of this input
                col = diff_in.index(i)
                rows_i = [_grad_or_zeros(r[col], sizes[i]) for r in first]
                num_rows = [[n[ee][jj] for jj in range(sizes[i])] for ee in range(len(n))]
                j = worst(a, col_n, atol, rtol)
                if len(rows_i) > 1 and all(r == rows_i[0] for r in rows_i) and any(rows_i[0]) \
                        and any(r != num_rows[0] for r in num_rows):
                    cause, info = "forgot_grad_output", {}  # the same answer whichever output element is asked about
                else:
                    cause, info = detect_cause([x for r in rows_i for x in r], [x for r in num_rows for x in r],
                                               None, True, atol, rtol, float32)
                diag = Diagnostic("gradcheck", names[i], unravel(j, args[i]["shape"]), a[j], col_n[j],
                                  args[i]["values"][j], f"basis vector e{unravel(e, jac.out_shapes[k])}", atol, rtol,
                                  cause, output=k, extra=info)
                out = f"output {k}" if len(jac.out_shapes) > 1 else "output"
                return Outcome(False, f"Jacobian mismatch{where}: d {out}{list(unravel(e, jac.out_shapes[k]))} / d {names[i]}"
                                      f"{diag.index} is {fmt(a[j])} by backward and {fmt(col_n[j])} by finite differences.",
                               cause, (diag,))
    if not gc["ok"] and gc["stage"] == "analytical":
        err = gc["error"]
        return Outcome(False, f"backward raised {err['type']}{where}: {err['message']}",
                       error_cause(err, "backward", len(jac.diff_outputs)), error=err)
    zero = gc.get("zero_grad_output")
    if zero is None:
        err = gc.get("error") or {"type": "Error", "message": "not computed", "where": "backward"}
        return Outcome(False, f"backward raised {err['type']} for a zero grad_output{where}: {err['message']}",
                       error_cause(err, "backward", len(jac.diff_outputs)), error=err)
    for g, i in zip(zero, diff_in):
        if g is not None and any(x != 0 for x in g):
            return Outcome(False, f"backward is not multiplied by grad_output: for a zero grad_output it returned a "
                                  f"nonzero gradient for {names[i]}{where}.", "forgot_grad_output")
    undefined = gc.get("undefined_grad_output")
    if not gc["ok"] or undefined is None:
        err = gc.get("error") or {"type": "Error", "message": "not computed", "where": "backward"}
        return Outcome(False, f"backward fails when a grad_output is undefined (None){where}: {err['type']}: {err['message']}. "
                              "With ctx.set_materialize_grads(False), backward must accept None.",
                       "backward_error", error=err)
    for grads in undefined:
        for g, i in zip(grads, diff_in):
            if g is not None and any(x != 0 for x in g):
                return Outcome(False, f"backward returned a nonzero gradient for {names[i]} when every grad_output is "
                                      f"zero or undefined{where}.", "forgot_grad_output")
    n_cols = sum(numel(args[i]["shape"]) for i in diff_in)
    n_rows = sum(numel(jac.out_shapes[k]) for k in jac.diff_outputs)
    return Outcome(True, f"gradcheck passed{where}: the {n_rows}x{n_cols} Jacobian of backward matches finite differences "
                         f"(atol {atol:g}, rtol {rtol:g}), backward is reentrant and handles zero and undefined grad_outputs.")


def _significant_bits(v: float) -> int:
    if v == 0 or not math.isfinite(v):
        return 0
    m = int(abs(math.frexp(v)[0]) * (1 << 53))
    return m.bit_length() - ((m & -m).bit_length() - 1)


def computes_in_float32(args: Sequence[dict], outputs: Sequence[dict]) -> bool:
    """Evidence that float64 work went through float32: every float64 output value fits float32's
    24-bit mantissa, some needs more than 16 bits (so not just small integers or halves), and some
    float64 input value does not fit float32."""
    inputs64 = [v for a in args if a["t"] == "tensor" and a["dtype"] == "float64" for v in a["values"]]
    outs64 = [v for o in outputs if o.get("dtype") == "float64" and o.get("values") for v in o["values"]]
    bits = [_significant_bits(v) for v in outs64]
    return (bool(inputs64 and outs64) and any(_significant_bits(v) > 24 for v in inputs64)
            and all(b <= 24 for b in bits) and any(b > 16 for b in bits))


def numerical_vjp(jac: Jacobians, args: Sequence[dict], vset: Sequence[Sequence[float]]) -> dict[int, list[float]]:
    """v^T J by finite differences, per input that requires grad."""
    out: dict[int, list[float]] = {}
    for i in diff_inputs(args):
        n = numel(args[i]["shape"])
        acc = [0.0] * n
        for pos, k in enumerate(jac.diff_outputs):
            v = vset[pos]
            rows = jac.numerical[k][i]
            for j in range(n):
                acc[j] += fsum(v[e] * rows[e][j] for e in range(len(v)))
        out[i] = acc
    return out


def random_vjps(args: Sequence[dict], jac: Jacobians | None, vsets: Sequence, vjps: Sequence[dict],
                ones_index: int | None, names: Sequence[str], atol: float, rtol: float, *, float32: bool = False) -> Outcome:
    """Each backward for a random grad_output against v^T J by finite differences."""
    if jac is None:
        return Outcome(False, "Not checked: finite differences were not computed.", "forward_error")
    ones_num = numerical_vjp(jac, args, vsets[ones_index]) if ones_index is not None else None
    checked = 0
    for m, (vset, vr) in enumerate(zip(vsets, vjps)):
        if m == ones_index:
            continue
        if not vr["ok"]:
            err = vr["error"]
            return Outcome(False, f"backward raised {err['type']}: {err['message']}",
                           error_cause(err, "backward", len(jac.diff_outputs)), error=err)
        num = numerical_vjp(jac, args, vset)
        for pos, i in enumerate(diff_inputs(args)):
            a = _grad_or_zeros(vr["grads"][pos], numel(args[i]["shape"]))
            n = num[i]
            if allclose(a, n, atol, rtol):
                continue
            cause, info = detect_cause(a, n, ones_num[i] if ones_num else None, False, atol, rtol, float32)
            j = worst(a, n, atol, rtol)
            diag = Diagnostic("random_vjp", names[i], unravel(j, args[i]["shape"]), a[j], n[j], args[i]["values"][j],
                              "random", atol, rtol, cause, extra=info)
            return Outcome(False, f"For a random grad_output, backward's gradient for {names[i]} at index {diag.index} is "
                                  f"{fmt(a[j])}; finite differences give {fmt(n[j])}.", cause, (diag,))
        checked += 1
    return Outcome(True, f"backward matches finite differences for {checked} random grad_output(s).")


def uses_needs_input_grad(source: str) -> bool:
    """Whether the code reads ctx.needs_input_grad (read by the judge from the source, not the child)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.Attribute) and n.attr == "needs_input_grad" for n in ast.walk(tree))


def needs_input_grad(args: Sequence[dict], jac: Jacobians | None, vset: Sequence, alone: Sequence[dict],
                     names: Sequence[str], atol: float, rtol: float, *, consulted: bool,
                     returned: dict | None = None) -> Outcome:
    """backward with each input alone requiring grad must give that input's true gradient; and a
    backward that consults ctx.needs_input_grad must return None where it says False."""
    if jac is None:
        return Outcome(False, "Not checked: finite differences were not computed.", "forward_error")
    num = numerical_vjp(jac, args, vset)
    configs: list[tuple[set[int], dict | None]] = [(set(diff_inputs(args)), returned)]
    for rep in alone:
        i = rep["arg"]
        label = names[i]
        if not rep["ok"]:
            err = rep["error"]
            return Outcome(False, f"With only {label} requiring grad, backward raised {err['type']}: {err['message']} "
                                  "(check how backward uses ctx.needs_input_grad).", "needs_input_grad", error=err)
        n = num[i]
        a = _grad_or_zeros(rep["grad"], len(n))
        if not allclose(a, n, atol, rtol):
            j = worst(a, n, atol, rtol)
            what = "no gradient" if rep["grad"] is None else f"{fmt(a[j])} at index {unravel(j, args[i]['shape'])}"
            return Outcome(False, f"With only {label} requiring grad, backward gave {what}; finite differences give "
                                  f"{fmt(n[j])}: the gradient of {label} must not depend on which other inputs need one "
                                  "(is it gated on the right ctx.needs_input_grad entry?).", "needs_input_grad")
        configs.append(({i}, rep.get("returned")))
    if consulted:
        for requiring, ret in configs:
            for p, (spec, item) in enumerate(zip(args, (ret or {}).get("items", []))):
                if spec["t"] == "tensor" and p not in requiring and item["kind"] == "tensor":
                    who = ", ".join(names[i] for i in sorted(requiring)) or "no input"
                    return Outcome(False, f"With {who} requiring grad, backward still computed a gradient for {names[p]}, "
                                          "which does not require grad: your backward reads ctx.needs_input_grad, so it "
                                          "is gated on the wrong entry.", "needs_input_grad")
    return Outcome(True, f"backward gives each input's gradient when it alone requires grad ({len(alone)} input(s)).")


def inputs_unchanged(args: Sequence[dict], inputs_after: Sequence, names: Sequence[str],
                     returned_inputs: Sequence[int] = ()) -> Outcome:
    """forward must not change its inputs in place (an input it returns, marked dirty, may change)."""
    for i, (spec, after) in enumerate(zip(args, inputs_after)):
        if spec["t"] != "tensor" or i in returned_inputs:
            continue
        before = [int(v) if isinstance(v, bool) else v for v in spec["values"]]
        if after is None or after != before:
            j = next((j for j, (x, y) in enumerate(zip(after or [], before)) if x != y), 0)
            got = fmt(after[j]) if after else "?"
            return Outcome(False, f"forward changed {names[i]} in place: at index {unravel(j, spec['shape'])} it was "
                                  f"{fmt(before[j])} and became {got}.", "input_modified")
    return Outcome(True, "forward leaves its inputs unchanged.")


def grad_output_unchanged(vjps: Sequence[dict]) -> Outcome:
    for vr in vjps:
        if vr.get("v_changed"):
            return Outcome(False, "backward changed grad_output in place: compute a new tensor instead.", "grad_output_modified")
    return Outcome(True, "backward leaves grad_output unchanged.")


def backward_arity(args: Sequence[dict], returned: dict | None, names: Sequence[str], *,
                   ref_items: Sequence[dict] = (), strict_none: bool = False) -> Outcome:
    """What backward returned, before autograd checked and reduced it: one value per input, None for
    non-tensors, each gradient shaped like its input (autograd silently sums a broadcast gradient)."""
    if returned is None:
        return Outcome(False, "backward was never called: the output is not connected to your Function.", "output_detached")
    n_args = len(args)
    if returned["count"] != n_args:
        return Outcome(False, f"backward returned {returned['count']} value(s) for {n_args} forward input(s) "
                              f"({', '.join(names)}): return one per input, in order.", "wrong_number_of_returns")
    for p, (spec, item) in enumerate(zip(args, returned["items"])):
        name = names[p]
        if spec["t"] != "tensor":
            if item["kind"] != "none":
                what = "None" if spec["t"] == "none" else f"a Python {spec['t']}"
                return Outcome(False, f"backward returned a {item.get('type', item['kind'])} for {name}, which is {what}: "
                                      "return None in that slot.", "gradient_for_non_tensor")
            continue
        if item["kind"] == "tensor":
            if item["shape"] != spec["shape"]:
                cause = "not_reduced" if numel(item["shape"]) > numel(spec["shape"]) else "wrong_shape"
                return Outcome(False, f"backward returned a gradient of shape {item['shape']} for {name}, whose shape is "
                                      f"{spec['shape']}.", cause)
            if strict_none and p < len(ref_items) and ref_items[p]["kind"] == "none":
                return Outcome(False, f"{name} needs no gradient, but backward computed one: check ctx.needs_input_grad "
                                      "and return None.", "needs_input_grad")
        elif item["kind"] == "other":
            return Outcome(False, f"backward returned a {item.get('type')} for {name}; return a tensor (or None).", "wrong_value")
        elif spec.get("rg"):
            return Outcome(False, f"backward returned None for {name}, which needs a gradient.", "wrong_value")
    return Outcome(True, "backward returns one value per input, None where no gradient is taken.")
