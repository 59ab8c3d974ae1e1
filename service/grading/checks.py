"""The check engine: "is this backward the derivative of this forward?", asked one way for grades
and for runs.

Pure Python on plain numbers (no torch): the child computes numbers (harness.py), the judge
decides here. Every function takes one case's arguments (``cases.Arg``) and the child's numbers for
it, already parsed by ``reports.parse_report``, and returns an ``Outcome``.

``jacobian`` is torch.autograd.gradcheck (fast_mode off) decided from the numbers its procedure
produces (see ``harness._gradcheck_numbers``): finite differences of every output element against
every element of every input that requires grad, the analytical Jacobian from one backward per
basis grad_output (computed twice: reentrancy), backward for zero grad_outputs and for undefined
ones, each compared as torch compares them (``|a - n| <= atol + rtol * |n|``, NaN never close).
Its verdict therefore agrees with torch's on the same inputs; ``tests/grading/test_agreement.py``
holds it to that. The other checks are hygiene that torch's gradcheck does not make, each named for
what it checks.

``projections`` is the Jacobian check for Jacobians too large to send element by element: numbers
for k random input directions u and k random grad_outputs v, drawn from a seed of the judge
(``draws.projection_vectors``, shared with the child), the judge comparing v·(f(x+eps u) -
f(x-eps u))/(2 eps) with (v^T J)·u for every pair. Its escape probability is bounded in
``projection_escape_bound`` (derived in docs/grading.md).

``gradgradcheck`` is torch.autograd.gradgradcheck (fast_mode off): gradcheck of the function
(x, v) -> backward's gradients for grad_output v (torch's ``new_func``), decided by ``jacobian``
(or ``projections`` when large) from the numbers the child computes for that function.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cases import Arg, GradgradPlan, JacobianPlan, diff_inputs
from .draws import numel, projection_vectors
from .reports import (
    ChildError,
    GradcheckNumbers,
    GradgradNumbers,
    NeedsInputGrad,
    Output,
    Returned,
    ReturnedItem,
    Vjp,
    gradgrad_args,
)
from .terms import LIKELY_CAUSES

#: Random projections: k input directions and k grad_outputs (every pair compared), made when the
#: differentiable input elements and the output elements of a Jacobian number at most
#: MAX_PROJECTED_ELEMENTS together (the numbers of a run's first- and second-order checks then fit
#: one result frame; tests/grading/test_projections.py measures the largest).
PROJECTIONS = 8
MAX_PROJECTED_ELEMENTS = 6144


@dataclass(frozen=True)
class Diagnostic:
    """The worst element of a failed numerical comparison."""

    check: str
    input: str
    index: list[int]
    analytical: float
    expected: float
    input_value: float | None
    grad_output: str
    atol: float
    rtol: float
    likely_cause: str
    output: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self, *, case: str | None = None, expected_key: str = "numerical") -> dict[str, Any]:
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
    """One check's verdict (registry.CheckResult reports it)."""

    passed: bool
    message: str
    likely_cause: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    #: the child's exception, when the check failed because code raised
    error: ChildError | None = None
    #: a gradient of the wrong shape: {"input": name, "gradient": its shape, "expected": the input's}
    shapes: dict[str, Any] | None = None
    #: further causes the same failure may have (after `likely_cause`)
    other_causes: tuple[str, ...] = ()
    #: torch's own message for the same check, when it was asked for and failed (shown beside ours)
    torch_message: str | None = None


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


def fsum(values: Iterable[float]) -> float:
    """math.fsum, or NaN/inf where fsum refuses (inf - inf, overflow): a learner's numbers may be anything."""
    numbers = list(values)
    try:
        return math.fsum(numbers)
    except (ValueError, OverflowError):
        return float(sum(numbers))


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    try:
        return math.fsum(map(operator.mul, a, b))
    except (ValueError, OverflowError):
        return float(sum(map(operator.mul, a, b)))


def detect_cause(a: list[Any], r: list[Any], r_ones: list[Any] | None, v_is_ones: bool, atol: float, rtol: float,
                 float32: bool) -> tuple[str, dict[str, Any]]:
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


def error_cause(err: ChildError, where: str, n_outputs: int) -> str:
    """The likely cause of an exception raised by forward or backward."""
    msg = err.message
    if "incorrect number of gradients" in msg:
        return "wrong_number_of_returns"
    if "different than None" in msg:
        return "gradient_for_non_tensor"
    if "does not require grad and does not have a grad_fn" in msg:
        return "output_detached"
    if "returned an invalid gradient" in msg:
        return "wrong_shape"
    if err.type == "TypeError" and "positional argument" in msg and n_outputs > 1 and err.where == "backward":
        return "grad_output_not_used_per_output"
    return "forward_error" if where == "forward" else "backward_error"


def projection_escape_bound(t: float, k: int = 1) -> float:
    """An upper bound on the probability that a backward whose Jacobian is off by D passes k
    independent projection pairs, where t = tolerance / ||D||_2 (spectral norm), for Gaussian u, v:
    one pair escapes with probability at most (2t/pi)(ln(1/t) + 1.63) (docs/grading.md)."""
    if t <= 0:
        return 0.0
    p = 1.0 if t >= 1 else min(1.0, (2 * t / math.pi) * (math.log(1 / t) + 1.63))
    return p ** k


# --------------------------------------------------------------------------- the Jacobian


@dataclass(frozen=True)
class Jacobians:
    """Numerical and analytical Jacobians of one case, per differentiable output and input."""

    #: numerical[k][arg_i][j] = d out_k (flat, all elements) / d x_arg_i[j], one column per point
    numerical: dict[int, dict[int, list[list[float]]]]
    out_shapes: list[list[int]]
    diff_outputs: list[int]


#: How a Jacobian check speaks: of forward and backward (gradcheck), or of backward and double
#: backward (gradgradcheck: the Jacobian checked is that of backward's gradients).
GRADCHECK_WORDS = {"check": "gradcheck", "mismatch": "Jacobian mismatch", "function": "forward",
                   "backward": "backward", "fd": "finite differences"}
GRADGRADCHECK_WORDS = {"check": "gradgradcheck", "mismatch": "Double-backward mismatch", "function": "backward",
                       "backward": "double backward", "fd": "finite differences of backward"}


