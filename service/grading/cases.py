"""A plan's cases as typed data: what the judge asks a child to compute, and their one wire form.

plan.py (grades) and runs.py (runs) plan into these frozen values; the verdict, the check engine
and the report parser read them. `task_cases` is the only place that writes the JSON the child
reads (harness.py: ``{"id": ..., "args": [{"t": "tensor", ..., "rg": true}], ...}``): its key
names and their order are the harness's contract, and a grade's task is cached as bytes per
exercise version, so they stay exactly as the harness has always read them.

Numbers stay in the lists they were drawn into (values, grad_outputs): they are not copied, and
not to be changed. Torch-free, like the rest of the judge.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .draws import (
    batch_scales,
    batch_size,
    forward_ad_grad_outputs,
    forward_ad_tangents,
    jacobian_mode,
    numel,
    seeded_vectors,
)

#: The kinds of case: drawn inputs, an exercise's variants and boundary points, the float32 copy
#: of the first random case (grades), and the one case of a "Try it yourself" run.
CaseKind = Literal["random", "variant", "boundary", "float32", "run"]


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument of forward: a tensor (flat values, row-major) or a plain Python value."""

    kind: str  # "tensor", "float", "int", "bool", "ints" (a tuple, list or torch.Size of ints) or "none"
    dtype: str = ""
    shape: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    requires_grad: bool = False
    #: a float, int or bool argument's value; the list of an "ints" argument
    value: Any = None
    container: str = "tuple"

    @property
    def differentiable(self) -> bool:
        return self.kind == "tensor" and self.requires_grad

    @property
    def numel(self) -> int:
        return numel(self.shape)

    def to_wire(self) -> dict[str, Any]:
        if self.kind == "tensor":
            return {"t": "tensor", "dtype": self.dtype, "shape": self.shape, "values": self.values, "rg": self.requires_grad}
        if self.kind == "ints":
            return {"t": "ints", "v": self.value, "container": self.container}
        if self.kind == "none":
            return {"t": "none"}
        return {"t": self.kind, "v": self.value}


def to_float32(x: float) -> float:
    """x rounded to float32, as a float32 tensor holds it."""
    rounded: float = struct.unpack("f", struct.pack("f", x))[0]
    return rounded


def diff_inputs(args: Sequence[Arg]) -> list[int]:
    """Positions of the arguments that are tensors requiring grad."""
    return [i for i, a in enumerate(args) if a.requires_grad and a.kind == "tensor"]  # no property call: a hot path


def all_points(args: Sequence[Arg]) -> list[list[int]]:
    """Every element of every input that requires grad, in torch's order (the full Jacobian)."""
    return [[i, j] for i in diff_inputs(args) for j in range(args[i].numel)]


@dataclass(frozen=True, slots=True)
class ProjectionPlan:
    """Random projections of a Jacobian: k input directions and k grad_outputs drawn from `seed`
    (draws.projection_vectors), made when inputs and outputs number at most `max_elements`."""

    seed: int
    k: int
    max_elements: int

    def to_wire(self) -> dict[str, Any]:
        return {"seed": self.seed, "k": self.k, "max_elements": self.max_elements}


