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

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .cases import (
    Arg,
    BatchedGradPlan,
    Case,
    ForwardAdPlan,
    GradgradPlan,
    InPlacePlan,
    JacobianPlan,
    VmapConfig,
    VmapPlan,
    diff_inputs,
    to_float32,
)
from .draws import alone_source, numel, run_grad_outputs
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


#: One dual evaluation: each output's tangent (flat), None where the output has none.
Tangents = list["list[Any] | None"]

#: The steps of harness._forward_ad, in order: a report stopped at one has every step before it.
FORWARD_AD_STAGES = ("forward", "numerical", "jvp", "zero_tangent", "input_without_tangent", "backward")


@dataclass(frozen=True, slots=True)
class ForwardAdNumbers:
    """harness._forward_ad's numbers for a ForwardAdPlan (judged in forward_ad.py); `stage` names
    the step that raised (None: none did)."""

    ok: bool
    stage: str | None
    error: ChildError | None = None
    #: whether the Function's class defines jvp (a fact for naming a failure, not a verdict)
    has_jvp: bool = False
    out_rg: list[bool] = field(default_factory=list)
    out_shapes: list[list[int]] = field(default_factory=list)
    #: more input and output elements than the plan's max_elements: nothing else was computed
    too_large: bool = False
    #: forward's outputs (flat, concatenated) at x - eps v and x + eps v: one row per random tangent,
    #: then one per input requiring grad alone (its part of the first tangent), when there are several
    minus: list[list[float]] = field(default_factory=list)
    plus: list[list[float]] = field(default_factory=list)
    #: the outputs' tangents for each random tangent, for zero tangents, and for each input alone
    jvps: list[Tangents] = field(default_factory=list)
    zero: Tangents | None = None
    alone: list[Tangents] = field(default_factory=list)
    #: backward for the plan's grad_output u (J^T u), one gradient per input requiring grad
    vjp: Grads | None = None
    #: what jvp returned the first time it was called (before torch checked it)
    returned: Returned | None = None
    #: positions (among the inputs requiring grad) of the inputs whose tangent jvp changed in place
    tangent_changed: list[int] = field(default_factory=list)
    #: positions of the dual inputs forward returned as an output (marked dirty: torch requires jvp to
    #: change their tangent in place)
    tangent_returned: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class InPlaceInput:
    """An input that requires grad, as the in-place check's call left it: its clone (the call's
    argument) or, on the leaf call, the leaf itself."""

    version_before: int
    version_after: int
    #: its values after the call (None: too large to send)
    values_after: list[Any] | None
    #: the output that is this very tensor (None: none is; always None on the leaf call)
    returned_as: int | None = None
    #: the output that is a view of it (torch returns an input unmarked as a view of it)
    view_of: int | None = None


@dataclass(frozen=True, slots=True)
class InPlaceLeaf:
    """The Function called on the leaves requiring grad themselves (torch refuses a dirty leaf)."""

    raised: bool
    error: ChildError | None
    #: per input that requires grad, as the call left it (empty: the harness failed)
    inputs: tuple[InPlaceInput, ...] = ()


@dataclass(frozen=True, slots=True)
class InPlaceNumbers:
    """harness._in_place's report for an InPlacePlan; `stage` names the step that raised ("forward",
    "backward", "numerical"; None: none did). Judged in in_place.py."""

    ok: bool
    stage: str | None
    error: ChildError | None
    leaf: InPlaceLeaf
    #: per input that requires grad: its clone after the call (empty when the call was never made)
    inputs: tuple[InPlaceInput, ...] = ()
    #: torch's warnings during the call (ctx.mark_dirty of a tensor that is not an input)
    warnings: tuple[str, ...] = ()
    #: the call's outputs (the first 16); None when forward raised
    outputs: tuple[Output, ...] | None = None
    #: the expression's gradient with respect to each leaf, for the plan's w and v
    grads: Grads | None = None
    #: how the finite differences were made (cases.InPlacePlan.mode); None: not reached
    mode: str | None = None
    #: the expression's values (the products, flat, concatenated) at -eps and +eps, per move
    minus: list[list[float]] = field(default_factory=list)
    plus: list[list[float]] = field(default_factory=list)

    def part_sizes(self, diff: Sequence[Arg]) -> list[int]:
        """The sizes of the expression's parts, as the child multiplied them: each output that
        requires grad, then each input that does (`diff`); w and v are drawn for these."""
        outs = [numel(o.shape) for o in self.outputs or () if o.kind == "tensor" and o.requires_grad]
        return outs + [a.numel for a in diff]


