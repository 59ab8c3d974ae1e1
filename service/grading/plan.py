"""What the judge asks a child to compute: inputs, grad_outputs, finite-difference points.

Torch-free: values are plain Python numbers drawn from `random.Random` generators seeded with the
judge's secret, the exercise (its slug and [code] table) and, when a grade names one, the learner's
variant (service/variants.py, `variant_key`): every attempt of one learner at one version sees the
same cases (a regrade too), two learners see different ones, and nobody without the secret can
predict any. Without a variant the seeds, and so the cases, are what they always were.

A plan is built in two steps. `base_cases` draws the inputs. The reference is then run on them
once in "probe" mode (forward only) to learn its outputs, and `complete_cases` adds what depends on
the outputs: which outputs are differentiable, the grad_outputs, the finite-difference points.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import random
from collections.abc import Callable, Collection, Sequence
from typing import Any

from .cases import (
    Arg,
    Case,
    CustomOpPlan,
    ForwardAdPlan,
    GradgradPlan,
    InPlacePlan,
    JacobianPlan,
    ProjectionPlan,
    all_points,
    diff_inputs,
    plan_batched_grad,
    plan_vmap,
    to_float32,
)
from .checks import MAX_PROJECTED_ELEMENTS, PROJECTIONS
from .code_table import CodeSpec, InputSpec, Tolerances
from .draws import numel
from .forward_ad import FORWARD_AD_TANGENTS
from .reports import Output, Report
from .spec import DEFAULT_AVOID_MARGIN, FLOAT_DTYPES, INT_BOUNDS, MAX_JACOBIAN_SIDE


def seeded(secret: bytes, purpose: str, *parts: str) -> random.Random:
    msg = "\0".join(("gradquiz-v1", purpose, *parts)).encode("utf-8")
    digest = hmac.new(secret, msg, hashlib.sha256).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def variant_parts(variant: str | None) -> tuple[str, ...]:
    """What a learner's variant adds to every seed's material (nothing without one). The seed is an
    HMAC under the judge's secret, so knowing a variant's name does not tell its inputs."""
    return () if variant is None else ("variant", variant)


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def _draw_float(rng: random.Random, inp: InputSpec, between: tuple[float, float] | None = None) -> float:
    """A value of the input's range (or of `between`, an interval inside it) away from its
    avoided points."""
    assert inp.range is not None
    lo, hi = between or inp.range
    avoid, margin = inp.avoid or (), inp.avoid_margin or DEFAULT_AVOID_MARGIN
    for _ in range(1000):
        v = rng.uniform(lo, hi)
        if all(abs(v - a) >= margin for a in avoid):
            return v
    raise ValueError("could not draw a value away from the avoided points")


def _cover(values: list[float], rng: random.Random, inp: InputSpec) -> None:
    """Make each interval of `inp.cover` hold a value of its own: one already drawn inside it, or,
    when none is, a value drawn inside it in place of one no earlier interval holds. Eight values
    of [-2, 2] all miss [-1, 1] once in 256 draws, and a backward wrong only there would then pass
    every gradient check of that case."""
    free = list(range(len(values)))
    for interval in inp.cover or ():
        inside = [k for k in free if interval[0] <= values[k] <= interval[1]]
        if inside:
            free.remove(inside[0])
        else:
            k = free.pop(rng.randrange(len(free)))
            values[k] = _draw_float(rng, inp, interval)


def make_arg(inp: InputSpec, rng: random.Random) -> Arg:  # noqa: C901
    """One argument drawn for an input spec (a fixed value is taken as written)."""
    t = inp.type
    if t == "none":
        return Arg("none")
    if t == "tensor":
        dtype, shape = inp.dtype or "float64", list(inp.shape or ())
        if inp.has_value:
            values = list(inp.value)
        elif dtype in FLOAT_DTYPES:
            values = [_draw_float(rng, inp) for _ in range(numel(shape))]
            _cover(values, rng, inp)
        elif dtype in INT_BOUNDS:  # int64, int32
            lo, hi = inp.range or (0, 9)
            values = [rng.randint(int(lo), int(hi)) for _ in range(numel(shape))]
        else:
            values = [rng.random() < 0.5 for _ in range(numel(shape))]
        if dtype == "float32":
            values = [to_float32(float(v)) for v in values]
        elif dtype == "float64":
            values = [float(v) for v in values]
        elif dtype == "bool":
            values = [bool(v) for v in values]
        return Arg("tensor", dtype=dtype, shape=shape, values=values, requires_grad=bool(inp.requires_grad))
    if t == "ints":
        return Arg(t, value=list(inp.value), container=inp.container or "tuple")
    if inp.has_value:
        return Arg(t, value=inp.value)
    if t == "float":
        return Arg(t, value=_draw_float(rng, inp))
    if t == "int":
        lo, hi = inp.range or (0, 9)
        return Arg(t, value=rng.randint(int(lo), int(hi)))
    return Arg(t, value=rng.random() < 0.5)


def _draw_args(inputs: Sequence[InputSpec], rng: random.Random) -> tuple[Arg, ...]:
    return tuple(make_arg(inp, rng) for inp in inputs)


def _as_float32(a: Arg) -> Arg:
    if a.kind == "tensor" and a.dtype == "float64":
        return dataclasses.replace(a, dtype="float32", values=[to_float32(v) for v in a.values])
    return a


def base_cases(code: CodeSpec, secret: bytes, slug: str, variant: str | None = None) -> list[Case]:
    """The cases of a grade (inputs only): random, variants, boundary, float32; the random ones
    drawn for the learner's `variant` (None: the exercise's shared cases)."""
    rng = seeded(secret, "inputs", slug, canonical(code.as_dict()), *variant_parts(variant))
    cases = [Case(f"random-{k + 1}", "random", f"random inputs {k + 1}", _draw_args(code.inputs, rng))
             for k in range(code.random_cases)]
    cases += [Case(f"variant-{j + 1}", "variant", var.name, _draw_args(var.inputs, rng))
              for j, var in enumerate(code.variants)]
    cases += [Case(f"boundary-{j + 1}", "boundary", bnd.name, _draw_args(bnd.inputs, rng),
                   expected_grad={k: list(v) for k, v in bnd.expected_grad.items()} if bnd.expected_grad else None)
              for j, bnd in enumerate(code.boundary)]
    if code.float32_case:
        cases.append(Case("float32", "float32", "float32 inputs", tuple(_as_float32(a) for a in cases[0].args)))
    if code.in_place:  # an in-place Function's input must not be a leaf that requires grad
        cases = [dataclasses.replace(c, clone_inputs=True) for c in cases]
    return cases


def run_cases(inputs: list[InputSpec], source: str) -> list[Case]:
    """The single case of a "Try it yourself" run (repeatable: seeded with the source)."""
    rng = seeded(b"gradquiz-run", "inputs", hashlib.sha256(source.encode()).hexdigest(),
                 canonical([inp.as_dict() for inp in inputs]))
    return [Case("run", "run", "your inputs", _draw_args(inputs, rng))]


def _random_vector(rng: random.Random, n: int, dtype: str) -> list[float]:
    # magnitudes in [0.25, 2] with random signs: far from "all ones" and from zero. Not draws._signed:
    # another sign draw (rng.random()) from the grade's shared rng, judge-only, rounded for float32.
    out = [rng.uniform(0.25, 2.0) * (1 if rng.random() < 0.5 else -1) for _ in range(n)]
    return [to_float32(v) for v in out] if dtype == "float32" else out


def complete_cases(code: CodeSpec, cases: list[Case], probe: Report, secret: bytes, slug: str, *,
                   fd_case_ids: tuple[str, ...] = ("random-1",), variant: str | None = None) -> list[Case]:
    """Add grad_outputs, finite-difference points and torch check options, from the probe's outputs
    (grad_outputs drawn for the learner's `variant`, as base_cases draws the inputs)."""
    rng = seeded(secret, "grad_outputs", slug, canonical(code.as_dict()), *variant_parts(variant))
    by_id = {c.id: c for c in probe.cases}
    return [_complete(code, case, by_id[case.id].forward.outputs, rng, secret, slug, case.id in fd_case_ids,
                      variant) for case in cases]


def optional_check_plans(args: Sequence[Arg], wanted: Collection[str], seed: Callable[[str], int], tol: Tolerances, *,
                         differentiable: bool) -> dict[str, Any]:
    """The Case fields of the optional checks `wanted` asks for ("forward_ad", "in_place", "vmap"),
    each drawn from `seed(purpose)`, a seed of its own; a grade's and a run's alike. The gradient
    ones only for a `differentiable` Function."""
    plans: dict[str, Any] = {}
    if "forward_ad" in wanted and differentiable:
        plans["forward_ad"] = ForwardAdPlan(seed("forward_ad"), FORWARD_AD_TANGENTS, tol.eps, tol.gradcheck_atol,
                                            tol.gradcheck_rtol, MAX_PROJECTED_ELEMENTS)
    if "in_place" in wanted and differentiable:
        plans["in_place"] = InPlacePlan(seed("in_place"), tol.eps, tol.gradcheck_atol, tol.gradcheck_rtol, MAX_JACOBIAN_SIDE,
                                        ProjectionPlan(seed("in_place projections"), PROJECTIONS, MAX_PROJECTED_ELEMENTS))
    if "vmap" in wanted:
        plans["vmap"] = plan_vmap(args, seed("vmap"))
        if differentiable:
            plans["batched_grad"] = plan_batched_grad(args, seed("batched grad"))
    return plans


def _optional_checks(code: CodeSpec, case: Case, secret: bytes, slug: str, variant: str | None) -> Case:
    """The plans of the optional checks the exercise asks for (but gradgradcheck, planned with the
    shared rng's draws), each from a seed of its own: the shared rng's draws stay what they were."""

    def seed(purpose: str) -> int:
        return seeded(secret, purpose, slug, case.id, *variant_parts(variant)).getrandbits(62)

    plans = optional_check_plans(case.args, code.options, seed, code.tolerances, differentiable=code.differentiable)
    if code.custom_op:
        plans["custom_op"] = CustomOpPlan()
    return dataclasses.replace(case, **plans)


def _complete(code: CodeSpec, case: Case, outs: Sequence[Output], rng: random.Random, secret: bytes, slug: str,
              fd: bool, variant: str | None) -> Case:
    """One case completed; the draws from `rng` in the order they have always been made."""
    diff_out = [k for k, o in enumerate(outs) if o.kind == "tensor" and o.requires_grad]
    diff_in = diff_inputs(case.args)
    sel = [outs[k] for k in diff_out]

    def rand_v() -> list[list[float]]:
        return [_random_vector(rng, numel(o.shape), o.dtype) for o in sel]

    kinds: tuple[str, ...] = ()
    if diff_out and diff_in and case.kind != "float32":
        if case.kind == "boundary":
            kinds = ("ones",)  # as after y.sum().backward(): the gradient the exercise defines
        elif fd:
            kinds = ("random", "ones")
        else:
            kinds = ("random",)
    grad_outputs = [rand_v() if kind == "random" else [[1.0] * numel(o.shape) for o in sel] for kind in kinds]
    done = dataclasses.replace(case, diff_outputs=diff_out, grad_outputs=grad_outputs, grad_output_kinds=kinds)
    if fd:  # (whatever the outputs: vmap and a custom op's tests apply to a Function that is not differentiable too)
        done = _optional_checks(code, done, secret, slug, variant)
    if not (fd and diff_out and diff_in and code.differentiable):
        return done
    tol = code.tolerances
    # every column of the Jacobian (the table has at most MAX_JACOBIAN_SIDE: spec.load_code_spec)
    gradcheck = JacobianPlan(tol.eps, tol.gradcheck_atol, tol.gradcheck_rtol, points=all_points(case.args))
    done = dataclasses.replace(done, gradcheck=gradcheck, torch_gradcheck=True)
    if not code.gradgradcheck:
        return done
    # torch.autograd.gradgradcheck: gradcheck of (inputs, grad_outputs v) -> backward's gradients,
    # its points every input element then every element of v (random projections when large)
    v = rand_v()
    w = [_random_vector(rng, case.args[i].numel, case.args[i].dtype) for i in diff_in]
    gg_points = all_points(case.args) + [[len(case.args) + k, j] for k, vk in enumerate(v) for j in range(len(vk))]
    if len(gg_points) <= MAX_JACOBIAN_SIDE:
        jacobian = JacobianPlan(tol.eps, tol.gradcheck_atol, tol.gradcheck_rtol, points=gg_points)
    else:
        seed = seeded(secret, "projections", slug, case.id, *variant_parts(variant)).getrandbits(62)
        jacobian = JacobianPlan(tol.eps, tol.gradcheck_atol, tol.gradcheck_rtol,
                                projections=ProjectionPlan(seed, PROJECTIONS, MAX_PROJECTED_ELEMENTS))
    return dataclasses.replace(done, gradgrad=GradgradPlan(jacobian, w, v=v), torch_gradgradcheck=True)