@dataclass(frozen=True, slots=True)
class JacobianPlan:
    """The numbers of torch.autograd.gradcheck asked of a child: finite differences at `points`
    ([argument, element] pairs; "all" when the judge cannot know every input's size, as in a run),
    or by random projections when there are no points or, with `max_side`, when the Jacobian has
    more rows or columns than that."""

    eps: float
    atol: float
    rtol: float
    points: list[list[int]] | Literal["all"] | None = None
    max_side: int | None = None
    projections: ProjectionPlan | None = None

    def points_of(self, args: Sequence[Arg]) -> list[list[int]] | None:
        """The finite-difference points over `args`, or None (no full Jacobian planned)."""
        return all_points(args) if self.points == "all" else self.points

    def mode(self, args: Sequence[Arg], out_shapes: Sequence[Sequence[int]]) -> str:
        """How the plan is carried out once forward's outputs are known: "full" (every element, as
        torch.autograd.gradcheck), "projections" (the Jacobian is too large to send), or
        "too_large" (not even projections fit a result frame): draws.jacobian_mode, the rule the
        child applies too; the judge refuses a report that chose otherwise."""
        points = self.points_of(args)
        return jacobian_mode(None if points is None else len(points), sum(numel(s) for s in out_shapes),
                             sum(args[i].numel for i in diff_inputs(args)), self.max_side,
                             None if self.projections is None else self.projections.max_elements)

    def torch_options(self) -> dict[str, Any]:
        """Keyword arguments of torch's own check (its message is shown beside ours)."""
        return {"eps": self.eps, "atol": self.atol, "rtol": self.rtol}

    def to_wire(self) -> dict[str, Any]:
        out = self.torch_options()
        if self.max_side is not None:
            out["max_side"] = self.max_side
        if self.projections is not None:
            out["projections"] = self.projections.to_wire()
        if self.points is not None:
            out["points"] = self.points
        return out


@dataclass(frozen=True, slots=True)
class GradgradPlan:
    """torch.autograd.gradgradcheck's numbers: `jacobian` of the function (inputs, grad_outputs)
    -> backward's gradients, for grad_outputs `v` given by the judge (a grade) or drawn by the child
    from `v_seed` (a run: only the child knows the outputs' shapes); `w`, one random grad_output
    per input requiring grad, for double backward's product."""

    jacobian: JacobianPlan
    w: list[list[float]]
    v: list[list[float]] | None = None
    v_seed: int | None = None

    def grad_outputs(self, sizes: Sequence[int]) -> list[list[float]]:
        """The grad_outputs the child must have used, for outputs of these sizes."""
        return self.v if self.v is not None else seeded_vectors(self.v_seed or 0, sizes)

    def to_wire(self) -> dict[str, Any]:
        jac = self.jacobian.to_wire()
        if self.v is not None:  # a grade's: its grad_outputs come before the points, as ever
            head = {k: jac.pop(k) for k in ("eps", "atol", "rtol")}
            return {**head, "v": self.v, "w": self.w, **jac}
        return {**jac, "v_seed": self.v_seed, "w": self.w}


#: torch.library.opcheck's default tests, in its order, each reported by the child as facts and
#: numbers (harness._op_checks) and decided by the judge (custom_ops.py), by the names the child uses.
OP_TESTS = ("schema", "autograd_registration", "fake_tensor", "aot_dispatch")


@dataclass(frozen=True, slots=True)
class CustomOpPlan:
    """The facts of torch.library.opcheck's tests asked of a child whose entry point is a custom op
    (torch.library.custom_op): `tests`, some of OP_TESTS; a tensor of more than `max_values`
    elements is described but its values (AOTAutograd's outputs and gradients beside eager ones)
    are not sent. `atol`/`rtol`: the judge's tolerances comparing AOTAutograd with eager (None:
    torch.testing.assert_close's for the dtype, as opcheck); not sent."""

    tests: tuple[str, ...] = OP_TESTS
    max_values: int = 6144
    atol: float | None = None
    rtol: float | None = None

    def __post_init__(self) -> None:
        if not set(self.tests) <= set(OP_TESTS) or len(set(self.tests)) != len(self.tests):
            raise ValueError(f"custom-op tests are some of {OP_TESTS}, each once")

    def to_wire(self) -> dict[str, Any]:
        return {"tests": list(self.tests), "max_values": self.max_values}