@dataclass(frozen=True, slots=True)
class VmapCall:
    """One vmap call of a VmapPlan (its config of the same position): the Function on each batch
    entry alone, then torch.func.vmap over the batch, then the gradients through both. A failed
    step's error ends the call's numbers (`where`: "forward", "vmap", "backward", "vmap backward")."""

    #: per batch entry, the outputs of the Function called on that entry alone
    single: tuple[tuple[Output, ...], ...] = ()
    single_error: ChildError | None = None
    #: the outputs of vmap (the batch dimension where out_dims puts it)
    vmap: tuple[Output, ...] | None = None
    vmap_error: ChildError | None = None
    #: the outputs requiring grad when called alone (the grad_outputs' order), when gradients were asked
    diff_outputs: list[int] | None = None
    #: per batch entry, backward's gradients alone (one per input requiring grad)
    single_grads: list[Grads] | None = None
    single_grads_error: ChildError | None = None
    #: per input requiring grad, its gradients through vmap: one per batch entry, or one in all for
    #: an input the call does not batch (shared by every entry)
    vmap_grads: list[Grads] | None = None
    vmap_grads_error: ChildError | None = None


@dataclass(frozen=True, slots=True)
class VmapNumbers:
    """harness._vmap_numbers' report: how the Function supports vmap ("generate": generate_vmap_rule
    = True; "staticmethod": its own vmap; "both"; "none"), whether it has setup_context, and one
    VmapCall per config of the plan."""

    rule: str
    setup_context: bool
    calls: tuple[VmapCall, ...] = ()
    error: ChildError | None = None


@dataclass(frozen=True, slots=True)
class BatchedGradOutput:
    """check_batched_grad for one output requiring grad (`index`: its position among forward's
    outputs): backward for each grad_output of the batch alone (`single`, per entry, one gradient
    per input requiring grad), and for all at once (`batched`, per input, the batch's gradients
    flat, entry after entry; None: undefined)."""

    index: int
    single: list[Grads] | None = None
    single_error: ChildError | None = None
    batched: Grads | None = None
    batched_error: ChildError | None = None


@dataclass(frozen=True, slots=True)
class BatchedGradNumbers:
    """harness._batched_grad_numbers' report (forward raised: `error`)."""

    ok: bool
    error: ChildError | None = None
    outputs: tuple[BatchedGradOutput, ...] = ()
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
    forward_ad: ForwardAdNumbers | None = None
    in_place: InPlaceNumbers | None = None
    vmap: VmapNumbers | None = None
    batched_grad: BatchedGradNumbers | None = None
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
    # on clones, whatever forward on the leaves did (a right in-place Function raises there)
    in_place = None if case.in_place is None else _in_place(rep.get("in_place"), case.in_place, case.args)
    # opcheck's facts: asked by the plan, made for a custom op only (also when its forward raised)
    wanted = case.custom_op is not None and op is not None and not case.probe
    _require(wanted == ("custom_op" in rep), "custom_op")
    custom_op = _custom_op(rep["custom_op"], case, op) if wanted and op is not None else None
    if not forward.ok or case.probe:
        return CaseReport(case.id, forward, in_place=in_place, custom_op=custom_op)
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
        diff_outputs=diff_outputs, vjp_sets=vjp_sets, in_place=in_place, custom_op=custom_op,
        forward_ad=None if case.forward_ad is None else _forward_ad(rep.get("forward_ad"), case.forward_ad, case.args),
        vmap=None if case.vmap is None else _vmap(rep.get("vmap"), case.vmap, case.args),
        batched_grad=None if case.batched_grad is None else _batched_grad(rep.get("batched_grad"), case.batched_grad,
                                                                          case.args))


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


