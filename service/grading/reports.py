"""The report a child sends: its types, and the one place that checks and parses it.

A report is untrusted JSON. `parse_report` raises BadOutput unless it has exactly the structure
the harness produces for the cases the judge sent (ids, lengths, numbers where numbers belong, the
check mode the judge would choose), and returns it as a frozen `Report`; only then do the verdict
(grades) and the check engine (runs) read its numbers, and decide. The reference's report is
parsed the same way, once per exercise version (references.py).

The framing is protocol.py's. It is not done there: protocol.py is loaded in the sandboxed child
as a plain stdlib module and imports nothing of the service, while parsing needs the plan's types.

Numbers stay in the lists the JSON decoded them into (parsing copies none): they are not to be
changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .cases import Arg, Case, GradgradPlan, JacobianPlan, diff_inputs, to_float32
from .draws import numel, run_grad_outputs
from .errors import BadOutput

Grads = list["list[Any] | None"]  # one backward's gradients, one per input requiring grad (None: undefined)


@dataclass(frozen=True, slots=True)
class ChildError:
    """An exception raised in the child: by the learner's code, or by the harness on its behalf."""

    where: str
    type: str
    message: str
    traceback: str
    line: int | None

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "type": self.type, "message": self.message, "traceback": self.traceback,
                "line": self.line}


@dataclass(frozen=True, slots=True)
class Entry:
    """What the entry point's name turned out to be."""

    found: bool
    is_class: bool
    is_function: bool
    has_forward: bool = True
    has_backward: bool = True
    #: the classes the code defines (when the entry point was not found)
    defined: tuple[str, ...] = ()
    #: a custom op made with torch.library.custom_op (called where a Function's apply would be)
    is_custom_op: bool = False
    op: OpFacts | None = None

    @property
    def runs(self) -> bool:
        """Whether the child ran the cases on it: a Function, or a custom op."""
        return self.is_function or self.is_custom_op


@dataclass(frozen=True, slots=True)
class Output:
    """One output of forward: a tensor (values None when too large to send), or something else."""

    kind: str  # "tensor" or "other"
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    requires_grad: bool = False
    values: list[Any] | None = None
    #: the Python type's name of an output that is not a tensor
    type: str = ""


@dataclass(frozen=True, slots=True)
class Forward:
    ok: bool
    error: ChildError | None = None
    outputs: tuple[Output, ...] = ()
    count: int = 0
    #: every argument's values after forward (None: not a tensor, or too large)
    inputs_after: list[list[Any] | None] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ReturnedItem:
    kind: str  # "none", "tensor" or "other"
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    #: the Python type's name ("tensor" or "none" for those kinds)
    type: str = ""


@dataclass(frozen=True, slots=True)
class Returned:
    """What backward returned, before autograd checked it (the harness's recorder)."""

    count: int
    items: tuple[ReturnedItem, ...]


@dataclass(frozen=True, slots=True)
class Vjp:
    """backward for one set of grad_outputs."""

    ok: bool
    error: ChildError | None = None
    grads: Grads = field(default_factory=list)
    #: whether backward changed grad_output in place
    v_changed: bool | None = None
    returned: Returned | None = None


@dataclass(frozen=True, slots=True)
class NeedsInputGrad:
    """backward again with only input `arg` requiring grad."""

    arg: int
    ok: bool
    error: ChildError | None = None
    grad: list[Any] | None = None
    returned: Returned | None = None


@dataclass(frozen=True, slots=True)
class GradcheckNumbers:
    """The numbers of harness._gradcheck_numbers for a JacobianPlan; `stage` names the step that
    raised (None: none did). Judged in checks.py."""

    ok: bool
    stage: str | None
    error: ChildError | None = None
    out_rg: list[bool] = field(default_factory=list)
    out_shapes: list[list[int]] = field(default_factory=list)
    mode: str = "full"
    #: forward's outputs (flat, concatenated) at x - eps and x + eps, one row per point or direction
    minus: list[list[float]] = field(default_factory=list)
    plus: list[list[float]] = field(default_factory=list)
    #: full mode: per differentiable output, backward's rows for every basis grad_output, twice
    rows: list[list[list[Grads]]] | None = None
    #: projections: backward for each random grad_output, and for the first again
    grads: list[Grads] | None = None
    grads2: list[Grads] | None = None
    zero_grad_output: Grads | None = None
    undefined_grad_output: list[Grads] | None = None


@dataclass(frozen=True, slots=True)
class GradOutput:
    """A grad_output the child used for gradgradcheck (values None when too large to send)."""

    shape: list[int]
    dtype: str
    values: list[Any] | None


@dataclass(frozen=True, slots=True)
class GradgradNumbers:
    """harness._gradgrad's report: the grad_outputs used, then the gradcheck numbers of the function
    (inputs, grad_outputs) -> backward's gradients, of which `present` are defined."""

    ok: bool
    error: ChildError | None = None
    v: tuple[GradOutput, ...] = ()
    numbers: GradcheckNumbers | None = None
    present: list[int] = field(default_factory=list)
    #: double backward for the plan's w (None: no gradient at all; w_error: it raised)
    w_product: Grads | None = None
    w_error: ChildError | None = None


# --------------------------------------------------------------------------- custom ops (torch.library)