@dataclass(frozen=True, slots=True)
class ForwardAdPlan:
    """torch.autograd.gradcheck(check_forward_ad=True)'s question, asked along random tangents:
    the child evaluates forward with dual tensors (torch.autograd.forward_ad, so the Function's
    jvp runs) for `k` random tangents drawn from `seed` (draws.forward_ad_tangents, one vector per
    input requiring grad), a zero tangent, and each input requiring grad alone with the first
    tangent's part (the others plain tensors: jvp gets zeros for them, or None after
    ctx.set_materialize_grads(False)); forward at x - eps v and x + eps v along each of those
    tangents (the judge's finite differences); and backward for one random grad_output u drawn from
    the same seed (the dot-product test <J v, u> = <v, J^T u>). `atol` and `rtol` are the
    judge's (gradcheck's); beyond `max_elements` input and output elements together the child
    reports only the outputs' shapes."""

    seed: int
    k: int
    eps: float
    atol: float = 1e-5
    rtol: float = 1e-3
    max_elements: int | None = None

    def tangents(self, sizes: Sequence[int]) -> list[list[list[float]]]:
        """The k random tangents for inputs requiring grad of these sizes (what the child used)."""
        return forward_ad_tangents(self.seed, self.k, sizes)

    def grad_outputs(self, sizes: Sequence[int]) -> list[list[float]]:
        """The dot-product test's grad_output u, for differentiable outputs of these sizes."""
        return forward_ad_grad_outputs(self.seed, sizes)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.seed, "k": self.k, "eps": self.eps}
        if self.max_elements is not None:
            out["max_elements"] = self.max_elements
        return out


@dataclass(frozen=True, slots=True)
class InPlacePlan:
    """The in-place check's numbers (in_place.check_in_place; harness._in_place): the Function called
    on a clone of each input that requires grad (an op before it), its differentiable outputs and
    those inputs as they are after the call each multiplied by a factor w (an op after it), and the
    gradient of that expression for grad_outputs v with respect to the original leaves, w and v
    drawn from `seed` (draws.in_place_vectors) for the sizes the child finds; the expression's values
    at each input element moved by -eps and +eps ("full"), or along `projections.k` random
    directions drawn from `projections.seed` when the mode (draws.jacobian_mode) says so; then a
    call on the leaves themselves (torch refuses an input marked dirty that is a leaf requiring
    grad). `atol` and `rtol` compare the gradient with finite differences, as gradcheck does."""

    seed: int
    eps: float
    atol: float
    rtol: float
    max_side: int
    projections: ProjectionPlan

    def mode(self, args: Sequence[Arg], width: int) -> str:
        """How the finite differences are made for an expression of `width` values: "full",
        "projections" or "too_large" (draws.jacobian_mode, the rule the child applies too)."""
        n_in = sum(args[i].numel for i in diff_inputs(args))
        return jacobian_mode(n_in, width, n_in, self.max_side, self.projections.max_elements)

    def to_wire(self) -> dict[str, Any]:
        return {"seed": self.seed, "eps": self.eps, "max_side": self.max_side, "projections": self.projections.to_wire()}


@dataclass(frozen=True, slots=True)
class VmapConfig:
    """One call of torch.func.vmap(Fn.apply, in_dims, out_dims): `in_dims` has one entry per
    argument of forward (None: not batched, as every argument that is not a tensor), `out_dims`
    one int for every output (negative counts from the end, as torch reads it); `grads`: the
    gradients through this call too (when the plan asks for gradients)."""

    in_dims: tuple[int | None, ...]
    out_dims: int = 0
    grads: bool = True

    def to_wire(self) -> dict[str, Any]:
        return {"in_dims": list(self.in_dims), "out_dims": self.out_dims, "grads": self.grads}


@dataclass(frozen=True, slots=True)
class VmapPlan:
    """The vmap check: for each config, torch.func.vmap of the Function over a batch of `batch`
    entries, and the same Function called on each entry alone (outputs; with `grads`, also the
    gradients through both for grad_outputs drawn from `seed`). Entry b holds the case's inputs
    that the config batches, each multiplied by draws.batch_scales(seed, batch)[b] (entry 0: the
    case itself); the inputs it does not batch are the case's. `atol` and `rtol` are the judge's
    (torch.allclose's rule), not sent."""

    seed: int
    batch: int
    configs: tuple[VmapConfig, ...]
    grads: bool = True
    atol: float = 1e-8
    rtol: float = 1e-5

    @property
    def scales(self) -> tuple[float, ...]:
        return batch_scales(self.seed, self.batch)

    def to_wire(self) -> dict[str, Any]:
        return {"seed": self.seed, "batch": self.batch, "configs": [c.to_wire() for c in self.configs],
                "grads": self.grads}