def _tangents(ts: Any, shapes: Sequence[Sequence[int]]) -> bool:
    """One dual evaluation's output tangents: one per output, each None or numbers of its size."""
    return isinstance(ts, list) and len(ts) == len(shapes) and all(
        t is None or _numlist(t, numel(sh)) for t, sh in zip(ts, shapes))


def _forward_ad(fa: Any, plan: ForwardAdPlan, args: Sequence[Arg]) -> ForwardAdNumbers:
    """harness._forward_ad's report for `plan` over `args`: every step before the one that stopped it
    complete, each row as wide as the outputs, each tangent and gradient the size of its tensor."""
    _require(isinstance(fa, dict) and isinstance(fa.get("ok"), bool), "forward_ad.ok")
    stage = fa.get("stage")
    ok = fa["ok"]
    _require((stage is None) == ok and (stage is None or stage in FORWARD_AD_STAGES), "forward_ad.stage")
    error = None if ok else _error(fa.get("error"))
    _require(isinstance(fa.get("has_jvp"), bool), "forward_ad.has_jvp")
    diff = diff_inputs(args)
    changed = fa.get("tangent_changed")
    _require(isinstance(changed, list) and all(_is_int(p) and 0 <= p < len(diff) for p in changed)
             and changed == sorted(set(changed)), "forward_ad.tangent_changed")
    dirty = fa.get("tangent_returned", [])
    _require(isinstance(dirty, list) and all(_is_int(p) and 0 <= p < len(diff) for p in dirty)
             and dirty == sorted(set(dirty)), "forward_ad.tangent_returned")
    head = {"ok": ok, "stage": stage, "error": error, "has_jvp": fa["has_jvp"], "returned": _returned(fa.get("returned")),
            "tangent_changed": changed, "tangent_returned": dirty}
    if stage == "forward":
        return ForwardAdNumbers(**head)
    out_rg, shapes = fa.get("out_rg"), fa.get("out_shapes")
    _require(isinstance(out_rg, list) and len(out_rg) <= _MAX_OUTPUTS and all(isinstance(b, bool) for b in out_rg), "forward_ad.out_rg")
    _require(isinstance(shapes, list) and len(shapes) == len(out_rg) and all(_is_shape(sh) for sh in shapes), "forward_ad.out_shapes")
    width = sum(numel(sh) for sh in shapes)
    n_in = sum(args[i].numel for i in diff)
    over = plan.max_elements is not None and n_in + width > plan.max_elements
    _require(fa.get("too_large", False) is over, "forward_ad.too_large")
    if over:
        _require(ok, "forward_ad.too_large")
        return ForwardAdNumbers(**head, out_rg=out_rg, out_shapes=shapes, too_large=True)
    n_alone = len(diff) if len(diff) > 1 else 0
    n_rows = plan.k + n_alone
    complete = {s: stage is None or FORWARD_AD_STAGES.index(stage) > FORWARD_AD_STAGES.index(s) for s in FORWARD_AD_STAGES}
    started = {s: stage is None or FORWARD_AD_STAGES.index(stage) >= FORWARD_AD_STAGES.index(s) for s in FORWARD_AD_STAGES}
    minus, plus = fa.get("minus"), fa.get("plus")
    for rows in (minus, plus):
        _require(isinstance(rows, list) and len(rows) <= n_rows and all(_numlist(r, width) for r in rows), "forward_ad rows")
        _require(not complete["numerical"] or len(rows) == n_rows, "forward_ad rows")
    jvps = fa.get("jvps", []) if started["jvp"] else []
    _require(isinstance(jvps, list) and len(jvps) <= plan.k and all(_tangents(t, shapes) for t in jvps), "forward_ad.jvps")
    _require(not complete["jvp"] or len(jvps) == plan.k, "forward_ad.jvps")
    zero = fa.get("zero") if complete["zero_tangent"] else None
    _require(not complete["zero_tangent"] or _tangents(zero, shapes), "forward_ad.zero")
    alone = fa.get("alone", []) if started["input_without_tangent"] else []
    _require(isinstance(alone, list) and len(alone) <= n_alone and all(_tangents(t, shapes) for t in alone), "forward_ad.alone")
    _require(not complete["input_without_tangent"] or len(alone) == n_alone, "forward_ad.alone")
    vjp = fa.get("vjp") if complete["backward"] else None
    if complete["backward"] and any(out_rg) and diff:
        _require(isinstance(vjp, list) and len(vjp) == len(diff) and all(
            g is None or _numlist(g, args[i].numel) for g, i in zip(vjp, diff)), "forward_ad.vjp")
    else:
        _require(vjp is None, "forward_ad.vjp")
    return ForwardAdNumbers(**head, out_rg=out_rg, out_shapes=shapes, minus=minus, plus=plus, jvps=jvps, zero=zero,
                            alone=alone, vjp=vjp)