def numerical_jacobian(args: Sequence[Arg], gc: GradcheckNumbers, plan: JacobianPlan) -> Jacobians:
    """Central differences (x + eps) - (x - eps) over 2 eps, as torch computes them, from the rows of
    forward values the child reported at the plan's points. Raises ValueError on ragged rows."""
    eps = plan.eps
    points = plan.points_of(args) or []
    out_rg = gc.out_rg
    minus, plus = gc.minus, gc.plus
    if len(minus) != len(points) or len(plus) != len(minus):
        raise ValueError("rows")
    width = len(minus[0]) if minus else 0
    n_out = len(out_rg)
    shapes = gc.out_shapes
    numels = [numel(s) for s in shapes]
    if len(numels) != n_out or (minus and sum(numels) != width):
        raise ValueError("output sizes")
    offsets = [sum(numels[:k]) for k in range(n_out)]
    diff_out = [k for k in range(n_out) if out_rg[k]]
    num: dict[int, dict[int, list[list[float]]]] = {
        k: {i: [[0.0] * args[i].numel for _ in range(numels[k])] for i in diff_inputs(args)}
        for k in range(n_out)}
    for p, (arg_i, flat_j) in enumerate(points):
        a, b = minus[p], plus[p]
        if len(a) != width or len(b) != width:
            raise ValueError("row length")
        for k in range(n_out):
            col = num[k][arg_i]
            for e in range(numels[k]):
                col[e][flat_j] = (b[offsets[k] + e] - a[offsets[k] + e]) / (2 * eps)
    return Jacobians(num, [list(s) for s in shapes], diff_out)


def _not_computed(message: str) -> ChildError:
    """The error of a step the child's numbers stop before (its own error, when it sent one, is used instead)."""
    return ChildError("backward", "Error", message, "", None)


def _grad_or_zeros(g: list[Any] | None, n: int) -> list[float]:
    return g if g is not None else [0.0] * n


def grads_by_input(args: Sequence[Arg], grads: Sequence[list[Any] | None]) -> dict[int, list[float]]:
    """A backward's gradients by the position of their input (an undefined one as zeros)."""
    return {i: _grad_or_zeros(g, args[i].numel) for g, i in zip(grads, diff_inputs(args))}


def _out_label(k: int, n_out: int, out_names: Sequence[str] | None) -> str:
    if out_names is not None and k < len(out_names):
        return out_names[k]
    return f"output {k}" if n_out > 1 else "output"


def _numerical_stage_error(gc: GradcheckNumbers, words: dict[str, Any], where: str) -> Outcome | None:
    if gc.error is not None and not gc.ok and gc.stage in ("forward", "numerical"):
        err = gc.error
        return Outcome(False, f"{words['function']} raised {err.type} while {words['check']} ran it{where}: "
                              f"{err.message}", "forward_error", error=err)
    return None


def _zero_and_undefined(gc: GradcheckNumbers, args: Sequence[Arg], names: Sequence[str], n_diff_out: int, where: str,
                        words: dict[str, Any]) -> Outcome | None:
    """torch's last two steps: backward for zero grad_outputs gives zero; backward accepts undefined
    (None) grad_outputs, all at once and one output at a time, and gives zero or None."""
    diff_in = diff_inputs(args)
    bw = words["backward"]
    if gc.error is not None and not gc.ok and gc.stage == "analytical":
        err = gc.error
        return Outcome(False, f"{bw} raised {err.type}{where}: {err.message}",
                       error_cause(err, "backward", n_diff_out), error=err)
    zero = gc.zero_grad_output
    if zero is None:
        err = gc.error or _not_computed("not computed")
        return Outcome(False, f"{bw} raised {err.type} for a zero grad_output{where}: {err.message}",
                       error_cause(err, "backward", n_diff_out), error=err)
    for g, i in zip(zero, diff_in):
        if g is not None and any(x != 0 for x in g):
            return Outcome(False, f"{bw} is not multiplied by grad_output: for a zero grad_output it returned a "
                                  f"nonzero gradient for {names[i]}{where}.", "forgot_grad_output")
    undefined = gc.undefined_grad_output
    if not gc.ok or undefined is None:
        err = gc.error or _not_computed("not computed")
        return Outcome(False, f"{bw} fails when a grad_output is undefined (None){where}: {err.type}: {err.message}. "
                              "With ctx.set_materialize_grads(False), backward must accept None.",
                       "backward_error", error=err)
    for grads in undefined:
        for g, i in zip(grads, diff_in):
            if g is not None and any(x != 0 for x in g):
                return Outcome(False, f"{bw} returned a nonzero gradient for {names[i]} when every grad_output is "
                                      f"zero or undefined{where}.", "forgot_grad_output")
    return None


def jacobian(args: Sequence[Arg], gc: GradcheckNumbers | None, plan: JacobianPlan, names: Sequence[str], *, label: str = "",
             float32: bool = False, words: dict[str, Any] = GRADCHECK_WORDS, out_names: Sequence[str] | None = None,
             zero_cause: str | None = None) -> Outcome:
    """torch.autograd.gradcheck's verdict (fast_mode off), from the child's numbers for `plan`.
    `zero_cause`: the cause to name when backward's block of the Jacobian is zero and finite
    differences' is not (gradgradcheck: backward's graph is cut)."""
    where = f" ({label})" if label else ""
    check = words["check"]
    diff_in = diff_inputs(args)
    if not diff_in:
        return Outcome(False, f"{check} needs at least one input tensor that requires grad.", "wrong_value")
    if gc is None:
        return Outcome(False, f"{check} was not computed.", "forward_error")
    failed = _numerical_stage_error(gc, words, where)
    if failed is not None:
        return failed
    try:
        jac = numerical_jacobian(args, gc, plan)
    except (ValueError, IndexError, TypeError):
        return Outcome(False, f"{words['function']}'s outputs changed size while {check} perturbed the inputs.", "wrong_shape")
    rows = _JacobianRows(args, names, jac, plan.atol, plan.rtol, words, where, float32, out_names, zero_cause)
    if not jac.diff_outputs:
        return rows.no_differentiable_output()
    analytical = gc.rows or []
    for pos, k in enumerate(jac.diff_outputs):
        if pos >= len(analytical):
            err = gc.error or _not_computed(f"{words['backward']} was not computed")
            return Outcome(False, f"{words['backward']} raised {err.type}{where}: {err.message}",
                           error_cause(err, "backward", len(jac.diff_outputs)), error=err)
        first, second = analytical[pos]
        failed = rows.sizes_wrong(first + second) or rows.not_reentrant(first, second) or rows.mismatch(k, first)
        if failed is not None:
            return failed
    failed = _zero_and_undefined(gc, args, names, len(jac.diff_outputs), where, words)
    if failed is not None:
        return failed
    n_cols = sum(rows.sizes.values())
    n_rows = sum(numel(jac.out_shapes[k]) for k in jac.diff_outputs)
    return Outcome(True, f"{check} passed{where}: the {n_rows}x{n_cols} Jacobian of {words['function']} matches "
                         f"{words['fd']} (atol {plan.atol:g}, rtol {plan.rtol:g}), {words['backward']} is reentrant "
                         "and handles zero and undefined grad_outputs.")