@dataclass(frozen=True, slots=True)
class OpFacts:
    """What an entry point made with torch.library.custom_op is: its name and schema, the inputs its
    schema says it mutates, and what the learner registered (harness._op_facts)."""

    qualname: str
    schema: str
    #: the schema's argument names, in order (the op's inputs)
    args: tuple[str, ...]
    mutates_args: tuple[str, ...]
    returns: int
    #: register_autograd was called (a backward), with a setup_context
    has_autograd: bool
    has_setup_context: bool
    #: register_fake was called; trivial_fake: torch makes one itself (an op that returns nothing)
    has_fake: bool
    trivial_fake: bool
    #: a kernel at an autograd dispatch key (opcheck's autograd test passes at once then)
    autograd_kernel: bool
    #: a Meta kernel (opcheck's fake-tensor test runs only for an op that has one)
    has_meta: bool


#: The learner's registered functions an exception is traced to (harness._role).
OP_ROLES = ("implementation", "fake kernel", "setup_context", "backward")


@dataclass(frozen=True, slots=True)
class OpCall:
    """One call of the op (or of one of its parts): its exception, and which of the learner's
    registered functions raised it (None: torch, or code they call)."""

    ok: bool
    error: ChildError | None = None
    role: str | None = None


@dataclass(frozen=True, slots=True)
class OpInputAfter:
    """A tensor input after one call of the op: what changed."""

    arg: int
    version_bumped: bool
    #: shape or strides changed; storage_changed: its memory was replaced
    resized: bool
    storage_changed: bool
    #: values changed at all (bit for bit, NaN equal to NaN); close: equal by opcheck's rule
    #: (torch.allclose, NaN equal to NaN)
    changed: bool
    close: bool
    #: its values after the call (None: more than the plan's max_values)
    values: list[Any] | None


@dataclass(frozen=True, slots=True)
class OpOutputAlias:
    """An output of the op: whether it is an input (`is_input`, the argument's position) or shares
    memory with some (`aliases`)."""

    tensor: bool
    is_input: int | None
    aliases: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OpSchemaFacts:
    """opcheck's test_schema, as facts: one call of the op on copies of the inputs. source
    "implementation": the op raised (`call`), and the facts are those of the learner's function
    called directly on detached copies (`implementation`: its own exception)."""

    call: OpCall
    source: str
    implementation: OpCall | None = None
    inputs: tuple[OpInputAfter, ...] = ()
    outputs: tuple[OpOutputAlias, ...] = ()
    outputs_alias_each_other: bool = False
    count: int = 0


@dataclass(frozen=True, slots=True)
class OpAutogradFacts:
    """opcheck's test_autograd_registration, as facts, and one backward through the op (ones as
    grad_outputs). skipped: no input requires grad (opcheck skips the test then)."""

    skipped: bool
    autograd_kernel: bool = True
    #: without an autograd kernel: whether an output that is not an input requires grad anyway
    #: (autograd fallback "nothing"), and that call's exception
    fallback_outputs_rg: bool | None = None
    fallback: OpCall | None = None
    call: OpCall | None = None
    outputs_rg: tuple[bool, ...] = ()
    backward: OpCall | None = None
    #: backward read an attribute of ctx that setup_context did not set: its name
    ctx_attribute: str | None = None
    #: when backward raised: how many tensors setup_context saved (None: not known)
    saved: int | None = None


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """An output's metadata as opcheck's fake-tensor test compares it (None: a symbolic size)."""

    kind: str  # "tensor" or "other"
    type: str = ""
    shape: tuple[int | None, ...] = ()
    dtype: str = ""
    device: str = ""
    strides: tuple[int | None, ...] = ()
    storage_offset: int | None = None
    requires_grad: bool = False
    conj: bool = False
    neg: bool = False


@dataclass(frozen=True, slots=True)
class OpSide:
    """One side of opcheck's fake-tensor comparison: the op on fake tensors, or the real call (below
    autograd). unsupported: FakeTensorMode could not make the inputs fake (opcheck passes then)."""

    ok: bool
    error: ChildError | None = None
    role: str | None = None
    unsupported: bool = False
    count: int = 0
    outputs: tuple[TensorMeta, ...] = ()
    alias_inputs: bool = False
    are_inputs: bool = False
    alias_each_other: bool = False


@dataclass(frozen=True, slots=True)
class OpFakeFacts:
    """opcheck's test_faketensor, as facts: `seen`, the op reached the dispatcher below autograd;
    `fake` and `real`, each side (None: not reached)."""

    call: OpCall
    seen: bool
    fake: OpSide | None = None
    real: OpSide | None = None


@dataclass(frozen=True, slots=True)
class OpValue:
    """An output or a gradient (values None when larger than the plan's max_values), or a number."""

    kind: str  # "tensor" or "other"
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    values: list[Any] | None = None
    type: str = ""
    value: Any = None