_IN_PLACE_STAGES = (None, "forward", "backward", "numerical")


def _in_place_input(d: Any, spec: Arg, n_out: int, leaf: bool) -> InPlaceInput:
    _require(isinstance(d, dict), "in_place.inputs")
    before, after = d.get("version_before"), d.get("version_after")
    _require(_is_int(before) and _is_int(after) and 0 <= before <= after, "in_place versions")
    values = d.get("values_after")
    _require(values is None or _numlist(values, spec.numel), "in_place.values_after")
    if leaf:
        return InPlaceInput(before, after, values)
    ret, view = d.get("returned_as"), d.get("view_of")
    for k in (ret, view):
        _require(k is None or (_is_int(k) and 0 <= k < n_out), "in_place output index")
    return InPlaceInput(before, after, values, ret, view)


def _in_place_leaf(d: Any, diff: Sequence[Arg]) -> InPlaceLeaf:
    _require(isinstance(d, dict) and isinstance(d.get("raised"), bool), "in_place.leaf")
    error = None if d.get("error") is None else _error(d["error"])
    _require(error is not None or not d["raised"], "in_place.leaf.error")
    inputs = d.get("inputs")
    _require(isinstance(inputs, list) and (len(inputs) == len(diff) or (not inputs and error is not None)),
             "in_place.leaf.inputs")
    return InPlaceLeaf(d["raised"], error, tuple(_in_place_input(x, a, 0, True) for x, a in zip(inputs, diff)))


def _in_place(ip: Any, plan: InPlacePlan, args: Sequence[Arg]) -> InPlaceNumbers:
    """harness._in_place's report for `plan` over `args`, its mode the one the plan gives for the
    sizes reported, its rows as many as that mode makes."""
    _require(isinstance(ip, dict) and isinstance(ip.get("ok"), bool), "in_place.ok")
    stage = ip.get("stage")
    _require(stage in _IN_PLACE_STAGES and ip["ok"] == (stage is None), "in_place.stage")
    error = None if ip["ok"] else _error(ip.get("error"))
    diff = [args[i] for i in diff_inputs(args)]
    leaf = _in_place_leaf(ip.get("leaf"), diff)
    warns = ip.get("warnings", [])
    _require(isinstance(warns, list) and len(warns) <= 4 and all(isinstance(w, str) for w in warns), "in_place.warnings")
    raw_outs = ip.get("outputs")
    outputs = None
    if raw_outs is not None or stage != "forward":
        _require(isinstance(raw_outs, list) and len(raw_outs) <= _MAX_OUTPUTS, "in_place.outputs")
        outputs = tuple(_output(o) for o in raw_outs)
    raw_in = ip.get("inputs")
    _require(isinstance(raw_in, list) and (len(raw_in) == len(diff) or (not raw_in and error is not None)),
             "in_place.inputs")
    n_out = len(outputs) if outputs is not None else _MAX_OUTPUTS
    inputs = tuple(_in_place_input(x, a, n_out, False) for x, a in zip(raw_in, diff))
    if stage in ("forward", "backward"):
        return InPlaceNumbers(ip["ok"], stage, error, leaf, inputs, tuple(warns), outputs)
    assert outputs is not None
    grads = ip.get("grads")
    _require(isinstance(grads, list) and len(grads) == len(diff)
             and all(g is None or _numlist(g, a.numel) for g, a in zip(grads, diff)), "in_place.grads")
    numbers = InPlaceNumbers(ip["ok"], stage, error, leaf, inputs, tuple(warns), outputs)
    width = sum(numbers.part_sizes(diff))
    mode = ip.get("mode")
    _require(mode == plan.mode(args, width) or (mode is None and stage == "numerical"), "in_place.mode")
    n_moves = {"full": sum(a.numel for a in diff), "projections": plan.projections.k}.get(mode or "", 0)
    for key in ("minus", "plus"):
        rows = ip.get(key, [])
        _require(isinstance(rows, list) and len(rows) <= n_moves and all(_numlist(r, width) for r in rows), f"in_place.{key}")
    minus, plus = ip.get("minus", []), ip.get("plus", [])
    _require(stage is not None or (len(minus) == n_moves and len(plus) == n_moves), "in_place rows")
    return InPlaceNumbers(ip["ok"], stage, error, leaf, inputs, tuple(warns), outputs, grads, mode, minus, plus)