@dataclass(frozen=True)
class _JacobianRows:
    """jacobian's comparisons of backward's rows (one per basis grad_output) with finite differences."""

    args: Sequence[Arg]
    names: Sequence[str]
    jac: Jacobians
    atol: float
    rtol: float
    words: dict[str, Any]
    where: str
    float32: bool
    out_names: Sequence[str] | None
    zero_cause: str | None

    @property
    def diff_in(self) -> list[int]:
        return diff_inputs(self.args)

    @property
    def sizes(self) -> dict[int, int]:
        return {i: numel(self.args[i].shape) for i in self.diff_in}

    def _out(self, k: int) -> str:
        return _out_label(k, len(self.jac.out_shapes), self.out_names)

    def no_differentiable_output(self) -> Outcome:
        """torch: with no differentiable output, the numerical gradient must be zero."""
        for k, per_in in self.jac.numerical.items():
            for arg_i, rows in per_in.items():
                for row in rows:
                    j = next((j for j, v in enumerate(row) if v != 0), None)
                    if j is not None:
                        return Outcome(False, f"No output requires grad, yet {self._out(k)} changes with "
                                              f"{self.names[arg_i]} (at index {unravel(j, self.args[arg_i].shape)}): the "
                                              "output is cut off from autograd.", "output_detached")
        return Outcome(True, f"No output requires grad and none depends on the inputs{self.where}.")

    def sizes_wrong(self, rows: list[Any]) -> Outcome | None:
        sizes, diff_in = self.sizes, self.diff_in
        for row in rows:
            for g, i in zip(row, diff_in):
                if g is not None and len(g) != sizes[i]:
                    return Outcome(False, f"{self.words['backward']}'s gradient for {self.names[i]} has {len(g)} elements; "
                                          f"the input has {sizes[i]}.", "wrong_shape")
        return None

    def not_reentrant(self, first: list[Any], second: list[Any]) -> Outcome | None:
        """The same grad_output twice must give the same gradient (torch's nondet_tol is 0)."""
        sizes, diff_in = self.sizes, self.diff_in
        for row1, row2 in zip(first, second):
            for g1, g2, i in zip(row1, row2, diff_in):
                a1, a2 = _grad_or_zeros(g1, sizes[i]), _grad_or_zeros(g2, sizes[i])
                if any(abs(x - y) > 0 for x, y in zip(a1, a2)):
                    return Outcome(False, f"{self.words['backward']} is not reentrant: called twice with the same "
                                          f"grad_output it returned different gradients for {self.names[i]}{self.where}.",
                                   "not_reentrant")
        return None

    def mismatch(self, k: int, first: list[Any]) -> Outcome | None:
        """The first element of output k's block where backward and finite differences disagree."""
        sizes, diff_in, jac = self.sizes, self.diff_in, self.jac
        for i in diff_in:
            col = diff_in.index(i)
            n = jac.numerical[k][i]
            for e, row in enumerate(first):
                a = _grad_or_zeros(row[col], sizes[i])
                col_n = [n[e][j] for j in range(sizes[i])]
                if not allclose(a, col_n, self.atol, self.rtol):
                    return self._explain(k, i, e, a, col_n, first)
        return None

    def _explain(self, k: int, i: int, e: int, a: list[float], col_n: list[float], first: list[Any]) -> Outcome:
        """torch reports the whole Jacobian; the learner gets its worst element, and a cause named
        from the whole Jacobian of this input."""
        sizes, jac, words = self.sizes, self.jac, self.words
        col = self.diff_in.index(i)
        n = jac.numerical[k][i]
        rows_i = [_grad_or_zeros(r[col], sizes[i]) for r in first]
        num_rows = [[n[ee][jj] for jj in range(sizes[i])] for ee in range(len(n))]
        j = worst(a, col_n, self.atol, self.rtol)
        if self.zero_cause is not None and not any(x for r in rows_i for x in r):
            cause, info = self.zero_cause, dict[str, Any]()
        elif len(rows_i) > 1 and all(r == rows_i[0] for r in rows_i) and any(rows_i[0]) \
                and any(r != num_rows[0] for r in num_rows):
            cause, info = "forgot_grad_output", {}  # the same answer whichever output element is asked about
        else:
            cause, info = detect_cause([x for r in rows_i for x in r], [x for r in num_rows for x in r],
                                       None, True, self.atol, self.rtol, self.float32)
        # The plain facts a sentence in the learner's terms needs (diagnosis.py): which output element,
        # the shapes, whether finite differences say that element depends on this input element at
        # all, and whether this block of the Jacobian is diagonal (an elementwise function).
        in_shape, out_shape = list(self.args[i].shape), list(jac.out_shapes[k])
        tiny = self.atol
        elementwise = in_shape == out_shape and all(
            abs(v) <= tiny for ee, row in enumerate(num_rows) for jj, v in enumerate(row) if ee != jj)
        facts = {"output_index": unravel(e, out_shape), "output_shape": out_shape, "input_shape": in_shape,
                 "depends": not abs(col_n[j]) <= tiny, "elementwise": elementwise}
        diag = Diagnostic(words["check"], self.names[i], unravel(j, self.args[i].shape), a[j], col_n[j],
                          self.args[i].values[j], f"basis vector e{unravel(e, jac.out_shapes[k])}", self.atol, self.rtol,
                          cause, output=k, extra={**info, **facts})
        return Outcome(False, f"{words['mismatch']}{self.where}: the derivative of {self._out(k)}"
                              f"{list(unravel(e, jac.out_shapes[k]))} with respect to {self.names[i]}{diag.index} is "
                              f"{fmt(a[j])} by {words['backward']} and {fmt(col_n[j])} by {words['fd']}.", cause, (diag,))