@dataclass(frozen=True, slots=True)
class OpRun:
    """The op called eagerly or through AOTAutograd: outputs, then the gradients of
    sum(|sum(output)|) for each input that requires grad (None: undefined), when gradients are
    checked; the stage that raised ("forward", "backward")."""

    ok: bool
    stage: str | None = None
    error: ChildError | None = None
    role: str | None = None
    count: int = 0
    outputs: tuple[OpValue, ...] = ()
    grads: tuple[OpValue | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class OpAotFacts:
    """opcheck's test_aot_dispatch_dynamic, as numbers: `eager`, then (when eager ran) `aot`;
    check_gradients: opcheck's "auto" (some input and some output require grad)."""

    eager: OpRun
    check_gradients: bool
    aot: OpRun | None = None


@dataclass(frozen=True, slots=True)
class CustomOpReport:
    """harness._op_checks' report for a case of a custom op: the op's facts (from the entry) and each
    test's facts; `failed`, a test whose facts the harness could not collect: its exception."""

    op: OpFacts
    schema: OpSchemaFacts | None = None
    autograd_registration: OpAutogradFacts | None = None
    fake_tensor: OpFakeFacts | None = None
    aot_dispatch: OpAotFacts | None = None
    failed: dict[str, ChildError] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CaseReport:
    id: str
    forward: Forward
    vjps: tuple[Vjp, ...] = ()
    #: the arguments forward returned as outputs (those it may change, marked dirty)
    returned_inputs: list[int] = field(default_factory=list)
    gradcheck: GradcheckNumbers | None = None
    needs_input_grad: tuple[NeedsInputGrad, ...] | None = None
    gradgrad: GradgradNumbers | None = None
    #: a run's: the outputs that require grad, and the grad_outputs the child drew (one set per VJP)
    diff_outputs: list[int] | None = None
    vjp_sets: list[list[list[float]]] = field(default_factory=list)
    #: opcheck's facts, for a case of a custom op whose plan asks for them (custom_ops.py decides)
    custom_op: CustomOpReport | None = None


@dataclass(frozen=True, slots=True)
class Report:
    """The child's main report: the code loaded (or raised), its entry point, one CaseReport per
    case (none unless the entry point is a Function)."""

    load_error: ChildError | None
    entry: Entry | None
    cases: tuple[CaseReport, ...]

    @property
    def loaded(self) -> bool:
        return self.load_error is None


@dataclass(frozen=True, slots=True)
class TorchMessage:
    ok: bool
    message: str


@dataclass(frozen=True, slots=True)
class TorchMessages:
    """torch's own gradcheck and gradgradcheck messages for one case (informative only)."""

    gradcheck: TorchMessage | None = None
    gradgradcheck: TorchMessage | None = None


_MAX_OUTPUTS = 16
_NUMBER_TYPES = frozenset({int, float})  # what JSON numbers decode to (bool is neither)


def _numlist(x: Any, n: int | None = None) -> bool:
    return isinstance(x, list) and (n is None or len(x) == n) and set(map(type, x)) <= _NUMBER_TYPES


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_shape(sh: Any) -> bool:
    return isinstance(sh, list) and len(sh) <= 16 and all(_is_int(d) and d >= 0 for d in sh)


def _grad_rows(rows: Any, n_in: int) -> bool:
    return isinstance(rows, list) and all(
        isinstance(r, list) and len(r) == n_in and all(g is None or _numlist(g) for g in r) for r in rows)


def _require(cond: bool, what: str) -> None:
    if not cond:
        raise BadOutput(what)


def _error(e: Any) -> ChildError:
    _require(isinstance(e, dict), "error is not an object")
    for k in ("type", "message", "traceback", "where"):
        _require(isinstance(e.get(k), str), f"error.{k}")
    line = e.get("line")
    _require(line is None or _is_int(line), "error.line")
    return ChildError(e["where"], e["type"], e["message"], e["traceback"], line)


def _ok_block(b: Any, what: str) -> ChildError | None:
    """An {"ok": bool, "error": ...} block: its error, None when ok."""
    _require(isinstance(b, dict) and isinstance(b.get("ok"), bool), f"{what}.ok")
    return None if b["ok"] else _error(b.get("error"))


def parse_report(report: Any, cases: Sequence[Case]) -> Report:
    """The report as a Report; BadOutput unless it has exactly the structure the harness produces."""
    _require(isinstance(report, dict) and report.get("type") == "main", "not a main report")
    load_error = _ok_block(report.get("load"), "load")
    entry = _entry(report.get("entry"))
    _require(entry is not None or load_error is not None or not cases, "entry missing")
    reps = report.get("cases")
    complete = load_error is None and entry is not None and entry.runs
    _require(isinstance(reps, list) and len(reps) == (len(cases) if complete else 0), "cases")
    op = entry.op if entry is not None else None
    return Report(load_error, entry, tuple(_case(rep, case, op) for rep, case in zip(reps, cases)))


def _entry(e: Any) -> Entry | None:
    if e is None:
        return None
    _require(isinstance(e, dict), "entry")
    for k in ("found", "is_class", "is_function"):
        _require(isinstance(e.get(k), bool), f"entry.{k}")
    defined = e.get("defined")
    is_op = e.get("is_custom_op", False)
    _require(isinstance(is_op, bool) and not (is_op and e["is_function"]), "entry.is_custom_op")
    return Entry(e["found"], e["is_class"], e["is_function"], bool(e.get("has_forward", True)),
                 bool(e.get("has_backward", True)), tuple(map(str, defined[:8])) if isinstance(defined, list) else (),
                 is_op, _op_facts(e.get("op")) if is_op else None)


def _case(rep: Any, case: Case, op: OpFacts | None = None) -> CaseReport:
    _require(isinstance(rep, dict) and rep.get("id") == case.id, "case id")
    forward = _forward(rep.get("forward"), case.args)
    # opcheck's facts: asked by the plan, made for a custom op only (also when its forward raised)
    wanted = case.custom_op is not None and op is not None and not case.probe
    _require(wanted == ("custom_op" in rep), "custom_op")
    custom_op = _custom_op(rep["custom_op"], case, op) if wanted and op is not None else None
    if not forward.ok or case.probe:
        return CaseReport(case.id, forward, custom_op=custom_op)
    vjps = rep.get("vjps", [])
    diff_outputs: list[int] | None = None
    vjp_sets: list[list[list[float]]] = []
    if case.grad_output_seed is not None:  # a run: the child drew ones and random grad_outputs
        _require(isinstance(vjps, list) and len(vjps) <= 1 + case.random_grad_outputs, "vjps")
        if vjps:
            diff_outputs, vjp_sets = _drawn_grad_outputs(rep, forward.outputs, len(vjps), case.grad_output_seed,
                                                          case.random_grad_outputs)
    else:
        _require(isinstance(vjps, list) and len(vjps) == len(case.grad_outputs), "vjps")
    ret_in = rep.get("returned_inputs", [])
    _require(isinstance(ret_in, list) and all(isinstance(i, int) and 0 <= i < len(case.args) for i in ret_in),
             "returned_inputs")
    n_in = len(diff_inputs(case.args))
    alone = rep.get("needs_input_grad")
    return CaseReport(
        case.id, forward, tuple(_vjp(vr, n_in) for vr in vjps), ret_in,
        gradcheck=None if case.gradcheck is None else _gradcheck_numbers(rep.get("gradcheck"), case.gradcheck, case.args),
        needs_input_grad=None if "needs_input_grad" not in rep else _needs_input_grad(alone, n_in, len(case.args)),
        gradgrad=None if case.gradgrad is None else _gradgrad(rep.get("gradgrad"), case.gradgrad, case.args, n_in),
        diff_outputs=diff_outputs, vjp_sets=vjp_sets, custom_op=custom_op)


def _forward(fwd: Any, args: Sequence[Arg]) -> Forward:
    error = _ok_block(fwd, "forward")
    if error is not None:
        return Forward(False, error)
    outs = fwd.get("outputs")
    _require(isinstance(outs, list) and len(outs) <= _MAX_OUTPUTS, "outputs")
    _require(_is_int(fwd.get("count")), "count")
    after = fwd.get("inputs_after")
    _require(isinstance(after, list) and len(after) == len(args), "inputs_after")
    for a, spec in zip(after, args):
        if spec.kind == "tensor":
            _require(a is None or _numlist(a, spec.numel), "inputs_after values")
    return Forward(True, None, tuple(_output(o) for o in outs), fwd["count"], after)


def _output(o: Any) -> Output:
    _require(isinstance(o, dict) and o.get("kind") in ("tensor", "other"), "output kind")
    if o["kind"] != "tensor":
        _require(isinstance(o.get("type"), str), "output type")
        return Output("other", type=o["type"])
    shape = o.get("shape")
    _require(_is_shape(shape), "output shape")
    _require(isinstance(o.get("dtype"), str) and isinstance(o.get("rg"), bool), "output dtype")
    _require(o.get("values") is None or _numlist(o["values"], numel(shape)), "output values")
    return Output("tensor", shape, o["dtype"], o["rg"], o.get("values"))


def _vjp(vr: Any, n_in: int) -> Vjp:
    error = _ok_block(vr, "vjp")
    grads = []
    if error is None:
        grads = vr.get("grads")
        _require(isinstance(grads, list) and len(grads) == n_in and all(g is None or _numlist(g) for g in grads), "grads")
    _require(vr.get("v_changed") is None or isinstance(vr.get("v_changed"), bool), "v_changed")
    return Vjp(error is None, error, grads, vr.get("v_changed"), _returned(vr.get("returned")))


def _returned(ret: Any) -> Returned | None:
    """What backward returned, as the harness's recorder describes it."""
    if ret is None:
        return None
    _require(isinstance(ret, dict) and isinstance(ret.get("count"), int) and isinstance(ret.get("items"), list), "returned")
    items = []
    for it in ret["items"]:
        _require(isinstance(it, dict) and it.get("kind") in ("none", "tensor", "other"), "returned item")
        kind = it["kind"]
        if kind == "tensor":
            _require(isinstance(it.get("shape"), list) and all(isinstance(d, int) for d in it["shape"]), "returned shape")
            _require(isinstance(it.get("dtype"), str), "returned dtype")
            items.append(ReturnedItem(kind, it["shape"], it["dtype"], kind))
        else:
            items.append(ReturnedItem(kind, type=str(it.get("type", kind))))
    return Returned(ret["count"], tuple(items))


def _needs_input_grad(alone: Any, n_in: int, n_args: int) -> tuple[NeedsInputGrad, ...]:
    _require(isinstance(alone, list) and len(alone) <= n_in, "needs_input_grad")
    out = []
    for a in alone:
        error = _ok_block(a, "needs_input_grad")
        returned = None
        if error is None:
            _require(a.get("grad") is None or _numlist(a["grad"]), "needs_input_grad.grad")
            returned = _returned(a.get("returned"))
        _require(_is_int(a.get("arg")) and 0 <= a["arg"] < n_args, "needs_input_grad.arg")
        out.append(NeedsInputGrad(a["arg"], error is None, error, a.get("grad") if error is None else None, returned))
    return tuple(out)


def _gradcheck_numbers(gc: Any, plan: JacobianPlan, args: Sequence[Arg]) -> GradcheckNumbers:  # noqa: C901
    """harness._gradcheck_numbers' report for `plan` over `args` (its numbers are judged in
    checks.py), the mode included: the one the plan gives for the shapes (JacobianPlan.mode)."""
    n_in = len(diff_inputs(args))
    _require(isinstance(gc, dict) and isinstance(gc.get("ok"), bool), "gradcheck.ok")
    stage = gc.get("stage")
    _require(stage in (None, "forward", "numerical", "analytical", "zero_grad_output", "undefined_grad_output"),
             "gradcheck.stage")
    ok = gc["ok"]
    error = None if ok else _error(gc.get("error"))
    if stage == "forward":
        return GradcheckNumbers(ok, stage, error)
    if ok and gc.get("error") is not None:
        error = _error(gc["error"])
    out_rg, shapes = gc.get("out_rg"), gc.get("out_shapes")
    _require(isinstance(out_rg, list) and len(out_rg) <= _MAX_OUTPUTS and all(isinstance(b, bool) for b in out_rg), "out_rg")
    _require(isinstance(shapes, list) and len(shapes) == len(out_rg) and all(_is_shape(sh) for sh in shapes), "out_shapes")
    mode = gc.get("mode")
    _require(mode == plan.mode(args, shapes), "gradcheck.mode")
    if mode == "too_large":
        _require(ok and stage is None, "gradcheck.too_large")
        return GradcheckNumbers(ok, stage, error, out_rg, shapes, mode)
    width = sum(numel(sh) for sh in shapes)
    n_points = len(plan.points_of(args) or []) if mode == "full" or plan.projections is None else plan.projections.k
    for key in ("minus", "plus"):
        rows = gc.get(key)
        _require(isinstance(rows, list) and len(rows) <= n_points and all(_numlist(r, width) for r in rows), f"gradcheck.{key}")
    if ok or stage not in ("numerical",):
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
    if mode == "projections" and diff_out and (ok or stage not in ("numerical", "analytical")):
        _require(len(gc.get("grads") or []) == n_points and len(gc.get("grads2") or []) == 1, "gradcheck.grads")
    zero, undefined = gc.get("zero_grad_output"), gc.get("undefined_grad_output")
    _require(zero is None or _grad_rows([zero], n_in), "gradcheck.zero_grad_output")
    _require(undefined is None or _grad_rows(undefined, n_in), "gradcheck.undefined_grad_output")
    return GradcheckNumbers(ok, stage, error, out_rg, shapes, mode, gc["minus"], gc["plus"], rows, gc.get("grads"),
                            gc.get("grads2"), zero, undefined)


def _gradgrad(gg: Any, plan: GradgradPlan, args: Sequence[Arg], n_in: int) -> GradgradNumbers:
    """harness._gradgrad's report: the grad_outputs it used (the judge's, or those its seed gives),
    then gradcheck numbers of the function (inputs, grad_outputs) -> gradients."""
    error = _ok_block(gg, "gradgrad")
    if error is not None:
        return GradgradNumbers(False, error)
    raw_v = gg.get("v")
    _require(isinstance(raw_v, list) and 1 <= len(raw_v) <= _MAX_OUTPUTS, "gradgrad.v")
    for item in raw_v:
        _require(isinstance(item, dict) and _is_shape(item.get("shape")) and isinstance(item.get("dtype"), str), "gradgrad.v")
        _require(item.get("values") is None or _numlist(item["values"], numel(item["shape"])), "gradgrad.v values")
    v = tuple(GradOutput(item["shape"], item["dtype"], item.get("values")) for item in raw_v)
    raw_numbers = gg.get("numbers")
    _require(isinstance(raw_numbers, dict), "gradgrad.numbers")
    ext = gradgrad_args(args, v)
    numbers = _gradcheck_numbers(raw_numbers, plan.jacobian, ext)
    if any(item.values is None for item in v):
        _require(numbers.mode == "too_large", "gradgrad.v values")
    else:
        planned = plan.grad_outputs([numel(it.shape) for it in v])
        _require(len(planned) == len(v) and all(_same_grad_output(it, p) for it, p in zip(v, planned)),
                 "gradgrad.v: not the judge's grad_outputs")
    present = gg.get("present")
    _require(isinstance(present, list) and all(_is_int(p) and 0 <= p < n_in for p in present)
             and present == sorted(set(present)), "gradgrad.present")
    if numbers.stage != "forward" and raw_numbers.get("out_shapes") is not None:
        _require(len(present) == len(numbers.out_shapes), "gradgrad.present")
    w_product = gg.get("w_product")
    _require(w_product is None or _grad_rows([w_product], len(diff_inputs(ext))), "gradgrad.w_product")
    w_error = None if gg.get("w_error") is None else _error(gg["w_error"])
    return GradgradNumbers(True, None, v, numbers, present, w_product, w_error)


def gradgrad_args(args: Sequence[Arg], v: Sequence[GradOutput]) -> list[Arg]:
    """The arguments of torch.autograd.gradgradcheck's function: the inputs, then one grad_output per
    differentiable output (the values the child reported using, none when too large to send: only
    their shapes are read then), each requiring grad."""
    return list(args) + [Arg("tensor", dtype=g.dtype, shape=g.shape, values=g.values or [], requires_grad=True) for g in v]


def _same_grad_output(item: GradOutput, planned: Sequence[float]) -> bool:
    """Whether the child's reported grad_output holds the judge's values, as its dtype stores them."""
    values = item.values or []
    if len(values) != len(planned):
        return False
    if item.dtype == "float64":
        return all(a == b for a, b in zip(values, planned))
    if item.dtype == "float32":
        return all(a == to_float32(b) for a, b in zip(values, planned))
    return all(a == b or abs(a - b) <= 1e-2 + 1e-2 * abs(b) for a, b in zip(values, planned))  # half precision: rounded by torch


def _drawn_grad_outputs(rep: dict[str, Any], outs: Sequence[Output], n_vjps: int, seed: int,
                        n_random: int) -> tuple[list[int], list[list[list[float]]]]:
    """A run's grad_outputs, drawn by the child from our seed (one set per VJP, one vector per
    differentiable output), and which outputs were differentiable. They must be the very numbers
    the seed gives (draws.run_grad_outputs): a child that chose its own (zeros pass any backward)
    is refused."""
    vsets: Any = rep.get("vjp_sets")
    diff_out: Any = rep.get("diff_outputs")
    _require(isinstance(diff_out, list) and all(isinstance(k, int) and 0 <= k < len(outs) for k in diff_out), "diff_outputs")
    _require(isinstance(vsets, list) and len(vsets) == n_vjps, "vjp_sets")
    for vset in vsets:
        _require(isinstance(vset, list) and len(vset) == len(diff_out), "vjp_set")
        for v, k in zip(vset, diff_out):
            _require(isinstance(v, list) and len(v) == numel(outs[k].shape)
                     and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v), "vjp values")
    _require(vsets == run_grad_outputs(seed, [numel(outs[k].shape) for k in diff_out], n_random), "vjp_sets drawn")
    return diff_out, vsets