def _grad_list(gs: Any, sizes: Sequence[int], what: str) -> Grads:
    """Gradients, one per size (None: undefined), each of that many numbers."""
    _require(isinstance(gs, list) and len(gs) == len(sizes)
             and all(g is None or _numlist(g, n) for g, n in zip(gs, sizes)), what)
    grads: Grads = gs
    return grads


_VMAP_RULES = frozenset({"generate", "staticmethod", "both", "none"})


def _vmap(vm: Any, plan: VmapPlan, args: Sequence[Arg]) -> VmapNumbers:
    """harness._vmap_numbers' report for `plan`: one call per config, each entry's outputs for
    the plan's batch size, gradients of the inputs' sizes (per entry, or one for an input the config
    does not batch). The numbers of the calls alone are given once for the configs that batch the
    same arguments, at the first (draws.alone_source), and read from there for the others."""
    _require(isinstance(vm, dict) and vm.get("rule") in _VMAP_RULES and isinstance(vm.get("setup_context"), bool),
             "vmap")
    if vm.get("error") is not None:
        _require(vm.get("configs") == [], "vmap.configs")
        return VmapNumbers(vm["rule"], vm["setup_context"], (), _error(vm["error"]))
    raw = vm.get("configs")
    _require(isinstance(raw, list) and len(raw) == len(plan.configs), "vmap.configs")
    all_dims = [cfg.in_dims for cfg in plan.configs]
    calls: list[VmapCall] = []
    for c, (rc, cfg) in enumerate(zip(raw, plan.configs)):
        _require(isinstance(rc, dict), "vmap call")
        source = alone_source(all_dims, c)
        if source == c:
            alone = _vmap_alone(rc, plan, args)
        else:
            _require(not any(k in rc for k in _ALONE_KEYS), "vmap call: the numbers alone given twice")
            alone = calls[source]
        calls.append(_vmap_call(rc, cfg, plan, args, alone))
    return VmapNumbers(vm["rule"], vm["setup_context"], tuple(calls))


_ALONE_KEYS = ("single", "single_error", "diff_outputs", "single_grads", "single_grads_error")


def _vmap_alone(c: dict[str, Any], plan: VmapPlan, args: Sequence[Arg]) -> VmapCall:
    """The numbers of the calls alone (a VmapCall with those fields only)."""
    if c.get("single_error") is not None:
        return VmapCall(single_error=_error(c["single_error"]))
    single: Any = c.get("single")
    _require(isinstance(single, list) and len(single) == plan.batch, "vmap.single")
    entries = []
    for outs in single:
        _require(isinstance(outs, list) and 1 <= len(outs) <= _MAX_OUTPUTS, "vmap.single outputs")
        entries.append(tuple(_output(o) for o in outs))
    _require(len({len(e) for e in entries}) == 1, "vmap.single outputs")
    diff_in = diff_inputs(args)
    if not plan.grads or not diff_in:
        return VmapCall(tuple(entries))
    diff_out: Any = c.get("diff_outputs")
    first = entries[0]
    _require(isinstance(diff_out, list) and all(_is_int(k) and 0 <= k < len(first) and first[k].kind == "tensor"
                                                 and first[k].requires_grad for k in diff_out)
             and diff_out == sorted(set(diff_out)), "vmap.diff_outputs")
    if not diff_out:
        return VmapCall(tuple(entries), diff_outputs=diff_out)
    if c.get("single_grads_error") is not None:
        return VmapCall(tuple(entries), diff_outputs=diff_out, single_grads_error=_error(c["single_grads_error"]))
    sg: Any = c.get("single_grads")
    sizes = [args[i].numel for i in diff_in]
    _require(isinstance(sg, list) and len(sg) == plan.batch, "vmap.single_grads")
    return VmapCall(tuple(entries), diff_outputs=diff_out, single_grads=[_grad_list(g, sizes, "vmap.single_grads") for g in sg])