# --------------------------------------------------------------------------- random projections


@dataclass(frozen=True)
class Projections:
    """What the judge makes of a projection report: its own directions u and grad_outputs v, and
    the directional finite differences d_k = (f(x + eps u_k) - f(x - eps u_k)) / (2 eps) over the
    differentiable outputs (flattened, concatenated), d_all over every output."""

    us: Sequence[Sequence[float]]
    vs: Sequence[Sequence[float]]
    d: list[list[float]]
    d_all: list[list[float]]
    n_in: int
    n_out: int


def projection_numbers(args: Sequence[Arg], rep: GradcheckNumbers, plan: JacobianPlan) -> Projections:
    """The judge's side of a projection report. Raises ValueError on rows of the wrong shape."""
    proj = plan.projections
    assert proj is not None
    k, eps = proj.k, plan.eps
    shapes, out_rg = rep.out_shapes, rep.out_rg
    numels = [numel(s) for s in shapes]
    width = sum(numels)
    minus, plus = rep.minus, rep.plus
    if len(minus) != k or len(plus) != k or any(len(r) != width for r in minus + plus):
        raise ValueError("rows")
    keep = [e for kk, n in enumerate(numels) if out_rg[kk] for e in range(sum(numels[:kk]), sum(numels[:kk]) + n)]
    d_all = [[(b - a) / (2 * eps) for a, b in zip(mr, pr)] for mr, pr in zip(minus, plus)]
    n_in = sum(args[i].numel for i in diff_inputs(args))
    return Projections(us=projection_vectors(proj.seed, "u", k, n_in),
                       vs=projection_vectors(proj.seed, "v", k, len(keep)),
                       d=[[row[e] for e in keep] for row in d_all], d_all=d_all, n_in=n_in, n_out=len(keep))


def _norm(v: Sequence[float]) -> float:
    return math.sqrt(dot(v, v))


def _flat_grads(grads: Sequence[list[Any] | None], args: Sequence[Arg]) -> list[float]:
    return [x for g, i in zip(grads, diff_inputs(args)) for x in _grad_or_zeros(g, args[i].numel)]


def projection_tolerance(atol: float, rtol: float, u: Sequence[float], d: Sequence[float], v_scale: float,
                         n_out: int) -> float:
    """gradcheck's atol and rtol carried to one projection v^T J u: atol * ||u|| * sqrt(m) + rtol * ||d||,
    times v's scale (1 for a standard Gaussian v; ||v|| / sqrt(m) for any other). Given u it does
    not depend on a Gaussian v, which the bound in docs/grading.md needs."""
    return (atol * _norm(u) * math.sqrt(n_out) + rtol * _norm(d)) * v_scale


def _pair_failures(pr: Projections, grads: Sequence[Sequence[float]], vs: Sequence[Sequence[float]], scales: Sequence[float],
                   atol: float, rtol: float) -> list[tuple[float, int, int, float, float, float]]:
    """(excess, q, k, analytical, numerical, tolerance) for every pair (grad_output q, direction k)
    outside tolerance: analytical (v_q^T J) . u_k against numerical v_q . d_k. NaN is never close."""
    bad = []
    for k, (u, d) in enumerate(zip(pr.us, pr.d)):
        tol_k = projection_tolerance(atol, rtol, u, d, 1.0, pr.n_out)
        for q, (g, v, s) in enumerate(zip(grads, vs, scales)):
            a, n = dot(g, u), dot(v, d)
            tol = tol_k * s
            excess = abs(a - n) - tol
            if excess != excess or not math.isfinite(a) or not math.isfinite(n):
                excess = math.inf
            if excess > 0:
                bad.append((excess / max(tol, 1e-300), q, k, a, n, tol))
    return bad


def _projection_cause(pr: Projections, grads: Sequence[Sequence[float]], vs: Sequence[Sequence[float]], scales: Sequence[float],
                      atol: float, rtol: float, float32: bool, skip_ones: Sequence[int] = ()) -> tuple[str, dict[str, Any]]:
    """detect_cause over every pair of a projection check (not only the failing ones: a factor is
    seen in all of them), each pair with its own tolerance."""
    pairs = [(q, k) for k in range(len(pr.us)) for q in range(len(grads))]
    a = [dot(grads[q], pr.us[k]) for q, k in pairs]
    n = [dot(vs[q], pr.d[k]) for q, k in pairs]
    tol = [projection_tolerance(atol, rtol, pr.us[k], pr.d[k], scales[q], pr.n_out) for q, k in pairs]
    ones = [fsum(pr.d[k]) for _, k in pairs]  # (1^T J)·u_k: what a backward that ignores grad_output gives

    def near(xs: Sequence[float], ys: Sequence[float], keep: Callable[[int], bool] = lambda p: True) -> bool:
        return all(abs(x - y) <= t for p, (x, y, t) in enumerate(zip(xs, ys, tol)) if keep(p))

    if not all(math.isfinite(x) for x in a):
        return "wrong_value", {"nan": True}
    def random_pairs(p: int) -> bool:
        return pairs[p][0] not in skip_ones

    if any(random_pairs(p) for p in range(len(pairs))) and near(a, ones, random_pairs) and not near(n, ones, random_pairs):
        return "forgot_grad_output", {}
    if near(a, [-x for x in n]):
        return "wrong_sign", {}
    nn = dot(n, n)
    if nn > 0:
        c = dot(a, n) / nn
        if abs(c - 1) > 1e-3 and abs(c) > 1e-6 and near(a, [c * x for x in n]):
            return "constant_factor", {"factor": round(c, 4)}
    return ("float32_imprecise" if float32 else "wrong_value"), {}