# --------------------------------------------------------------------------- custom ops: parsing

_MAX_OP_OUTPUTS = 16


def _str(x: Any, what: str, limit: int = 1000) -> str:
    _require(isinstance(x, str) and len(x) <= limit, what)
    return str(x)


def _bool(x: Any, what: str) -> bool:
    _require(isinstance(x, bool), what)
    return bool(x)


def _names(x: Any, what: str) -> tuple[str, ...]:
    _require(isinstance(x, list) and len(x) <= 64 and all(isinstance(n, str) and len(n) <= 200 for n in x), what)
    return tuple(x)


def _op_facts(o: Any) -> OpFacts:
    _require(isinstance(o, dict), "entry.op")
    args = _names(o.get("args"), "op.args")
    mutates = _names(o.get("mutates_args"), "op.mutates_args")
    _require(set(mutates) <= set(args), "op.mutates_args")
    _require(_is_int(o.get("returns")) and 0 <= o["returns"] <= 64, "op.returns")
    flags = [_bool(o.get(k), f"op.{k}") for k in ("has_autograd", "has_setup_context", "has_fake", "trivial_fake",
                                                   "autograd_kernel", "has_meta")]
    return OpFacts(_str(o.get("qualname"), "op.qualname", 200), _str(o.get("schema"), "op.schema"), args, mutates,
                   o["returns"], *flags)