def vmap_configs(args: Sequence[Arg]) -> tuple[VmapConfig, ...]:
    """The calls of a vmap check for these arguments: every tensor batched at dim 0 (out_dims 0);
    when a tensor has a dimension, every tensor batched at a new last dimension with out_dims -1
    (the batch last, as a vmap rule must put it where its out_dims says); with two tensors or more,
    only the first batched (shared weights), then all but the first (a shared input). Gradients
    through each but the first when there is a second batching every tensor: the batch at the end
    asks more of a vmap staticmethod and its backward than the batch in front, and the first call
    of vmap in a child is its dearest (measured: about 1 ms of 2.5 for a small Function)."""
    tensors = [i for i, a in enumerate(args) if a.kind == "tensor"]

    def dims(batched: Sequence[int], at_end: bool = False) -> tuple[int | None, ...]:
        return tuple((len(args[i].shape) if at_end else 0) if i in batched else None for i in range(len(args)))

    if not tensors:
        return ()
    at_end = any(args[i].shape for i in tensors)
    configs = [VmapConfig(dims(tensors), 0, grads=not at_end)]
    if at_end:
        configs.append(VmapConfig(dims(tensors, at_end=True), -1))
    if len(tensors) > 1:
        configs.append(VmapConfig(dims(tensors[:1]), 0))
        configs.append(VmapConfig(dims(tensors[1:]), 0))
    return tuple(configs)


def _tolerances(args: Sequence[Arg]) -> tuple[float, float]:
    """torch.allclose's defaults; float32's batched kernels sum in another order: looser."""
    if any(a.kind == "tensor" and a.dtype in ("float32", "float16", "bfloat16") for a in args):
        return 1e-6, 1e-4
    return 1e-8, 1e-5


def plan_vmap(args: Sequence[Arg], seed: int, *, grads: bool = True) -> VmapPlan | None:
    """The vmap check of a case with these arguments (None: no tensor to batch)."""
    configs = vmap_configs(args)
    if not configs:
        return None
    atol, rtol = _tolerances(args)
    return VmapPlan(seed, batch_size([a.shape for a in args if a.kind == "tensor"]), configs, grads, atol, rtol)


@dataclass(frozen=True, slots=True)
class BatchedGradPlan:
    """torch.autograd.gradcheck's check_batched_grad: for each output that requires grad, backward
    for `batch` grad_outputs at once (torch.func.vmap over the vector-Jacobian product) against
    backward for each alone. Entry b's grad_output for output k is
    draws.batch_grad_outputs(seed, batch, sizes)[b][k]. `atol` and `rtol`: torch.allclose's
    defaults, as gradcheck compares them (the judge's, not sent)."""

    seed: int
    batch: int
    atol: float = 1e-8
    rtol: float = 1e-5

    def to_wire(self) -> dict[str, Any]:
        return {"seed": self.seed, "batch": self.batch}


def plan_batched_grad(args: Sequence[Arg], seed: int) -> BatchedGradPlan | None:
    """The batched-gradient check of a case with these arguments (None: no input requires grad)."""
    if not diff_inputs(args):
        return None
    atol, rtol = _tolerances(args)
    return BatchedGradPlan(seed, batch_size([a.shape for a in args if a.kind == "tensor"]), atol, rtol)