def projections(args: Sequence[Arg], rep: GradcheckNumbers | None, plan: JacobianPlan, names: Sequence[str], *, label: str = "",  # noqa: C901
                float32: bool = False, words: dict[str, Any] = GRADCHECK_WORDS, check: str = "jacobian_projections") -> Outcome:
    """The Jacobian check by random projections, from a report the child made for `plan` (mode
    "projections"): for k directions u and k grad_outputs v drawn from the plan's seed by the judge,
    every pair's v·d_k against (v^T J)·u_k, then reentrancy, zero and undefined grad_outputs."""
    atol, rtol = plan.atol, plan.rtol
    where = f" ({label})" if label else ""
    bw, fd = words["backward"], words["fd"]
    diff_in = diff_inputs(args)
    if not diff_in:
        return Outcome(False, f"{check} needs at least one input tensor that requires grad.", "wrong_value")
    if rep is None:
        return Outcome(False, f"{check} was not computed.", "forward_error")
    failed = _numerical_stage_error(rep, words, where)
    if failed is not None:
        return failed
    try:
        pr = projection_numbers(args, rep, plan)
    except (ValueError, IndexError, TypeError, KeyError):
        return Outcome(False, f"{words['function']}'s outputs changed size while {check} perturbed the inputs.", "wrong_shape")
    k = len(pr.us)
    if pr.n_out == 0:  # torch: no differentiable output, so the numerical derivative must be zero
        for j, row in enumerate(pr.d_all):
            if any(x != 0 for x in row):
                return Outcome(False, f"No output requires grad, yet the output changes along random direction {j + 1}: "
                                      "the output is cut off from autograd.", "output_detached")
        return Outcome(True, f"No output requires grad and none depends on the inputs{where}.")
    grads, grads2 = rep.grads or [], rep.grads2 or []
    if len(grads) < k or len(grads2) < 1:
        err = rep.error or _not_computed(f"{bw} was not computed")
        return Outcome(False, f"{bw} raised {err.type}{where}: {err.message}",
                       error_cause(err, "backward", len(rep.out_shapes)), error=err)
    for g_set in grads + grads2:
        for g, i in zip(g_set, diff_in):
            if g is not None and len(g) != args[i].numel:
                return Outcome(False, f"{bw}'s gradient for {names[i]} has {len(g)} elements; the input has "
                                      f"{args[i].numel}.", "wrong_shape")
    for g1, g2 in zip(grads, grads2):
        for a1, a2, i in zip(g1, g2, diff_in):
            n = args[i].numel
            if any(abs(x - y) > 0 for x, y in zip(_grad_or_zeros(a1, n), _grad_or_zeros(a2, n))):
                return Outcome(False, f"{bw} is not reentrant: called twice with the same grad_output it returned "
                                      f"different gradients for {names[i]}{where}.", "not_reentrant")
    flat = [_flat_grads(g, args) for g in grads]
    bad = _pair_failures(pr, flat, pr.vs, [1.0] * k, atol, rtol)
    if bad:
        diag_first = sorted(bad, key=lambda b: (b[1] != b[2], -b[0]))  # an independent pair first, the worst
        _, q, kk, analytical, numerical, tol = diag_first[0]
        cause, info = _projection_cause(pr, flat, pr.vs, [1.0] * k, atol, rtol, float32)
        who = ", ".join(names[i] for i in diff_in)
        diag = Diagnostic(check, who, [], analytical, numerical, None, f"random grad_output v{q + 1}", atol, rtol, cause,
                          extra={"direction": f"random u{kk + 1}", "tolerance": tol, **info})
        return Outcome(False, f"{words['mismatch']}{where} along random directions: for input direction u{kk + 1} and "
                              f"grad_output v{q + 1}, v^T J u is {fmt(analytical)} by {bw} ((v^T J)·u) and {fmt(numerical)} by {fd} "
                              f"along u (tolerance {fmt(tol)}); {len(bad)} of {k * k} pairs disagree.", cause, (diag,))
    failed = _zero_and_undefined(rep, args, names, len(rep.out_shapes), where, words)
    if failed is not None:
        return failed
    return Outcome(True, f"{bw.capitalize()} agrees with {fd}{where} along {k} random directions for {k} random "
                         f"grad_outputs ({k * k} projections v^T J u of the {pr.n_out}x{pr.n_in} Jacobian, too large to "
                         f"compare element by element; atol {atol:g} and rtol {rtol:g} carried to each projection); "
                         f"{bw} is reentrant and handles zero and undefined grad_outputs.")


def projected_vjps(args: Sequence[Arg], rep: GradcheckNumbers, plan: JacobianPlan, vsets: Sequence[Any], vjps: Sequence[Vjp],
                   names: Sequence[str], *, float32: bool = False) -> Outcome:
    """backward's gradients for the grad_output of ones and the random ones (the gradients a run
    shows), each against finite differences along every random direction of the projection check."""
    atol, rtol = plan.atol, plan.rtol
    try:
        pr = projection_numbers(args, rep, plan)
    except (ValueError, IndexError, TypeError, KeyError):
        return Outcome(False, "Not checked: forward's outputs changed size along the random directions.", "wrong_shape")
    grads, vs, scales, labels = [], [], [], []
    for m, (vset, vr) in enumerate(zip(vsets, vjps)):
        if vr.error is not None:
            err = vr.error
            return Outcome(False, f"backward raised {err.type}: {err.message}",
                           error_cause(err, "backward", len(vset)), error=err)
        v = [x for part in vset for x in part]
        if len(v) != pr.n_out:
            return Outcome(False, "Not checked: the grad_outputs do not match the differentiable outputs.", "wrong_shape")
        grads.append(_flat_grads(vr.grads, args))
        vs.append(v)
        scales.append(_norm(v) / math.sqrt(pr.n_out) if pr.n_out else 1.0)
        labels.append("the grad_output of ones" if m == 0 else "a random grad_output")
    bad = _pair_failures(pr, grads, vs, scales, atol, rtol)
    if bad:
        _, q, k, a, n, tol = max(bad)
        cause, info = _projection_cause(pr, grads, vs, scales, atol, rtol, float32, skip_ones=(0,))
        diag = Diagnostic("random_vjp", ", ".join(names[i] for i in diff_inputs(args)), [], a, n, None,
                          "ones" if q == 0 else "random", atol, rtol, cause,
                          extra={"direction": f"random u{k + 1}", "tolerance": tol, **info})
        return Outcome(False, f"For {labels[q]}, backward's gradient projected on random direction u{k + 1} is {fmt(a)}; "
                              f"finite differences along u{k + 1} give {fmt(n)} (tolerance {fmt(tol)}).", cause, (diag,))
    return Outcome(True, f"backward's gradients for {len(grads)} grad_output(s) (ones and random) match finite differences "
                         f"along {len(pr.us)} random directions.")