def _vmap_call(c: dict[str, Any], cfg: VmapConfig, plan: VmapPlan, args: Sequence[Arg], alone: VmapCall) -> VmapCall:
    """One vmap call's numbers beside the numbers alone it is compared with."""
    call = VmapCall(alone.single, alone.single_error, diff_outputs=alone.diff_outputs, single_grads=alone.single_grads,
                    single_grads_error=alone.single_grads_error)
    if alone.single_error is not None:
        _require(not any(k in c for k in ("vmap", "vmap_error", "vmap_grads", "vmap_grads_error")), "vmap.vmap")
        return call
    if c.get("vmap_error") is not None:
        return dataclasses.replace(call, vmap_error=_error(c["vmap_error"]))
    raw_v: Any = c.get("vmap")
    _require(isinstance(raw_v, list) and 1 <= len(raw_v) <= _MAX_OUTPUTS, "vmap.vmap")
    call = dataclasses.replace(call, vmap=tuple(_output(o) for o in raw_v))
    if alone.single_grads is None or not cfg.grads:
        _require(not any(k in c for k in ("vmap_grads", "vmap_grads_error")), "vmap.vmap_grads")
        return call
    if c.get("vmap_grads_error") is not None:
        return dataclasses.replace(call, vmap_grads_error=_error(c["vmap_grads_error"]))
    vg: Any = c.get("vmap_grads")
    diff_in = diff_inputs(args)
    _require(isinstance(vg, list) and len(vg) == len(diff_in), "vmap.vmap_grads")
    return dataclasses.replace(call, vmap_grads=[
        _grad_list(g, [args[i].numel] * (1 if cfg.in_dims[i] is None else plan.batch), "vmap.vmap_grads")
        for g, i in zip(vg, diff_in)])


def _batched_grad(bg: Any, plan: BatchedGradPlan, args: Sequence[Arg]) -> BatchedGradNumbers:
    """harness._batched_grad_numbers' report: per output requiring grad (at most 16, in order),
    the batch's gradients alone and at once, of the inputs' sizes."""
    error = _ok_block(bg, "batched_grad")
    if error is not None:
        return BatchedGradNumbers(False, error)
    raw = bg.get("outputs")
    _require(isinstance(raw, list) and len(raw) <= _MAX_OUTPUTS, "batched_grad.outputs")
    diff_in = diff_inputs(args)
    sizes = [args[i].numel for i in diff_in]
    outs = []
    for item in raw:
        _require(isinstance(item, dict) and _is_int(item.get("index")) and 0 <= item["index"], "batched_grad.index")
        if item.get("single_error") is not None:
            outs.append(BatchedGradOutput(item["index"], single_error=_error(item["single_error"])))
            continue
        single = item.get("single")
        _require(isinstance(single, list) and len(single) == plan.batch, "batched_grad.single")
        rows = [_grad_list(g, sizes, "batched_grad.single") for g in single]
        if item.get("batched_error") is not None:
            outs.append(BatchedGradOutput(item["index"], rows, batched_error=_error(item["batched_error"])))
            continue
        batched = _grad_list(item.get("batched"), [plan.batch * n for n in sizes], "batched_grad.batched")
        outs.append(BatchedGradOutput(item["index"], rows, batched=batched))
    indices = [o.index for o in outs]
    _require(indices == sorted(set(indices)), "batched_grad.index")
    return BatchedGradNumbers(True, None, tuple(outs))


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