@dataclass(frozen=True, slots=True)
class Case:
    """One set of inputs and what to compute on it.

    A probe's case (forward only) has neither `grad_outputs` nor `grad_output_seed`. A grade's
    completed case knows which outputs are differentiable and sends `grad_outputs`, one set per
    VJP (one flat vector per differentiable output), named by `grad_output_kinds` ("random",
    "ones"). A run's case does not know its outputs: the child finds the differentiable ones and
    draws ones then `random_grad_outputs` random grad_outputs from `grad_output_seed`."""

    id: str
    kind: CaseKind
    name: str
    args: tuple[Arg, ...]
    #: a boundary case's gradient as the exercise's table gives it: input name -> flat values
    expected_grad: Mapping[str, list[float]] | None = None
    diff_outputs: list[int] | None = None
    grad_outputs: list[list[list[float]]] = field(default_factory=list)
    grad_output_kinds: tuple[str, ...] = ()
    grad_output_seed: int | None = None
    random_grad_outputs: int = 0
    gradcheck: JacobianPlan | None = None
    #: ask for torch's own gradcheck (gradgradcheck) message, with the plan's tolerances
    torch_gradcheck: bool = False
    #: backward again with each input alone requiring grad (ctx.needs_input_grad)
    needs_input_grad: bool = False
    gradgrad: GradgradPlan | None = None
    torch_gradgradcheck: bool = False
    #: forward-mode AD (the Function's jvp), checked by forward_ad.check_forward_ad
    forward_ad: ForwardAdPlan | None = None
    #: the in-place check (a Function that changes an input, marked dirty)
    in_place: InPlacePlan | None = None
    #: call the Function on clones of its inputs that require grad (an in-place Function's input
    #: must not be such a leaf); gradients reach the leaves through the clones unchanged
    clone_inputs: bool = False
    #: torch.func.vmap of the Function against one call per batch entry (batching.check_vmap)
    vmap: VmapPlan | None = None
    #: backward for a batch of grad_outputs at once against one at a time (batching.check_batched_grad)
    batched_grad: BatchedGradPlan | None = None
    #: opcheck's facts when the entry point turns out to be a custom op (ignored by a child whose
    #: entry point is a Function)
    custom_op: CustomOpPlan | None = None

    @property
    def probe(self) -> bool:
        """Forward only: the judge learns the outputs before it plans the rest."""
        return self.diff_outputs is None and self.grad_output_seed is None

    def to_wire(self) -> dict[str, Any]:
        """The part of the case the child needs (no names, no expected gradients)."""
        out: dict[str, Any] = {"id": self.id, "args": [a.to_wire() for a in self.args]}
        if self.grad_output_seed is not None:
            out["diff_outputs"] = "auto"
        elif self.diff_outputs is not None:
            out["diff_outputs"] = self.diff_outputs
            out["vjps"] = self.grad_outputs
        if self.gradcheck is not None:
            out["gradcheck"] = self.gradcheck.to_wire()
        if self.needs_input_grad:
            out["needs_input_grad"] = True
        if self.gradgrad is not None:
            out["gradgrad"] = self.gradgrad.to_wire()
        out.update(self._torch_checks_wire())
        if self.grad_output_seed is not None:
            out["vjp_seed"] = self.grad_output_seed
            out["random_vjps"] = self.random_grad_outputs
        # the optional checks' plans, only when asked: the tasks cached before them are unchanged
        plans = (("forward_ad", self.forward_ad), ("in_place", self.in_place), ("vmap", self.vmap),
                 ("batched_grad", self.batched_grad), ("custom_op", self.custom_op))
        for key, plan in plans:
            if plan is not None:
                out[key] = plan.to_wire()
        if self.clone_inputs:
            out["clone_inputs"] = True
        return out

    def _torch_checks_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.torch_gradcheck and self.gradcheck is not None:
            out["torch_gradcheck"] = self.gradcheck.torch_options()
        if self.torch_gradgradcheck and self.gradgrad is not None:
            out["torch_gradgradcheck"] = self.gradgrad.jacobian.torch_options()
        return out


def task_cases(cases: Sequence[Case]) -> list[dict[str, Any]]:
    """The cases of a child's task, as it reads them."""
    return [c.to_wire() for c in cases]
