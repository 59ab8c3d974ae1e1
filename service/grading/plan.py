"""What the judge asks a child to compute: inputs, grad_outputs, finite-difference points.

Torch-free: values are plain Python numbers drawn from `random.Random` generators seeded with the
judge's secret and attempt-independent data (the exercise's slug and [code] table), so every
attempt at one version sees the same cases and nobody without the secret can predict them.

A plan is built in two steps. `base_cases` draws the inputs. The reference is then run on them
once in "probe" mode (forward only) to learn its outputs, and `complete_cases` adds what depends on
the outputs: which outputs are differentiable, the grad_outputs, the finite-difference points.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import struct
from typing import Any

from .checks import MAX_PROJECTED_ELEMENTS, PROJECTIONS
from .spec import FLOAT_DTYPES, INT_BOUNDS, MAX_JACOBIAN_SIDE, CodeSpec, InputSpec, flatten, numel


def seeded(secret: bytes, purpose: str, *parts: str) -> random.Random:
    msg = "\0".join(("gradquiz-v1", purpose, *parts)).encode("utf-8")
    digest = hmac.new(secret, msg, hashlib.sha256).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def to_float32(x: float) -> float:
    rounded: float = struct.unpack("f", struct.pack("f", x))[0]
    return rounded


def _draw_float(rng: random.Random, inp: InputSpec) -> float:
    assert inp.range is not None
    lo, hi = inp.range
    avoid, margin = inp.avoid or (), inp.avoid_margin or 0.01
    for _ in range(1000):
        v = rng.uniform(lo, hi)
        if all(abs(v - a) >= margin for a in avoid):
            return v
    raise ValueError("could not draw a value away from the avoided points")


def make_arg(inp: InputSpec, rng: random.Random) -> dict[str, Any]:  # noqa: C901
    """One argument as the child builds it (the wire form: {"t": ..., ...})."""
    t = inp.type
    if t == "none":
        return {"t": "none"}
    if t == "tensor":
        dtype, shape = inp.dtype or "float64", list(inp.shape or ())
        if inp.has_value:
            values = list(inp.value)
        elif dtype in FLOAT_DTYPES:
            values = [_draw_float(rng, inp) for _ in range(numel(shape))]
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
        return {"t": "tensor", "dtype": dtype, "shape": list(shape), "values": values, "rg": bool(inp.requires_grad)}
    if t == "ints":
        return {"t": t, "v": list(inp.value), "container": inp.container or "tuple"}
    if inp.has_value:
        return {"t": t, "v": inp.value}
    if t == "float":
        return {"t": t, "v": _draw_float(rng, inp)}
    if t == "int":
        lo, hi = inp.range or (0, 9)
        return {"t": t, "v": rng.randint(int(lo), int(hi))}
    return {"t": t, "v": rng.random() < 0.5}


def base_cases(code: CodeSpec, secret: bytes, slug: str) -> list[dict[str, Any]]:
    """The cases of a grade (inputs only): random, variants, boundary, float32."""
    rng = seeded(secret, "inputs", slug, canonical(code.as_dict()))
    cases: list[dict[str, Any]] = []
    for k in range(code.random_cases):
        cases.append({"id": f"random-{k + 1}", "kind": "random", "name": f"random inputs {k + 1}",
                      "args": [make_arg(inp, rng) for inp in code.inputs]})
    for j, var in enumerate(code.variants):
        cases.append({"id": f"variant-{j + 1}", "kind": "variant", "name": var.name,
                      "args": [make_arg(inp, rng) for inp in var.inputs]})
    for j, bnd in enumerate(code.boundary):
        case: dict[str, Any] = {"id": f"boundary-{j + 1}", "kind": "boundary", "name": bnd.name,
                "args": [make_arg(inp, rng) for inp in bnd.inputs]}
        if bnd.expected_grad:
            case["expected_grad"] = {k: list(v) for k, v in bnd.expected_grad.items()}
        cases.append(case)
    if code.float32_case:
        args = []
        for a in cases[0]["args"]:
            a = dict(a)
            if a["t"] == "tensor" and a["dtype"] == "float64":
                a["dtype"] = "float32"
                a["values"] = [to_float32(v) for v in a["values"]]
            args.append(a)
        cases.append({"id": "float32", "kind": "float32", "name": "float32 inputs", "args": args})
    return cases


def run_cases(inputs: list[InputSpec], source: str) -> list[dict[str, Any]]:
    """The single case of a "Try it yourself" run (repeatable: seeded with the source)."""
    rng = seeded(b"gradquiz-run", "inputs", hashlib.sha256(source.encode()).hexdigest(),
                 canonical([inp.as_dict() for inp in inputs]))
    return [{"id": "run", "kind": "run", "name": "your inputs", "args": [make_arg(inp, rng) for inp in inputs]}]


def _random_vector(rng: random.Random, n: int, dtype: str) -> list[float]:
    # magnitudes in [0.25, 2] with random signs: far from "all ones" and from zero
    out = [rng.uniform(0.25, 2.0) * (1 if rng.random() < 0.5 else -1) for _ in range(n)]
    return [to_float32(v) for v in out] if dtype == "float32" else out


def diff_arg_positions(case: dict[str, Any]) -> list[int]:
    return [i for i, a in enumerate(case["args"]) if a["t"] == "tensor" and a.get("rg")]


def complete_cases(  # noqa: C901
    code: CodeSpec, cases: list[dict[str, Any]], probe: dict[str, Any], secret: bytes, slug: str, *, fd_case_ids: tuple[str, ...] = ("random-1",)
) -> list[dict[str, Any]]:
    """Add grad_outputs, finite-difference points and torch check options, from the probe's outputs."""
    rng = seeded(secret, "grad_outputs", slug, canonical(code.as_dict()))
    tol = code.tolerances
    by_id = {c["id"]: c for c in probe["cases"]}
    full = []
    for case in cases:
        case = dict(case)
        outs = by_id[case["id"]]["forward"]["outputs"]
        diff_out = [k for k, o in enumerate(outs) if o["kind"] == "tensor" and o["rg"]]
        case["diff_outputs"] = diff_out
        case["out_shapes"] = [outs[k]["shape"] for k in diff_out]
        diff_in = diff_arg_positions(case)

        sel = [outs[k] for k in diff_out]

        def rand_v(sel: list[dict[str, Any]] = sel) -> list[list[float]]:
            return [_random_vector(rng, numel(o["shape"]), o["dtype"]) for o in sel]

        def ones(sel: list[dict[str, Any]] = sel) -> list[list[float]]:
            return [[1.0] * numel(o["shape"]) for o in sel]

        if not diff_out or not diff_in:
            case["vjps"] = []
        elif case["kind"] == "float32":
            case["vjps"] = []
        elif case["kind"] == "boundary":
            case["vjps"] = [ones()]  # as after y.sum().backward(): the gradient the exercise defines
            case["vjp_kinds"] = ["ones"]
        elif case["id"] in fd_case_ids:
            case["vjps"] = [rand_v(), ones()]
            case["vjp_kinds"] = ["random", "ones"]
        else:
            case["vjps"] = [rand_v()]
            case["vjp_kinds"] = ["random"]
        case.setdefault("vjp_kinds", [])
        wants_fd = case["id"] in fd_case_ids and diff_out and diff_in and (code.differentiable or case["kind"] == "run")
        if wants_fd:
            # every column of the Jacobian (the table has at most MAX_JACOBIAN_SIDE: spec.load_code_spec)
            points = [[i, j] for i in diff_in for j in range(numel(case["args"][i]["shape"]))]
            case["gradcheck"] = {"eps": tol.eps, "atol": tol.gradcheck_atol, "rtol": tol.gradcheck_rtol,
                                 "points": points}
            case["torch_gradcheck"] = {"eps": tol.eps, "atol": tol.gradcheck_atol, "rtol": tol.gradcheck_rtol}
            if code.gradgradcheck:
                # torch.autograd.gradgradcheck: gradcheck of (inputs, grad_outputs v) -> backward's gradients,
                # its points every input element then every element of v (random projections when large)
                v = rand_v()
                w = [_random_vector(rng, numel(case["args"][i]["shape"]), case["args"][i]["dtype"]) for i in diff_in]
                gg_points = [[i, j] for i in diff_in for j in range(numel(case["args"][i]["shape"]))]
                gg_points += [[len(case["args"]) + k, j] for k, vk in enumerate(v) for j in range(len(vk))]
                case["gradgrad"] = {"eps": tol.eps, "atol": tol.gradcheck_atol, "rtol": tol.gradcheck_rtol, "v": v, "w": w}
                if len(gg_points) <= MAX_JACOBIAN_SIDE:
                    case["gradgrad"]["points"] = gg_points
                else:
                    seed = seeded(secret, "projections", slug, case["id"]).getrandbits(62)
                    case["gradgrad"]["projections"] = {"seed": seed, "k": PROJECTIONS, "max_elements": MAX_PROJECTED_ELEMENTS}
                case["torch_gradgradcheck"] = case["torch_gradcheck"]
        full.append(case)
    return full


def task_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The part of each case the child needs (no names, no expected gradients)."""
    keep = ("id", "args", "diff_outputs", "vjps", "gradcheck", "needs_input_grad", "gradgrad", "torch_gradcheck",
            "torch_gradgradcheck", "vjp_seed", "random_vjps")
    return [{k: c[k] for k in keep if k in c} for c in cases]


def flat_values(value: Any) -> list[Any]:
    return flatten(value)