def _op_call(c: Any, what: str) -> OpCall:
    error = _ok_block(c, what)
    role = c.get("role")
    _require(role is None or role in OP_ROLES, f"{what}.role")
    return OpCall(error is None, error, role if error is not None else None)


def _arg_index(i: Any, case: Case) -> bool:
    return _is_int(i) and 0 <= i < len(case.args) and case.args[i].kind == "tensor"


def _op_input(it: Any, case: Case) -> OpInputAfter:
    _require(isinstance(it, dict) and _arg_index(it.get("arg"), case), "schema.inputs.arg")
    flags = [_bool(it.get(k), f"schema.inputs.{k}") for k in ("version_bumped", "resized", "storage_changed", "changed",
                                                              "close")]
    values = it.get("values")
    n = None if flags[1] else case.args[it["arg"]].numel  # a resized input's values are as many as it now has
    _require(values is None or _numlist(values, n), "schema.inputs.values")
    return OpInputAfter(it["arg"], flags[0], flags[1], flags[2], flags[3], flags[4], values)


def _op_alias(o: Any, case: Case) -> OpOutputAlias:
    _require(isinstance(o, dict), "schema.outputs")
    tensor = _bool(o.get("tensor"), "schema.outputs.tensor")
    is_input, aliases = o.get("is_input"), o.get("aliases")
    _require(is_input is None or _arg_index(is_input, case), "schema.outputs.is_input")
    _require(isinstance(aliases, list) and len(aliases) <= len(case.args) and all(_arg_index(i, case) for i in aliases),
             "schema.outputs.aliases")
    _require(tensor or (is_input is None and not aliases), "schema.outputs")
    return OpOutputAlias(tensor, is_input, tuple(aliases))