# --------------------------------------------------------------------------- double backward


def _double_backward_cause(err: ChildError) -> str:
    msg = err.message
    if "once_differentiable" in msg or "differentiate twice" in msg or "does not require grad" in msg:
        return "backward_not_differentiable"
    return "backward_error"


def gradgrad_names(names: Sequence[str], gg: GradgradNumbers) -> list[str]:
    n = len(gg.v)
    return list(names) + (["grad_output"] if n == 1 else [f"grad_output {k}" for k in range(n)])


def gradgradcheck(args: Sequence[Arg], gg: GradgradNumbers | None, plan: GradgradPlan, names: Sequence[str], *, label: str = "") -> Outcome:  # noqa: C901
    """torch.autograd.gradgradcheck's verdict (fast_mode off) from the child's numbers: gradcheck of
    the function (inputs, grad_outputs) -> backward's gradients (torch's new_func), by ``jacobian``
    (or ``projections`` for a large one), with the causes a double backward has."""
    where = f" ({label})" if label else ""
    if gg is None:
        return Outcome(False, "Double backward was not computed.", "backward_error")
    if gg.error is not None or gg.numbers is None:
        err = gg.error or _not_computed("not computed")
        if err.where == "forward":
            return Outcome(False, f"forward raised {err.type} before gradgradcheck could run{where}: {err.message}",
                           "forward_error", error=err)
        return Outcome(False, f"gradgradcheck could not run{where}: {err.message}.", "output_detached")
    numbers = gg.numbers
    if numbers.error is not None and not numbers.ok and numbers.stage in ("forward", "numerical"):
        err = numbers.error
        if err.where == "forward":
            return Outcome(False, f"forward raised {err.type} while gradgradcheck ran it{where}: {err.message}",
                           "forward_error", error=err)
        return Outcome(False, f"backward raised {err.type} when gradgradcheck called it (with create_graph=True)"
                              f"{where}: {err.message}", "backward_error", error=err)
    ext, ext_names = gradgrad_args(args, gg.v), gradgrad_names(names, gg)
    diff_in = diff_inputs(args)
    out_names = [f"(gradient for {names[diff_in[p]]})" for p in gg.present]
    mode = numbers.mode
    if mode == "too_large":
        n = sum(a.numel for a in ext if a.differentiable)
        return Outcome(False, f"Not checked: gradgradcheck's Jacobian ({n} inputs and grad_output elements) is too large "
                              "even for random projections in one run. Use smaller inputs.")
    if mode == "projections":
        out = projections(ext, numbers, plan.jacobian, ext_names, label=label, words=GRADGRADCHECK_WORDS, check="gradgradcheck")
    else:
        out = jacobian(ext, numbers, plan.jacobian, ext_names, label=label, words=GRADGRADCHECK_WORDS, out_names=out_names,
                       zero_cause="backward_not_differentiable")
    if out.passed:
        vjp = double_backward_vjp(args, gg, plan, names)
        return out if vjp.passed else vjp
    if out.error is not None:
        return Outcome(False, out.message, _double_backward_cause(out.error), out.diagnostics, out.error)
    if out.likely_cause == "output_detached":
        return Outcome(False, f"backward's result does not require grad, yet it changes with the inputs{where}: backward "
                              "is not differentiable (it runs under torch.no_grad(), detaches, or leaves torch).",
                       "backward_not_differentiable")
    cause = out.likely_cause
    if cause in ("forgot_grad_output", "float32_imprecise"):
        cause = "wrong_value"
    if mode == "projections" and out.diagnostics and all(
            g is None or not any(g) for grads in numbers.grads or [] for g in grads[:len(diff_in)]):
        cause = "backward_not_differentiable"  # double backward gives nothing for the inputs: backward's graph is cut
    diags = tuple(Diagnostic(d.check, d.input, d.index, d.analytical, d.expected, d.input_value, d.grad_output, d.atol,
                             d.rtol, cause or d.likely_cause, d.output, d.extra) for d in out.diagnostics)
    return Outcome(False, out.message, cause, diags, out.error)


def double_backward_vjp(args: Sequence[Arg], gg: GradgradNumbers, plan: GradgradPlan, names: Sequence[str]) -> Outcome:
    """Double backward for the judge's random grad_output w (over backward's gradients), made apart
    from the Jacobian's numbers: for a full Jacobian it must be the combination of the child's own
    double-backward rows (rows fabricated beside a backward that is not differentiable earn
    nothing; an honest child meets this exactly, so it adds nothing torch's gradgradcheck would
    not pass); for projections, w·d_k along every random direction (one more pair per direction)."""
    atol, rtol = plan.jacobian.atol, plan.jacobian.rtol
    numbers, got = gg.numbers, gg.w_product
    assert numbers is not None  # asked once gradgradcheck's numbers passed
    ext, ext_names = gradgrad_args(args, gg.v), gradgrad_names(names, gg)
    diff_ext = diff_inputs(ext)
    diff_out = [k for k, rg in enumerate(numbers.out_rg) if rg]
    if not diff_out:
        return Outcome(True, "")
    w = [plan.w[gg.present[k]] for k in diff_out]  # w for each of backward's gradients that requires grad
    if got is None:
        err = gg.w_error
        return Outcome(False, "Double backward for a random grad_output gives no gradient at all"
                              + (f" ({err.type}: {err.message})" if err else "") + ": backward is not differentiable.",
                       "backward_not_differentiable", error=err)
    if numbers.mode == "projections":
        flat_got = [x for g, i in zip(got, diff_ext) for x in _grad_or_zeros(g, ext[i].numel)]
        not_differentiable = not any(flat_got[:sum(ext[i].numel for i in diff_inputs(args))])
        pr = projection_numbers(ext, numbers, plan.jacobian)
        w_flat = [x for wk in w for x in wk]
        bad = _pair_failures(pr, [flat_got], [w_flat], [_norm(w_flat) / math.sqrt(pr.n_out)], atol, rtol)
        if bad:
            _, _, k, a, n, tol = max(bad)
            return Outcome(False, f"Double backward for a random grad_output, projected on random direction u{k + 1}, is "
                                  f"{fmt(a)}; finite differences of backward along u{k + 1} give {fmt(n)} (tolerance "
                                  f"{fmt(tol)}).", "backward_not_differentiable" if not_differentiable else "wrong_value")
        return Outcome(True, "")
    rows = numbers.rows or []
    for pos, i in enumerate(diff_ext):
        n = ext[i].numel
        combined = [fsum(wk[e] * _grad_or_zeros(both[0][e][pos], n)[j] for wk, both in zip(w, rows)
                         for e in range(len(both[0]))) for j in range(n)]
        if not allclose(_grad_or_zeros(got[pos], n), combined, atol, rtol):
            return Outcome(False, f"Double backward's gradient for {ext_names[i]} for a random grad_output is not the "
                                  "combination of its own rows: double backward answers inconsistently.", "not_reentrant")
    return Outcome(True, "")


