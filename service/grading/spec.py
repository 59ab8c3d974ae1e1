"""The `[code]` table of a code exercise: format, validation, and the learner's view of it.

Imported by the web process: stdlib only (no torch, no numpy, no Flask), nothing executed.

Files of a code exercise
========================
``exercise.toml`` (common fields, ``kind = "code"``, and the ``[code]`` table below),
``reference.py`` (the trusted solution: never served, run only in a trusted process),
``starter.py`` (served as the editor's starting point), and ``wrong/*.py`` (known mistakes, graded
by the tests). Each wrong file starts with a header line naming the cause the grader must report::

    # expect: forgot_grad_output

(one cause code from ``LIKELY_CAUSES``; an optional second header ``# fails: gradient, gradcheck``
lists checks that must fail).

The ``[code]`` table
====================
::

    [code]
    entry_point = "ClampFn"              # required: the class the learner defines
    call = "ClampFn.apply(x, -1.0, 1.0)" # optional: shown to the learner (default: built from inputs)
    random_cases = 3                     # random input sets, 1-8 (default 3); the first is also
                                         # the gradcheck case
    differentiable = true                # false: backward is deliberately NOT the derivative
                                         # (straight-through estimator, gradient reversal); the
                                         # gradcheck check is dropped and backward is graded
                                         # against the reference rule alone
    gradgradcheck = false                # true: also check double backward
    technique = ["saves_output"]         # optional: techniques the exercise teaches, checked on
                                         # the source by the judge (TECHNIQUES in technique.py:
                                         # setup_context, saves_output, mark_non_differentiable)
    strict_none = false                  # true: backward must return None exactly where the
                                         # reference does (ctx.needs_input_grad exercises)
    float32_case = true                  # default: true when an input is a float64 tensor; adds a
                                         # forward on float32 copies that must keep the dtype
    timeout = 10.0                       # wall-clock seconds for one grade (0.5-30)
    memory_mb = 1024                     # memory a submission may allocate, MiB (64-4096)
                                         # (both capped by the worker's GRADING_* settings)
    weights = { gradcheck = 0.3 }        # optional: override a check's weight, 0 drops it

    [code.tolerances]                    # all optional; defaults in DEFAULT_TOLERANCES
    forward_rtol = 1e-6                  # forward values vs the reference (float64)
    forward_atol = 1e-8
    grad_rtol = 1e-6                     # vector-Jacobian products vs the reference
    grad_atol = 1e-8
    float32_rtol = 1e-4                  # the float32 forward case
    float32_atol = 1e-5
    eps = 1e-6                           # finite-difference step
    gradcheck_atol = 1e-5                # numerical vs analytical (as torch.autograd.gradcheck)
    gradcheck_rtol = 1e-3

    [[code.inputs]]                      # one per forward argument, in call order
    name = "x"                           # a Python identifier, unique
    type = "tensor"                      # tensor | float | int | bool | none | ints
    description = "the values to clamp"  # shown to the learner
    shape = [4]                          # tensor: list of positive ints (0-4 dims, <= 1024 elements)
    dtype = "float64"                    # tensor: float64 | float32 | int64 | int32 | bool (default float64)
    range = [-2.0, 2.0]                  # random values drawn uniformly from [low, high]
    avoid = [-1.0, 1.0]                  # kinks: random values keep avoid_margin away from them
    avoid_margin = 0.05                  # default 0.01 (must exceed eps by far)
    requires_grad = true                 # tensor: default true for float dtypes
    # value = [...]                      # instead of range: fixed values (nested list; sets shape)

    [[code.inputs]]
    name = "low"
    type = "float"
    value = -1.0                         # scalars: a fixed value, or range = [a, b] for a random one

    [[code.inputs]]
    name = "size"
    type = "ints"                        # a tuple/list of ints or a torch.Size (a shape argument)
    value = [2, 3]                       # required: at most 8 integers (no range)
    container = "size"                   # tuple | list | size (default tuple)

    [[code.variants]]                    # optional: an extra random case with some inputs changed
    name = "without bias"
    set = { bias = { type = "none" } }   # per input, any of the input fields above

    [[code.boundary]]                    # optional: points where the exercise defines the gradient
    name = "at the bounds"               # (kinks: finite differences are meaningless there)
    set = { x = { value = [-1.0, 1.0, 0.0, 2.0] } }
    expected_grad = { x = [1.0, 1.0, 1.0, 0.0] }   # optional, with grad_output = ones; the tests
                                                   # check that the reference agrees

Inputs are drawn by the judge from a generator seeded with its secret and the exercise (slug and
``[code]`` table), so they are the same for every attempt at one version (a regrade sees what the
attempt saw) and cannot be predicted from the public files. grad_outputs are drawn the same way.

Checks
======
``CHECKS`` lists them with default weights; a check that does not apply (no boundary points, no
gradgradcheck, not differentiable) is dropped, and the weights are normalised to sum to 1.
``parses`` and ``entry_point`` weigh nothing: they gate the rest.

Input specs for "Try it yourself" (``Judge.run``)
=================================================
A list with one entry per forward argument, each a dict with the same fields as a
``[[code.inputs]]`` entry (``name`` optional). Random values (``range``) are drawn from a generator
seeded with the code, so a run is repeatable. ``validate_run_inputs`` checks such a list.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from typing import Any, Mapping

from .technique import TECHNIQUES, missing_techniques

Problem = tuple[str, str]

#: name -> (default weight, what it checks; shown to learners)
CHECKS: dict[str, tuple[float, str]] = {
    "parses": (0.0, "The code parses as Python."),
    "entry_point": (0.0, "The entry point exists and subclasses torch.autograd.Function."),
    "forward": (0.20, "forward matches the reference on generated inputs."),
    "output_shape_dtype": (0.05, "The outputs have the reference's shape, dtype and differentiability."),
    "inputs_unchanged": (0.05, "forward leaves its inputs unchanged."),
    "backward_arity": (0.10, "backward returns one value per forward input, None for each input that takes no gradient, each gradient shaped like its input."),
    "gradcheck": (0.20, "backward agrees with finite differences of forward in float64 (gradcheck)."),
    "gradient": (0.20, "backward's vector-Jacobian products match the reference for random grad_outputs."),
    "boundary": (0.10, "The gradient at the exercise's boundary points matches the reference."),
    "gradgradcheck": (0.15, "Double backward agrees with finite differences (gradgradcheck)."),
    "grad_output_unchanged": (0.05, "backward leaves grad_output unchanged."),
    "technique": (0.10, "The code uses the technique the exercise teaches."),
}
#: Checks that judge gradients: a submission that fakes its results must earn nothing here.
GRADIENT_CHECKS = ("gradcheck", "gradient", "boundary", "gradgradcheck")

#: Named likely causes (code -> advice shown to the learner).
LIKELY_CAUSES: dict[str, str] = {
    "forgot_grad_output": "backward ignores grad_output: multiply your local derivative by grad_output (the chain rule).",
    "wrong_sign": "The gradient has the wrong sign.",
    "constant_factor": "The gradient is off by a constant factor.",
    "gradient_for_non_tensor": "backward returned a gradient for an input that is not a tensor (such as a bound): return None in that slot.",
    "wrong_number_of_returns": "backward must return exactly one value per forward input, in order (None for those that take no gradient).",
    "boundary_only": "The gradient is right except at the boundary points: check whether your mask uses >= or > (and <= or <).",
    "float32_imprecise": "The computation runs in float32, which is too imprecise for a numerical check: keep the input's dtype (float64) throughout.",
    "not_reduced": "A gradient has the broadcast shape instead of its input's shape: sum it over the broadcast dimensions (e.g. with .sum(dim, keepdim=True) or sum_to_size).",
    "needs_input_grad": "Return None for inputs that need no gradient (check ctx.needs_input_grad).",
    "grad_output_modified": "backward changes grad_output in place: compute a new tensor instead (e.g. grad_output * mask, not grad_output[...] = 0).",
    "input_modified": "forward changes its input in place: compute a new tensor instead (e.g. x.clamp(...), not x.clamp_(...)).",
    "forward_wrong": "forward does not compute what the exercise asks; fix forward first, gradients are checked against it.",
    "output_detached": "The output is not connected to autograd: return the result of Function.apply's forward directly, without .detach(), .item(), .numpy() or .data.",
    "backward_error": "backward raised an exception.",
    "not_reentrant": "backward gives a different answer when called twice with the same grad_output (random noise, or state kept between calls): make it a pure function of what forward saved and grad_output.",
    "forward_error": "forward raised an exception.",
    "backward_not_differentiable": "backward is not itself differentiable: compute it with torch operations on saved tensors (no .detach(), no torch.no_grad(), no .item()), so autograd can differentiate it again.",
    "wrong_value": "backward computes a different derivative than the one asked for.",
    "grad_output_not_used_per_output": "backward must accept one grad_output per forward output (e.g. backward(ctx, grad_values, grad_indices)).",
    "not_marked_non_differentiable": "An output that carries no gradient (such as indices) should be marked with ctx.mark_non_differentiable(...).",
    "setup_context_missing": "Use torch 2's style: forward(x, ...) takes no ctx, and a static setup_context(ctx, inputs, output) saves what backward needs.",
    "output_not_saved": "Save forward's output with ctx.save_for_backward(...) and reuse it in backward, instead of saving the input and recomputing.",
    "wrong_dtype": "An output has a different dtype than the reference: keep the input's dtype.",
    "wrong_shape": "An output has a different shape than the reference.",
    "entry_point_missing": "The class named by the exercise is missing, misspelled, or does not subclass torch.autograd.Function.",
    "load_error": "The code raised an exception while it was being loaded.",
}

DEFAULT_TOLERANCES: dict[str, float] = {
    "forward_rtol": 1e-6,
    "forward_atol": 1e-8,
    "grad_rtol": 1e-6,
    "grad_atol": 1e-8,
    "float32_rtol": 1e-4,
    "float32_atol": 1e-5,
    "eps": 1e-6,
    "gradcheck_atol": 1e-5,
    "gradcheck_rtol": 1e-3,
}

INPUT_TYPES = ("tensor", "float", "int", "bool", "none", "ints")
TENSOR_DTYPES = ("float64", "float32", "int64", "int32", "bool")
FLOAT_DTYPES = ("float64", "float32")
#: Integer dtypes and the values they hold.
INT_BOUNDS = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}
#: "ints": how the list of ints is passed to forward, and its length.
INTS_CONTAINERS = ("tuple", "list", "size")
MAX_INTS = 8
MAX_ELEMENTS = 1024
MAX_DIMS = 4
MAX_CODE_BYTES = 64 * 1024
TIMEOUT_RANGE = (0.5, 30.0)
DEFAULT_TIMEOUT = 10.0
MEMORY_RANGE_MB = (64, 4096)
DEFAULT_MEMORY_MB = 1024

_CODE_KEYS = {
    "entry_point", "call", "random_cases", "differentiable", "gradgradcheck", "strict_none",
    "float32_case", "timeout", "memory_mb", "weights", "tolerances", "inputs", "variants", "boundary", "technique",
}
_INPUT_KEYS = {"name", "type", "description", "shape", "dtype", "range", "avoid", "avoid_margin", "requires_grad", "value",
               "container"}
_CASE_KEYS = {"name", "set", "expected_grad"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EXPECT = re.compile(r"^#\s*expect:\s*([a-z0-9_]+)\s*$")
_FAILS = re.compile(r"^#\s*fails:\s*([a-z0-9_,\s]+)$")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def nested_shape(value: Any) -> list[int] | None:
    """Shape of a (rectangular) nested list of numbers; None if ragged or not numbers."""
    if isinstance(value, list):
        if not value:
            return [0]
        shapes = [nested_shape(v) for v in value]
        if any(s is None for s in shapes) or any(s != shapes[0] for s in shapes):
            return None
        return [len(value)] + shapes[0]
    if isinstance(value, (int, float)) and (isinstance(value, bool) or math.isfinite(value)):
        return []
    return None


def flatten(value: Any) -> list:
    if isinstance(value, list):
        out: list = []
        for v in value:
            out.extend(flatten(v))
        return out
    return [value]


def numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --------------------------------------------------------------------------- inputs


def normalize_input(raw: Mapping[str, Any], where: str, problems: list[Problem], *, need_name: bool = True) -> dict:
    """Check one input entry; return it with defaults filled (partial if there are problems)."""
    if not isinstance(raw, Mapping):
        problems.append((where, "must be a table"))
        return {}
    extra = set(raw) - _INPUT_KEYS
    if extra:
        problems.append((where, f"unknown keys: {', '.join(sorted(extra))}"))
    out: dict[str, Any] = {}
    name = raw.get("name")
    if need_name or name is not None:
        if not isinstance(name, str) or not _IDENT.match(name) or keyword.iskeyword(name):
            problems.append((f"{where}.name", "must be a Python identifier"))
        out["name"] = name
    typ = raw.get("type", "tensor")
    if typ not in INPUT_TYPES:
        problems.append((f"{where}.type", f"must be one of {', '.join(INPUT_TYPES)}"))
        return out
    out["type"] = typ
    desc = raw.get("description", "")
    if not isinstance(desc, str):
        problems.append((f"{where}.description", "must be a string"))
    out["description"] = desc if isinstance(desc, str) else ""
    if typ == "none":
        return out
    if "container" in raw and typ != "ints":
        problems.append((f"{where}.container", "applies to ints only"))
    if typ == "ints":
        return _normalize_ints(raw, where, problems, out)
    if typ == "tensor":
        dtype = raw.get("dtype", "float64")
        if dtype not in TENSOR_DTYPES:
            problems.append((f"{where}.dtype", f"must be one of {', '.join(TENSOR_DTYPES)}"))
            dtype = "float64"
        out["dtype"] = dtype
        shape = raw.get("shape")
        if "value" in raw:
            vshape = nested_shape(raw["value"])
            if vshape is None:
                problems.append((f"{where}.value", "must be a number or a rectangular nested list of finite numbers"))
                return out
            if shape is not None and (not isinstance(shape, list) or shape != vshape):
                problems.append((f"{where}.shape", f"does not match the value's shape {vshape}"))
            shape = vshape
            out["value"] = [float(v) if dtype in FLOAT_DTYPES else v for v in flatten(raw["value"])]
            if dtype in INT_BOUNDS and not all(_is_int(v) for v in out["value"]):
                problems.append((f"{where}.value", f"an {dtype} tensor takes integers"))
            elif dtype in INT_BOUNDS and not all(_int_fits(v, dtype) for v in out["value"]):
                problems.append((f"{where}.value", f"outside the values of {dtype}"))
            if dtype == "bool" and not all(isinstance(v, bool) or v in (0, 1) for v in out["value"]):
                problems.append((f"{where}.value", "a bool tensor takes true/false"))
        if not isinstance(shape, list) or not all(_is_int(d) and d > 0 for d in shape) or len(shape) > MAX_DIMS:
            problems.append((f"{where}.shape", f"must be a list of positive integers (at most {MAX_DIMS})"))
            return out
        if numel(shape) > MAX_ELEMENTS:
            problems.append((f"{where}.shape", f"at most {MAX_ELEMENTS} elements"))
        out["shape"] = list(shape)
        rg = raw.get("requires_grad", dtype in FLOAT_DTYPES)
        if not isinstance(rg, bool):
            problems.append((f"{where}.requires_grad", "must be true or false"))
            rg = False
        if rg and dtype not in FLOAT_DTYPES:
            problems.append((f"{where}.requires_grad", "only float tensors can require grad"))
        out["requires_grad"] = rg
    elif "shape" in raw or "dtype" in raw or "requires_grad" in raw:
        problems.append((where, "shape, dtype and requires_grad apply to tensors only"))
    if "value" in raw:
        if typ != "tensor":
            v = raw["value"]
            ok = {"float": _is_number(v), "int": _is_int(v), "bool": isinstance(v, bool)}[typ]
            if not ok:
                problems.append((f"{where}.value", f"must be a {typ}"))
            out["value"] = float(v) if typ == "float" and ok else v
        if "range" in raw:
            problems.append((where, "give either value or range, not both"))
        return out
    if typ == "bool":
        out["range"] = [0, 1]
        return out
    rng = raw.get("range", [-1.0, 1.0] if typ != "int" else [0, 9])
    if not (isinstance(rng, list) and len(rng) == 2 and all(_is_number(v) for v in rng) and rng[0] < rng[1]):
        problems.append((f"{where}.range", "must be [low, high] with low < high"))
        return out
    int_like = typ == "int" or out.get("dtype") in INT_BOUNDS
    if int_like and not all(_is_int(v) for v in rng):
        problems.append((f"{where}.range", "integer inputs take an integer range"))
    elif out.get("dtype") in INT_BOUNDS and not all(_int_fits(v, out["dtype"]) for v in rng):
        problems.append((f"{where}.range", f"outside the values of {out['dtype']}"))
    out["range"] = [int(rng[0]), int(rng[1])] if int_like else [float(rng[0]), float(rng[1])]
    avoid = raw.get("avoid", [])
    if not isinstance(avoid, list) or not all(_is_number(v) for v in avoid):
        problems.append((f"{where}.avoid", "must be a list of numbers"))
        avoid = []
    margin = raw.get("avoid_margin", 0.01)
    if not _is_number(margin) or margin <= 0:
        problems.append((f"{where}.avoid_margin", "must be a positive number"))
        margin = 0.01
    if avoid and 2 * margin * len(avoid) >= 0.5 * (out["range"][1] - out["range"][0]):
        problems.append((f"{where}.avoid_margin", "the avoided zones cover too much of the range"))
    out["avoid"] = [float(v) for v in avoid]
    out["avoid_margin"] = float(margin)
    return out


def _int_fits(v: int, dtype: str) -> bool:
    lo, hi = INT_BOUNDS[dtype]
    return lo <= v <= hi


def _normalize_ints(raw: Mapping[str, Any], where: str, problems: list[Problem], out: dict) -> dict:
    """An "ints" entry: a fixed list of ints passed as a tuple, a list or a torch.Size."""
    if "shape" in raw or "dtype" in raw or "requires_grad" in raw:
        problems.append((where, "shape, dtype and requires_grad apply to tensors only"))
    if any(k in raw for k in ("range", "avoid", "avoid_margin")):
        problems.append((f"{where}.range", "ints take a fixed value, not a range"))
    container = raw.get("container", "tuple")
    if container not in INTS_CONTAINERS:
        problems.append((f"{where}.container", f"must be one of {', '.join(INTS_CONTAINERS)}"))
        container = "tuple"
    out["container"] = container
    value = raw.get("value")
    if "value" not in raw:
        problems.append((f"{where}.value", f"required: a list of at most {MAX_INTS} integers"))
    elif not (isinstance(value, list) and len(value) <= MAX_INTS and all(_is_int(v) and _int_fits(v, "int64") for v in value)):
        problems.append((f"{where}.value", f"must be a list of at most {MAX_INTS} integers"))
    else:
        out["value"] = list(value)
    return out


def _apply_override(base: dict, override: Mapping[str, Any], where: str, problems: list[Problem]) -> dict:
    """An input entry with some fields replaced (as in variants and boundary cases)."""
    if not isinstance(override, Mapping):
        problems.append((where, "must be a table of input fields"))
        return base
    raw = dict(base)
    if "value" in override:
        raw.pop("range", None)
        raw.pop("avoid", None)
        if "shape" not in override:
            raw.pop("shape", None)
    if "range" in override:
        raw.pop("value", None)
    if override.get("type", raw.get("type")) != "tensor":
        for k in ("shape", "dtype", "requires_grad"):
            if k not in override:
                raw.pop(k, None)
    if override.get("type", raw.get("type")) != "ints" and "container" not in override:
        raw.pop("container", None)
    if override.get("type") == "none":
        raw = {"name": raw.get("name"), "type": "none"}
    raw.update(override)
    return normalize_input(raw, where, problems)


def validate_run_inputs(inputs: Any) -> list[Problem]:
    """Problems with a "Try it yourself" input spec (a list of input entries)."""
    problems: list[Problem] = []
    if not isinstance(inputs, list) or not inputs:
        return [("inputs", "must be a non-empty list of input specs")]
    if len(inputs) > 16:
        problems.append(("inputs", "at most 16 inputs"))
    for i, raw in enumerate(inputs):
        normalize_input(raw, f"inputs[{i}]", problems, need_name=False)
    return problems


# --------------------------------------------------------------------------- the [code] table


def parse_code_table(spec: Mapping[str, Any]) -> tuple[dict, list[Problem]]:
    """The normalised [code] table (defaults filled) and the problems found in it."""
    problems: list[Problem] = []
    code = spec.get("code")
    if not isinstance(code, Mapping):
        return {}, [("code", "a code exercise needs a [code] table")]
    extra = set(code) - _CODE_KEYS
    if extra:
        problems.append(("code", f"unknown keys: {', '.join(sorted(extra))}"))
    out: dict[str, Any] = {}
    ep = code.get("entry_point")
    if not isinstance(ep, str) or not _IDENT.match(ep) or keyword.iskeyword(ep):
        problems.append(("code.entry_point", "required, a Python class name"))
    out["entry_point"] = ep
    for key, default in (("differentiable", True), ("gradgradcheck", False), ("strict_none", False)):
        v = code.get(key, default)
        if not isinstance(v, bool):
            problems.append((f"code.{key}", "must be true or false"))
            v = default
        out[key] = v
    technique = code.get("technique", [])
    if not isinstance(technique, list) or any(t not in TECHNIQUES for t in technique):
        problems.append(("code.technique", f"a list of techniques (known: {', '.join(TECHNIQUES)})"))
        technique = []
    out["technique"] = list(dict.fromkeys(technique))
    rc = code.get("random_cases", 3)
    if not _is_int(rc) or not 1 <= rc <= 8:
        problems.append(("code.random_cases", "must be an integer from 1 to 8"))
        rc = 3
    out["random_cases"] = rc
    timeout = code.get("timeout", DEFAULT_TIMEOUT)
    if not _is_number(timeout) or not TIMEOUT_RANGE[0] <= timeout <= TIMEOUT_RANGE[1]:
        problems.append(("code.timeout", f"must be a number of seconds from {TIMEOUT_RANGE[0]} to {TIMEOUT_RANGE[1]}"))
        timeout = DEFAULT_TIMEOUT
    out["timeout"] = float(timeout)
    memory_mb = code.get("memory_mb", DEFAULT_MEMORY_MB)
    if not _is_int(memory_mb) or not MEMORY_RANGE_MB[0] <= memory_mb <= MEMORY_RANGE_MB[1]:
        problems.append(("code.memory_mb", f"must be an integer number of MiB from {MEMORY_RANGE_MB[0]} to {MEMORY_RANGE_MB[1]}"))
        memory_mb = DEFAULT_MEMORY_MB
    out["memory_mb"] = int(memory_mb)

    tol = dict(DEFAULT_TOLERANCES)
    raw_tol = code.get("tolerances", {})
    if not isinstance(raw_tol, Mapping):
        problems.append(("code.tolerances", "must be a table"))
        raw_tol = {}
    for k, v in raw_tol.items():
        if k not in DEFAULT_TOLERANCES:
            problems.append((f"code.tolerances.{k}", f"unknown tolerance (known: {', '.join(DEFAULT_TOLERANCES)})"))
        elif not _is_number(v) or v < 0 or (k == "eps" and not 0 < v <= 1e-2):
            problems.append((f"code.tolerances.{k}", "must be a non-negative number (eps: in (0, 0.01])"))
        else:
            tol[k] = float(v)
    out["tolerances"] = tol

    inputs_raw = code.get("inputs")
    inputs: list[dict] = []
    if not isinstance(inputs_raw, list) or not inputs_raw:
        problems.append(("code.inputs", "required: one [[code.inputs]] entry per forward argument"))
        inputs_raw = []
    elif len(inputs_raw) > 16:
        problems.append(("code.inputs", "at most 16 inputs"))
    for i, raw in enumerate(inputs_raw):
        inputs.append(normalize_input(raw, f"code.inputs[{i}]", problems))
    names = [inp.get("name") for inp in inputs]
    for i, n in enumerate(names):
        if n is not None and names.index(n) != i:
            problems.append((f"code.inputs[{i}].name", f"duplicate name {n!r}"))
    out["inputs"] = inputs
    if inputs and not any(inp.get("requires_grad") for inp in inputs):
        problems.append(("code.inputs", "at least one input must be a float tensor that requires grad"))

    by_name = {inp.get("name"): (i, inp) for i, inp in enumerate(inputs) if inp.get("name")}
    for key in ("variants", "boundary"):
        cases = []
        raw_cases = code.get(key, [])
        if not isinstance(raw_cases, list):
            problems.append((f"code.{key}", "must be a list of tables"))
            raw_cases = []
        for j, raw in enumerate(raw_cases):
            where = f"code.{key}[{j}]"
            if not isinstance(raw, Mapping):
                problems.append((where, "must be a table"))
                continue
            extra = set(raw) - _CASE_KEYS
            if extra:
                problems.append((where, f"unknown keys: {', '.join(sorted(extra))}"))
            name = raw.get("name")
            if not isinstance(name, str) or not name.strip():
                problems.append((f"{where}.name", "required, a short description"))
            overrides = raw.get("set", {})
            if not isinstance(overrides, Mapping):
                problems.append((f"{where}.set", "must be a table: input name -> fields"))
                overrides = {}
            case_inputs = [dict(inp) for inp in inputs]
            for iname, ov in overrides.items():
                if iname not in by_name:
                    problems.append((f"{where}.set.{iname}", "no input has this name"))
                    continue
                idx, base = by_name[iname]
                case_inputs[idx] = _apply_override(base, ov, f"{where}.set.{iname}", problems)
            case = {"name": name, "inputs": case_inputs}
            eg = raw.get("expected_grad")
            if eg is not None:
                if key != "boundary" or not isinstance(eg, Mapping):
                    problems.append((f"{where}.expected_grad", "a table input name -> gradient (boundary cases only)"))
                else:
                    case["expected_grad"] = {}
                    for iname, g in eg.items():
                        if iname not in by_name:
                            problems.append((f"{where}.expected_grad.{iname}", "no input has this name"))
                            continue
                        tgt = case_inputs[by_name[iname][0]]
                        if nested_shape(g) is None or (tgt.get("shape") is not None and numel(nested_shape(g) or [0]) != numel(tgt["shape"])):
                            problems.append((f"{where}.expected_grad.{iname}", "must have as many numbers as the input"))
                            continue
                        case["expected_grad"][iname] = [float(v) for v in flatten(g)]
            if key == "boundary" and not any(inp.get("requires_grad") for inp in case_inputs):
                problems.append((where, "a boundary case needs an input that requires grad"))
            cases.append(case)
        out[key] = cases

    f32 = code.get("float32_case")
    default_f32 = any(inp.get("dtype") == "float64" and inp.get("type") == "tensor" for inp in inputs)
    if f32 is not None and not isinstance(f32, bool):
        problems.append(("code.float32_case", "must be true or false"))
        f32 = None
    out["float32_case"] = default_f32 if f32 is None else (f32 and default_f32)

    weights = {k: w for k, (w, _) in CHECKS.items()}
    raw_w = code.get("weights", {})
    if not isinstance(raw_w, Mapping):
        problems.append(("code.weights", "must be a table: check name -> weight"))
        raw_w = {}
    for k, v in raw_w.items():
        if k not in CHECKS:
            problems.append((f"code.weights.{k}", f"unknown check (known: {', '.join(CHECKS)})"))
        elif not _is_number(v) or v < 0:
            problems.append((f"code.weights.{k}", "must be a non-negative number"))
        else:
            weights[k] = float(v)
    out["weights"] = weights
    out["checks"] = applicable_checks(out)
    if out["checks"] and sum(out["checks"].values()) <= 0:
        problems.append(("code.weights", "at least one applicable check needs a positive weight"))
    call = code.get("call")
    if call is not None and not isinstance(call, str):
        problems.append(("code.call", "must be a string"))
        call = None
    out["call"] = call or f"{ep}.apply({', '.join(str(n) for n in names)})"
    return out, problems


def applicable_checks(code: Mapping[str, Any]) -> dict[str, float]:
    """Checks that apply to this exercise, with weights normalised to sum to 1."""
    w = dict(code["weights"])
    if not code.get("differentiable", True):
        w.pop("gradcheck")
    if not code.get("boundary"):
        w.pop("boundary")
    if not code.get("gradgradcheck"):
        w.pop("gradgradcheck")
    if not code.get("technique"):
        w.pop("technique")
    total = sum(w.values())
    return {k: (v / total if total > 0 else 0.0) for k, v in w.items()}


def wrong_file_expectations(text: str) -> tuple[str | None, list[str]]:
    """The `# expect: cause` and optional `# fails: a, b` header of a wrong/*.py file."""
    cause, fails = None, []
    for line in text.splitlines()[:5]:
        m = _EXPECT.match(line.strip())
        if m:
            cause = m.group(1)
        m = _FAILS.match(line.strip())
        if m:
            fails = [s.strip() for s in m.group(1).split(",") if s.strip()]
    return cause, fails


def _top_level_classes(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


def validate_code_exercise(spec: dict, files: dict[str, str]) -> list[Problem]:
    """Problems with the [code] table and the code files (nothing is executed)."""
    code, problems = parse_code_table(spec)
    ep = code.get("entry_point")
    for name in ("reference.py", "starter.py"):
        text = files.get(name)
        if text is None:
            problems.append((name, "missing"))
            continue
        try:
            tree = ast.parse(text, filename=name)
        except SyntaxError as exc:
            problems.append((name, f"syntax error at line {exc.lineno}, column {exc.offset}: {exc.msg}"))
            continue
        if ep and ep not in _top_level_classes(tree):
            problems.append((name, f"does not define class {ep}"))
        elif name == "reference.py" and ep and missing_techniques(text, ep, code.get("technique", [])):
            problems.append((name, f"does not use the exercise's technique: {', '.join(missing_techniques(text, ep, code['technique']))}"))
    wrong = sorted(p for p in files if p.startswith("wrong/"))
    if not wrong:
        problems.append(("wrong/", "at least one known-wrong version (wrong/*.py) is required"))
    for path in wrong:
        if not path.endswith(".py") or "/" in path[len("wrong/"):]:
            problems.append((path, "wrong versions are wrong/<name>.py files"))
            continue
        text = files[path]
        try:
            ast.parse(text, filename=path)
        except SyntaxError as exc:
            problems.append((path, f"syntax error at line {exc.lineno}, column {exc.offset}: {exc.msg}"))
        cause, fails = wrong_file_expectations(text)
        if cause is None:
            problems.append((path, "first lines must include '# expect: <likely cause>'"))
        elif cause not in LIKELY_CAUSES:
            problems.append((path, f"unknown likely cause {cause!r}"))
        for f in fails:
            if f not in CHECKS:
                problems.append((path, f"'# fails:' names unknown check {f!r}"))
    other = [p for p in files if p not in ("reference.py", "starter.py", "exercise.toml") and not p.startswith("wrong/")]
    for p in other:
        if not p.endswith((".md", ".txt")):
            problems.append((p, "unexpected file in a code exercise"))
    return problems


def public_code_view(spec: dict, files: dict[str, str]) -> dict:
    """What a learner may see: never the reference, hidden values, boundary points or wrong files."""
    code, _ = parse_code_table(spec)
    inputs = []
    for inp in code.get("inputs", []):
        item = {"name": inp.get("name"), "type": inp.get("type"), "description": inp.get("description", "")}
        if inp.get("type") == "tensor":
            item.update(shape=inp.get("shape"), dtype=inp.get("dtype"), requires_grad=inp.get("requires_grad"))
        inputs.append(item)
    return {
        "entry_point": code.get("entry_point"),
        "call": code.get("call"),
        "starter": files.get("starter.py", ""),
        "inputs": inputs,
        "checks": [
            {"name": name, "weight": round(weight, 4), "description": CHECKS[name][1]}
            for name, weight in code.get("checks", {}).items()
        ],
        "timeout": code.get("timeout"),
    }