def _op_schema_facts(b: dict[str, Any], case: Case) -> OpSchemaFacts:
    call = _op_call(b.get("call"), "schema.call")
    source: Any = b.get("source")
    _require(source == ("op" if call.ok else "implementation"), "schema.source")
    if "implementation" in b:
        impl = _op_call(b["implementation"], "schema.implementation")
        _require(source == "implementation" and not impl.ok and "inputs" not in b, "schema.implementation")
        return OpSchemaFacts(call, source, impl)
    inputs: Any = b.get("inputs")
    outputs: Any = b.get("outputs")
    _require(isinstance(inputs, list) and len(inputs) == sum(a.kind == "tensor" for a in case.args), "schema.inputs")
    _require(isinstance(outputs, list) and len(outputs) <= _MAX_OP_OUTPUTS, "schema.outputs")
    count: Any = b.get("count")
    _require(_is_int(count) and len(outputs) == min(count, _MAX_OP_OUTPUTS), "schema.count")
    parsed = tuple(_op_input(it, case) for it in inputs)
    _require([it.arg for it in parsed] == [i for i, a in enumerate(case.args) if a.kind == "tensor"], "schema.inputs.arg")
    return OpSchemaFacts(call, source, None, parsed, tuple(_op_alias(o, case) for o in outputs),
                         _bool(b.get("outputs_alias_each_other"), "schema.outputs_alias_each_other"), count)