def double_backward_product(args: Sequence[Arg], sub: GradgradNumbers, ref: GradgradNumbers, plan: GradgradPlan, names: Sequence[str]) -> Outcome:
    """A grade's look at double backward beyond gradgradcheck (which checked it against the child's
    own numbers, double_backward_vjp): its product with the judge's secret w must match the
    reference's, computed in a trusted process."""
    atol, rtol = plan.jacobian.atol, plan.jacobian.rtol
    got, want = sub.w_product, ref.w_product
    ext = gradgrad_args(args, sub.v)
    ext_names = gradgrad_names(names, sub)
    if want is not None and got is not None:
        for pos, i in enumerate(diff_inputs(ext)):
            n = ext[i].numel
            a, e = _grad_or_zeros(got[pos], n), _grad_or_zeros(want[pos], n)
            if not allclose(a, e, atol, rtol):
                j = worst(a, e, atol, rtol)
                cause = "backward_not_differentiable" if all(x == 0 for x in a) else "wrong_value"
                diag = Diagnostic("gradgradcheck", ext_names[i], unravel(j, ext[i].shape), a[j], e[j],
                                  ext[i].values[j], "random", atol, rtol, cause)
                return Outcome(False, f"Double backward for a random grad_output differs from the reference's: the "
                                      f"gradient for {ext_names[i]} at index {diag.index} is {fmt(a[j])}; expected "
                                      f"{fmt(e[j])}.", cause, (diag,))
    return Outcome(True, "")


def _significant_bits(v: float) -> int:
    if v == 0 or not math.isfinite(v):
        return 0
    m = int(abs(math.frexp(v)[0]) * (1 << 53))
    return m.bit_length() - ((m & -m).bit_length() - 1)


def computes_in_float32(args: Sequence[Arg], outputs: Sequence[Output]) -> bool:
    """Evidence that float64 work went through float32: every float64 output value fits float32's
    24-bit mantissa, some needs more than 16 bits (so not just small integers or halves), and some
    float64 input value does not fit float32."""
    inputs64 = [v for a in args if a.kind == "tensor" and a.dtype == "float64" for v in a.values]
    outs64 = [v for o in outputs if o.dtype == "float64" and o.values for v in o.values]
    bits = [_significant_bits(v) for v in outs64]
    return (bool(inputs64 and outs64) and any(_significant_bits(v) > 24 for v in inputs64)
            and all(b <= 24 for b in bits) and any(b > 16 for b in bits))


def numerical_vjp(jac: Jacobians, args: Sequence[Arg], vset: Sequence[Sequence[float]]) -> dict[int, list[float]]:
    """v^T J by finite differences, per input that requires grad."""
    out: dict[int, list[float]] = {}
    for i in diff_inputs(args):
        n = args[i].numel
        acc = [0.0] * n
        for pos, k in enumerate(jac.diff_outputs):
            v = vset[pos]
            rows = jac.numerical[k][i]
            for j in range(n):
                acc[j] += fsum(v[e] * rows[e][j] for e in range(len(v)))
        out[i] = acc
    return out


def random_vjps(args: Sequence[Arg], jac: Jacobians | None, vsets: Sequence[Any], vjps: Sequence[Vjp],
                ones_index: int | None, names: Sequence[str], atol: float, rtol: float, *, float32: bool = False) -> Outcome:
    """Each backward for a random grad_output against v^T J by finite differences."""
    if jac is None:
        return Outcome(False, "Not checked: finite differences were not computed.", "forward_error")
    ones_num = numerical_vjp(jac, args, vsets[ones_index]) if ones_index is not None else None
    checked = 0
    for m, (vset, vr) in enumerate(zip(vsets, vjps)):
        if m == ones_index:
            continue
        if vr.error is not None:
            err = vr.error
            return Outcome(False, f"backward raised {err.type}: {err.message}",
                           error_cause(err, "backward", len(jac.diff_outputs)), error=err)
        num = numerical_vjp(jac, args, vset)
        for pos, i in enumerate(diff_inputs(args)):
            a = _grad_or_zeros(vr.grads[pos], args[i].numel)
            n = num[i]
            if allclose(a, n, atol, rtol):
                continue
            cause, info = detect_cause(a, n, ones_num[i] if ones_num else None, False, atol, rtol, float32)
            j = worst(a, n, atol, rtol)
            facts: dict[str, Any] = {"input_shape": list(args[i].shape)}
            if _elementwise(jac, args, i, atol):  # then grad_output's element j is the one that reaches x[j]
                facts.update(elementwise=True, grad_output_value=vset[0][j])
            diag = Diagnostic("random_vjp", names[i], unravel(j, args[i].shape), a[j], n[j], args[i].values[j],
                              "random", atol, rtol, cause, extra={**info, **facts})
            return Outcome(False, f"For a random grad_output, backward's gradient for {names[i]} at index {diag.index} is "
                                  f"{fmt(a[j])}; finite differences give {fmt(n[j])}.", cause, (diag,))
        checked += 1
    return Outcome(True, f"backward matches finite differences for {checked} random grad_output(s).")