def _op_autograd_facts(b: dict[str, Any], case: Case) -> OpAutogradFacts:
    skipped = _bool(b.get("skipped"), "autograd.skipped")
    _require(skipped == (not diff_inputs(case.args)), "autograd.skipped")
    if skipped:
        return OpAutogradFacts(True)
    kernel = _bool(b.get("autograd_kernel"), "autograd.autograd_kernel")
    fallback_rg = b.get("fallback_outputs_rg")
    _require(fallback_rg is None or (isinstance(fallback_rg, bool) and not kernel), "autograd.fallback_outputs_rg")
    fallback = _op_call(b["fallback"], "autograd.fallback") if "fallback" in b else None
    _require(fallback is None or (not fallback.ok and not kernel and fallback_rg is None), "autograd.fallback")
    call = _op_call(b.get("call"), "autograd.call")
    if not call.ok:
        return OpAutogradFacts(False, kernel, fallback_rg, fallback, call)
    rg: Any = b.get("outputs_rg")
    _require(isinstance(rg, list) and len(rg) <= _MAX_OP_OUTPUTS and all(isinstance(x, bool) for x in rg), "autograd.outputs_rg")
    backward = _op_call(b["backward"], "autograd.backward") if "backward" in b else None
    _require((backward is not None) == any(rg), "autograd.backward")
    raised = backward is not None and not backward.ok
    attr = b["backward"].get("ctx_attribute") if raised else None
    _require(attr is None or (isinstance(attr, str) and len(attr) <= 100), "autograd.ctx_attribute")
    saved = b["backward"].get("saved") if raised else None
    _require(saved is None or (_is_int(saved) and 0 <= saved <= 1 << 20), "autograd.saved")
    return OpAutogradFacts(False, kernel, fallback_rg, fallback, call, tuple(rg), backward, attr, saved)


def _dims(x: Any, what: str) -> tuple[int | None, ...]:
    _require(isinstance(x, list) and len(x) <= 16 and all(d is None or (_is_int(d) and d >= 0) for d in x), what)
    return tuple(x)


def _tensor_meta(m: Any) -> TensorMeta:
    _require(isinstance(m, dict) and m.get("kind") in ("tensor", "other"), "fake.outputs.kind")
    if m["kind"] == "other":
        return TensorMeta("other", type=_str(m.get("type"), "fake.outputs.type", 200))
    shape, strides = _dims(m.get("shape"), "fake.outputs.shape"), _dims(m.get("strides"), "fake.outputs.strides")
    _require(len(shape) == len(strides), "fake.outputs.strides")
    offset = m.get("storage_offset")
    _require(offset is None or _is_int(offset), "fake.outputs.storage_offset")
    return TensorMeta("tensor", "", shape, _str(m.get("dtype"), "fake.outputs.dtype", 40),
                      _str(m.get("device"), "fake.outputs.device", 40), strides, offset,
                      *(_bool(m.get(k), f"fake.outputs.{k}") for k in ("rg", "conj", "neg")))


def _op_side(b: Any, what: str) -> OpSide:
    error = _ok_block(b, what)
    if error is not None:
        role = b.get("role")
        _require(role is None or role in OP_ROLES, f"{what}.role")
        return OpSide(False, error, role)
    _require(b.get("role") is None, f"{what}.role")
    if b.get("unsupported") is not None:
        _require(b["unsupported"] is True, f"{what}.unsupported")
        return OpSide(True, unsupported=True)
    outs, count = b.get("outputs"), b.get("count")
    _require(isinstance(outs, list) and _is_int(count) and len(outs) == min(count, _MAX_OP_OUTPUTS), f"{what}.outputs")
    return OpSide(True, None, None, False, count, tuple(_tensor_meta(m) for m in outs),
                  *(_bool(b.get(k), f"{what}.{k}") for k in ("alias_inputs", "are_inputs", "alias_each_other")))


def _op_fake_facts(b: dict[str, Any]) -> OpFakeFacts:
    call = _op_call(b.get("call"), "fake.call")
    seen = _bool(b.get("seen"), "fake.seen")
    fake = _op_side(b["fake"], "fake.fake") if "fake" in b else None
    real = _op_side(b["real"], "fake.real") if "real" in b else None
    _require(seen == (fake is not None) and (real is None or (fake is not None and real.ok)), "fake.seen")
    _require(real is not None or not call.ok or not seen, "fake.real")
    return OpFakeFacts(call, seen, fake, real)


def _op_value(v: Any, max_values: int, what: str) -> OpValue:
    _require(isinstance(v, dict) and v.get("kind") in ("tensor", "other"), what)
    if v["kind"] == "other":
        value = v.get("value")
        _require(value is None or type(value) in (int, float, bool), f"{what}.value")
        return OpValue("other", type=_str(v.get("type"), f"{what}.type", 200), value=value)
    shape = v.get("shape")
    _require(_is_shape(shape), f"{what}.shape")
    values = v.get("values")
    n = numel(shape)
    _require(_numlist(values, n) if n <= max_values else values is None, f"{what}.values")
    return OpValue("tensor", shape, _str(v.get("dtype"), f"{what}.dtype", 40), values)


def _op_run_facts(b: Any, case: Case, max_values: int, grads: bool | None, what: str) -> OpRun:
    _require(isinstance(b, dict) and isinstance(b.get("ok"), bool), f"{what}.ok")
    stage = b.get("stage")
    _require(stage in ((None,) if b["ok"] else ("forward", "backward")), f"{what}.stage")
    error = None if b["ok"] else _error(b.get("error"))
    role = b.get("role")
    _require(role is None or (role in OP_ROLES and error is not None), f"{what}.role")
    if stage == "forward":
        return OpRun(False, stage, error, role)
    outs, count = b.get("outputs"), b.get("count")
    _require(isinstance(outs, list) and _is_int(count) and len(outs) == min(count, _MAX_OP_OUTPUTS), f"{what}.outputs")
    outputs = tuple(_op_value(v, max_values, f"{what}.outputs") for v in outs)
    gs = b.get("grads")
    if grads and stage is None:
        n_in = len(diff_inputs(case.args))
        _require(isinstance(gs, list) and len(gs) == n_in, f"{what}.grads")
        grad_values: tuple[OpValue | None, ...] | None = tuple(
            None if g is None else _op_value(g, max_values, f"{what}.grads") for g in gs)
    else:
        _require(gs is None, f"{what}.grads")
        grad_values = None
    return OpRun(error is None, stage, error, role, count, outputs, grad_values)


def _op_aot_facts(b: dict[str, Any], case: Case, max_values: int) -> OpAotFacts:
    raw = b.get("eager")
    check = raw.get("check_gradients") if isinstance(raw, dict) else None
    _require(check is None or isinstance(check, bool), "aot.check_gradients")
    eager = _op_run_facts(raw, case, max_values, check, "aot.eager")
    if eager.stage == "forward":
        _require(check is None and "aot" not in b, "aot.eager")
        return OpAotFacts(eager, False)
    _require(isinstance(check, bool), "aot.check_gradients")
    _require(not check or bool(diff_inputs(case.args)), "aot.check_gradients")
    if not eager.ok:
        _require("aot" not in b, "aot.aot")
        return OpAotFacts(eager, bool(check))
    return OpAotFacts(eager, bool(check), _op_run_facts(b.get("aot"), case, max_values, check, "aot.aot"))


def _custom_op(b: Any, case: Case, op: OpFacts) -> CustomOpReport:
    """harness._op_checks' report for the case's CustomOpPlan: every planned test, nothing else."""
    plan = case.custom_op
    assert plan is not None
    _require(isinstance(b, dict), "custom_op")
    ms = b.get("ms")
    _require(isinstance(ms, dict) and set(ms) == set(plan.tests)
             and all(type(v) in (int, float) and v >= 0 for v in ms.values()), "custom_op.ms")
    _require(set(b) == {"ms", *plan.tests}, "custom_op tests")
    failed: dict[str, ChildError] = {}
    facts: dict[str, Any] = {}
    for name in plan.tests:
        block = b[name]
        _require(isinstance(block, dict) and isinstance(block.get("ok"), bool), f"custom_op.{name}")
        if not block["ok"]:  # the harness could not collect the facts
            failed[name] = _error(block.get("error"))
            continue
        if name == "schema":
            facts[name] = _op_schema_facts(block, case)
        elif name == "autograd_registration":
            facts[name] = _op_autograd_facts(block, case)
        elif name == "fake_tensor":
            facts[name] = _op_fake_facts(block)
        else:
            facts[name] = _op_aot_facts(block, case, plan.max_values)
    return CustomOpReport(op, facts.get("schema"), facts.get("autograd_registration"), facts.get("fake_tensor"),
                          facts.get("aot_dispatch"), failed, {k: float(v) for k, v in ms.items()})


def torch_messages(frame: Any) -> dict[str, TorchMessages]:
    """case id -> torch's own messages, from the optional second frame (informative: anything
    malformed is left out)."""
    out: dict[str, TorchMessages] = {}
    if not isinstance(frame, dict) or frame.get("type") != "torch_checks" or not isinstance(frame.get("cases"), list):
        return out
    for c in frame["cases"]:
        if isinstance(c, dict) and isinstance(c.get("id"), str):
            out[c["id"]] = TorchMessages(_torch_message(c.get("torch_gradcheck")), _torch_message(c.get("torch_gradgradcheck")))
    return out


def _torch_message(v: Any) -> TorchMessage | None:
    if isinstance(v, dict) and isinstance(v.get("ok"), bool) and isinstance(v.get("message"), str):
        return TorchMessage(v["ok"], v["message"][:4000])
    return None