def _elementwise(jac: Jacobians, args: Sequence[Arg], i: int, atol: float) -> bool:
    """Whether, by finite differences, the one differentiable output is an elementwise function of
    input i: the same shape, and output element e depends on no element of it but e."""
    if len(jac.diff_outputs) != 1:
        return False
    k = jac.diff_outputs[0]
    if list(jac.out_shapes[k]) != list(args[i].shape):
        return False
    return all(abs(v) <= atol for e, row in enumerate(jac.numerical[k][i]) for j, v in enumerate(row) if e != j)


def uses_needs_input_grad(source: str) -> bool:
    """Whether the code reads ctx.needs_input_grad (read by the judge from the source, not the child)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.Attribute) and n.attr == "needs_input_grad" for n in ast.walk(tree))


def needs_input_grad(args: Sequence[Arg], expected: dict[int, list[float]] | None, alone: Sequence[NeedsInputGrad],
                     names: Sequence[str], atol: float, rtol: float, *, consulted: bool,
                     returned: Returned | None = None, source: str = "finite differences give") -> Outcome:
    """backward with each input alone requiring grad must give that input's gradient as `expected`
    has it (v^T J by finite differences; or, when the Jacobian is checked by projections, backward's
    own gradient with every input requiring grad, which those projections checked); and a backward
    that consults ctx.needs_input_grad must return None where it says False."""
    if expected is None:
        return Outcome(False, "Not checked: finite differences were not computed.", "forward_error")
    configs: list[tuple[set[int], Returned | None]] = [(set(diff_inputs(args)), returned)]
    for rep in alone:
        i = rep.arg
        label = names[i]
        if rep.error is not None:
            err = rep.error
            return Outcome(False, f"With only {label} requiring grad, backward raised {err.type}: {err.message} "
                                  "(check how backward uses ctx.needs_input_grad).", "needs_input_grad", error=err)
        n = expected[i]
        a = _grad_or_zeros(rep.grad, len(n))
        if not allclose(a, n, atol, rtol):
            j = worst(a, n, atol, rtol)
            what = "no gradient" if rep.grad is None else f"{fmt(a[j])} at index {unravel(j, args[i].shape)}"
            return Outcome(False, f"With only {label} requiring grad, backward gave {what}; {source} "
                                  f"{fmt(n[j])}: the gradient of {label} must not depend on which other inputs need one "
                                  "(is it gated on the right ctx.needs_input_grad entry?).", "needs_input_grad")
        configs.append(({i}, rep.returned))
    if consulted:
        for requiring, ret in configs:
            for p, (spec, item) in enumerate(zip(args, ret.items if ret else ())):
                if spec.kind == "tensor" and p not in requiring and item.kind == "tensor":
                    who = ", ".join(names[i] for i in sorted(requiring)) or "no input"
                    return Outcome(False, f"With {who} requiring grad, backward still computed a gradient for {names[p]}, "
                                          "which does not require grad: your backward reads ctx.needs_input_grad, so it "
                                          "is gated on the wrong entry.", "needs_input_grad")
    return Outcome(True, f"backward gives each input's gradient when it alone requires grad ({len(alone)} input(s)).")


def inputs_unchanged(args: Sequence[Arg], inputs_after: Sequence[Any], names: Sequence[str],
                     returned_inputs: Sequence[int] = ()) -> Outcome:
    """forward must not change its inputs in place (an input it returns, marked dirty, may change)."""
    for i, (spec, after) in enumerate(zip(args, inputs_after)):
        if spec.kind != "tensor" or i in returned_inputs:
            continue
        before = [int(v) if isinstance(v, bool) else v for v in spec.values]
        if after is None or after != before:
            j = next((j for j, (x, y) in enumerate(zip(after or [], before)) if x != y), 0)
            got = fmt(after[j]) if after else "?"
            return Outcome(False, f"forward changed {names[i]} in place: at index {unravel(j, spec.shape)} it was "
                                  f"{fmt(before[j])} and became {got}.", "input_modified")
    return Outcome(True, "forward leaves its inputs unchanged.")


def grad_output_unchanged(vjps: Sequence[Vjp]) -> Outcome:
    for vr in vjps:
        if vr.v_changed:
            return Outcome(False, "backward changed grad_output in place: compute a new tensor instead.", "grad_output_modified")
    return Outcome(True, "backward leaves grad_output unchanged.")


def backward_arity(args: Sequence[Arg], returned: Returned | None, names: Sequence[str], *,  # noqa: C901
                   ref_items: Sequence[ReturnedItem] = (), strict_none: bool = False) -> Outcome:
    """What backward returned, before autograd checked and reduced it: one value per input, None for
    non-tensors, each gradient shaped like its input (autograd silently sums a broadcast gradient)."""
    if returned is None:
        return Outcome(False, "backward was never called: the output is not connected to your Function.", "output_detached")
    n_args = len(args)
    if returned.count != n_args:
        return Outcome(False, f"backward returned {returned.count} value(s) for {n_args} forward input(s) "
                              f"({', '.join(names)}): return one per input, in order.", "wrong_number_of_returns")
    for p, (spec, item) in enumerate(zip(args, returned.items)):
        name = names[p]
        if spec.kind != "tensor":
            if item.kind != "none":
                what = "None" if spec.kind == "none" else f"a Python {spec.kind}"
                return Outcome(False, f"backward returned a {item.type} for {name}, which is {what}: "
                                      "return None in that slot.", "gradient_for_non_tensor")
            continue
        if item.kind == "tensor":
            if item.shape != spec.shape:
                cause = "not_reduced" if numel(item.shape) > numel(spec.shape) else "wrong_shape"
                return Outcome(False, f"backward returned a gradient of shape {item.shape} for {name}, whose shape is "
                                      f"{spec.shape}.", cause,
                               shapes={"input": name, "gradient": list(item.shape), "expected": list(spec.shape)})
            if strict_none and p < len(ref_items) and ref_items[p].kind == "none":
                return Outcome(False, f"{name} needs no gradient, but backward computed one: check ctx.needs_input_grad "
                                      "and return None.", "needs_input_grad")
        elif item.kind == "other":
            return Outcome(False, f"backward returned a {item.type} for {name}; return a tensor (or None).", "wrong_value")
        elif spec.requires_grad:
            return Outcome(False, f"backward returned None for {name}, which needs a gradient.", "wrong_value")
    return Outcome(True, "backward returns one value per input, None where no gradient is taken.")
