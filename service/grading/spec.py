"""The `[code]` table of a code exercise: its format, loaded into a frozen CodeSpec, and the learner's view.

The format (every field, its default and its limits) is documented once, for authors, in
docs/authoring.md ("code"); this module enforces it. Marshmallow schemas, one per input type, load
the table (values taken as written: no string or bool coercion; unknown fields refused); the rules
across fields (names, variants and boundary cases, weights) are checked on what loaded, so an
author sees every problem at once. The same input schemas load the inputs of a "Try it yourself"
run (`load_run_inputs`).

Imported by the web process: no torch, no numpy, no Flask; nothing is executed.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import keyword
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validate, validates_schema

from .code_table import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT,
    DEFAULT_TOLERANCES,
    CaseSpec,
    CodeSpec,
    InputSpec,
    Tolerances,
)
from .draws import numel
from .registry import DEFAULT_WEIGHTS, OPTIONS, applicable, default_weights
from .technique import TECHNIQUES, missing_techniques
from .terms import CAUSES, CHECKS as CHECK_TERMS

Problem = tuple[str, str]

INPUT_TYPES = ("tensor", "float", "int", "bool", "none", "ints")
TENSOR_DTYPES = ("float64", "float32", "int64", "int32", "bool")
FLOAT_DTYPES = ("float64", "float32")
#: Integer dtypes and the values they hold.
INT_BOUNDS = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}
#: "ints": how the list of ints is passed to forward, and its length.
INTS_CONTAINERS = ("tuple", "list", "size")
MAX_INTS = 8
MAX_ELEMENTS = 1024
#: gradcheck's full Jacobian is made column by column up to this many input elements that require
#: grad (and row by row up to as many output elements); a run checks larger ones by projections.
MAX_JACOBIAN_SIDE = 256
MAX_DIMS = 4
MAX_CODE_BYTES = 64 * 1024
TIMEOUT_RANGE = (0.5, 30.0)
MEMORY_RANGE_MB = (64, 4096)

#: How a problem about a code file that does not parse starts (the loader gives it the error's line).
SYNTAX_ERROR = "syntax error"
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
        first = shapes[0]
        return None if first is None else [len(value), *first]
    if isinstance(value, (int, float)) and (isinstance(value, bool) or math.isfinite(value)):
        return []
    return None


def flatten(value: Any) -> list[Any]:
    if isinstance(value, list):
        out: list[Any] = []
        for v in value:
            out.extend(flatten(v))
        return out
    return [value]


def _int_fits(v: int, dtype: str) -> bool:
    lo, hi = INT_BOUNDS[dtype]
    return lo <= v <= hi


# --------------------------------------------------------------------------- field types


class _Number(fields.Field[Any]):
    """A finite number as TOML or JSON writes it: never a bool, never a string."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if not _is_number(value):
            raise ValidationError("must be a finite number")
        number: float = value  # an int stays an int: the table's seed material is as written
        return number


class _Int(fields.Field[Any]):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if not _is_int(value):
            raise ValidationError("must be an integer")
        integer: int = value
        return integer


class _Bool(fields.Field[Any]):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be true or false")
        return value


class _Text(fields.Field[Any]):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        if not isinstance(value, str):
            raise ValidationError("must be a string")
        return value


class _Identifier(fields.Field[Any]):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        if not isinstance(value, str) or not _IDENT.match(value) or keyword.iskeyword(value):
            raise ValidationError("must be a Python identifier")
        return value


class _NumberPair(fields.Field[Any]):
    """[low, high] with low < high."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> tuple[float, float]:
        if not (isinstance(value, list) and len(value) == 2 and all(_is_number(v) for v in value) and value[0] < value[1]):
            raise ValidationError("must be [low, high] with low < high")
        return value[0], value[1]


class _Numbers(fields.Field[Any]):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> tuple[float, ...]:
        if not isinstance(value, list) or not all(_is_number(v) for v in value):
            raise ValidationError("must be a list of numbers")
        return tuple(float(v) for v in value)


class _Intervals(fields.Field[Any]):
    """A list of [low, high] pairs, low < high."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> tuple[tuple[float, float], ...]:
        if not (isinstance(value, list) and value and all(
                isinstance(v, list) and len(v) == 2 and all(_is_number(n) for n in v) and v[0] < v[1] for v in value)):
            raise ValidationError("must be a list of [low, high] pairs with low < high")
        return tuple((float(low), float(high)) for low, high in value)


class _PositiveNumber(_Number):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if not _is_number(value) or value <= 0:
            raise ValidationError("must be a positive number")
        return float(value)


class _IntList(fields.Field[Any]):
    """An "ints" value: at most MAX_INTS integers that fit an int64."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> tuple[int, ...]:
        if not (isinstance(value, list) and len(value) <= MAX_INTS and all(_is_int(v) and _int_fits(v, "int64") for v in value)):
            raise ValidationError(f"must be a list of at most {MAX_INTS} integers")
        return tuple(value)


class _CheckTable(fields.Field[Any]):
    """A table check name -> non-negative number."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> dict[str, float]:
        if not isinstance(value, Mapping):
            raise ValidationError("must be a table: check name -> weight")
        errors: dict[str, str] = {}
        for k, v in value.items():
            if k not in DEFAULT_WEIGHTS:
                errors[k] = f"unknown check (known: {', '.join(DEFAULT_WEIGHTS)})"
            elif not _is_number(v) or v < 0:
                errors[k] = "must be a non-negative number"
        if errors:
            raise ValidationError(errors)
        return {k: float(v) for k, v in value.items()}


# --------------------------------------------------------------------------- schemas


class _Strict(Schema):
    class Meta:
        unknown = RAISE


class _InputBase(_Strict):
    type = fields.String(required=True)
    name = _Identifier()
    description = _Text(load_default="")


class _NoneInput(_InputBase):
    pass


class _BoolInput(_InputBase):
    value = _Bool()

    @post_load
    def _random(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if "value" not in data:
            data["range"] = (0, 1)
        return data


class _IntsInput(_InputBase):
    value = _IntList(required=True, error_messages={"required": f"required: a list of at most {MAX_INTS} integers"})
    container = fields.String(load_default="tuple", validate=validate.OneOf(
        INTS_CONTAINERS, error=f"must be one of {', '.join(INTS_CONTAINERS)}"))


#: Where random floats are drawn when an input names no range.
DEFAULT_FLOAT_RANGE = (-1.0, 1.0)
DEFAULT_AVOID_MARGIN = 0.01


def _room_beyond_avoided(data: dict[str, Any], interval: tuple[float, float]) -> bool:
    """Whether the zones an input avoids (avoid_margin either side of each avoided point) leave
    more than half of `interval` to draw from: a draw finds a value in a few tries."""
    avoided = 2 * data.get("avoid_margin", DEFAULT_AVOID_MARGIN) * len(data.get("avoid", ()))
    return not avoided or avoided < 0.5 * (interval[1] - interval[0])


class _DrawnInput(_InputBase):
    """Inputs drawn from a range unless a value is fixed: floats, ints and tensors."""

    range = _NumberPair()
    avoid = _Numbers()
    avoid_margin = _PositiveNumber()

    def _integers(self, data: dict[str, Any]) -> str | None:
        """The integer dtype ("int" for a Python int) when the values are integers."""
        return None

    @validates_schema
    def _value_or_range(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "value" in data and "range" in data:
            raise ValidationError("give either value or range, not both", "range")
        ints, rng = self._integers(data), data.get("range")
        if ints and rng is not None:
            if not all(_is_int(v) for v in rng):
                raise ValidationError("integer inputs take an integer range", "range")
            if ints in INT_BOUNDS and not all(_int_fits(v, ints) for v in rng):
                raise ValidationError(f"outside the values of {ints}", "range")

    @post_load
    def _drawn(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if "value" in data:
            for k in ("avoid", "avoid_margin"):
                data.pop(k, None)
            return data
        ints = self._integers(data)
        lo, hi = data.get("range", (0, 9) if ints == "int" else DEFAULT_FLOAT_RANGE)
        data["range"] = (int(lo), int(hi)) if ints else (float(lo), float(hi))
        data.setdefault("avoid", ())
        data.setdefault("avoid_margin", DEFAULT_AVOID_MARGIN)
        if not _room_beyond_avoided(data, data["range"]):
            raise ValidationError("the avoided zones cover too much of the range", "avoid_margin")
        return data


class _FloatInput(_DrawnInput):
    value = _Number()

    @post_load
    def _float(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if "value" in data:
            data["value"] = float(data["value"])
        return data


class _IntInput(_DrawnInput):
    value = _Int()

    def _integers(self, data: dict[str, Any]) -> str | None:
        return "int"


class _TensorInput(_DrawnInput):
    dtype = fields.String(load_default="float64", validate=validate.OneOf(
        TENSOR_DTYPES, error=f"must be one of {', '.join(TENSOR_DTYPES)}"))
    shape = fields.Raw()
    value = fields.Raw()
    requires_grad = _Bool()
    cover = _Intervals()

    def _integers(self, data: dict[str, Any]) -> str | None:
        return data.get("dtype") if data.get("dtype") in INT_BOUNDS else None

    @validates_schema
    def _cover(self, data: dict[str, Any], **kwargs: Any) -> None:
        """Each interval inside the range, room in it beyond the avoided zones, and no more
        intervals than elements (each takes one of its own)."""
        if "cover" not in data:
            return
        if "value" in data:
            raise ValidationError("is for random values: give either value or cover", "cover")
        if data.get("dtype", "float64") not in FLOAT_DTYPES:
            raise ValidationError("is for float tensors", "cover")
        low, high = data.get("range", DEFAULT_FLOAT_RANGE)
        if not all(low <= a and b <= high for a, b in data["cover"]):
            raise ValidationError(f"each interval must lie inside the range [{low}, {high}]", "cover")
        if not all(_room_beyond_avoided(data, interval) for interval in data["cover"]):
            raise ValidationError("an interval is too narrow for the avoided zones", "cover")
        shape = data.get("shape")
        if isinstance(shape, list) and all(_is_int(d) and d > 0 for d in shape) and len(data["cover"]) > numel(shape):
            raise ValidationError(f"more intervals than the {numel(shape)} values drawn", "cover")

    @validates_schema
    def _tensor(self, data: dict[str, Any], **kwargs: Any) -> None:
        dtype, shape = data.get("dtype", "float64"), data.get("shape")
        if "value" in data:
            vshape = nested_shape(data["value"])
            if vshape is None:
                raise ValidationError("must be a number or a rectangular nested list of finite numbers", "value")
            if shape is not None and (not isinstance(shape, list) or shape != vshape):
                raise ValidationError(f"does not match the value's shape {vshape}", "shape")
            values = flatten(data["value"])
            if dtype in INT_BOUNDS and not all(_is_int(v) for v in values):
                raise ValidationError(f"an {dtype} tensor takes integers", "value")
            if dtype in INT_BOUNDS and not all(_int_fits(v, dtype) for v in values):
                raise ValidationError(f"outside the values of {dtype}", "value")
            if dtype == "bool" and not all(isinstance(v, bool) or v in (0, 1) for v in values):
                raise ValidationError("a bool tensor takes true/false", "value")
            shape = vshape
        if not isinstance(shape, list) or not all(_is_int(d) and d > 0 for d in shape) or len(shape) > MAX_DIMS:
            raise ValidationError(f"must be a list of positive integers (at most {MAX_DIMS})", "shape")
        if numel(shape) > MAX_ELEMENTS:
            raise ValidationError(f"at most {MAX_ELEMENTS} elements", "shape")
        if data.get("requires_grad") and dtype not in FLOAT_DTYPES:
            raise ValidationError("only float tensors can require grad", "requires_grad")

    @post_load
    def _tensor_defaults(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        dtype = data["dtype"]
        if "value" in data:
            data["shape"] = nested_shape(data["value"])
            data["value"] = tuple(float(v) if dtype in FLOAT_DTYPES else v for v in flatten(data["value"]))
        data["shape"] = tuple(data["shape"])
        data.setdefault("requires_grad", dtype in FLOAT_DTYPES)
        return data


_INPUT_SCHEMAS: dict[str, Schema] = {
    "tensor": _TensorInput(), "float": _FloatInput(), "int": _IntInput(), "bool": _BoolInput(),
    "none": _NoneInput(), "ints": _IntsInput(),
}


class _InputField(fields.Field[InputSpec]):
    """One input entry, by its `type` (default "tensor")."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> InputSpec:
        if not isinstance(value, Mapping):
            raise ValidationError("must be a table")
        raw = dict(value)
        typ = raw.setdefault("type", "tensor")
        if not isinstance(typ, str) or typ not in _INPUT_SCHEMAS:
            raise ValidationError({"type": [f"must be one of {', '.join(INPUT_TYPES)}"]})
        try:
            loaded = _INPUT_SCHEMAS[typ].load(raw)
        except ValidationError as exc:
            messages: dict[str, Any] = exc.normalized_messages()  # type: ignore[no-untyped-call]
            for key, msgs in messages.items():
                if msgs == ["Unknown field."]:
                    messages[key] = [_unknown_field(str(key), sorted(_INPUT_SCHEMAS[typ].fields), f"a {typ} input")]
            raise ValidationError(messages) from None
        return InputSpec(**loaded)


class _CaseSchema(_Strict):
    name = _Text(required=True, validate=lambda s: bool(s.strip()),
                 error_messages={"required": "required, a short description", "validator_failed": "required, a short description"})
    set = fields.Raw(load_default=dict)
    expected_grad = fields.Raw()


class _TolerancesSchema(_Strict):
    forward_rtol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    forward_atol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    grad_rtol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    grad_atol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    float32_rtol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    float32_atol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    eps = _Number(validate=validate.Range(min=0, max=1e-2, min_inclusive=False, error="must be in (0, 0.01]"))
    gradcheck_atol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))
    gradcheck_rtol = _Number(validate=validate.Range(min=0, error="must be a non-negative number"))

    @post_load
    def _make(self, data: dict[str, Any], **kwargs: Any) -> Tolerances:
        return Tolerances(**{k: float(v) for k, v in data.items()})


class _CodeTableSchema(_Strict):
    entry_point = _Identifier(required=True, error_messages={"required": "required, a Python class name"})
    call = _Text()
    random_cases = _Int(load_default=3, validate=validate.Range(1, 8, error="must be an integer from 1 to 8"))
    differentiable = _Bool(load_default=True)
    gradgradcheck = _Bool(load_default=False)
    forward_ad = _Bool(load_default=False)
    in_place = _Bool(load_default=False)
    vmap = _Bool(load_default=False)
    custom_op = _Bool(load_default=False)
    strict_none = _Bool(load_default=False)
    float32_case = _Bool()
    timeout = _Number(load_default=DEFAULT_TIMEOUT, validate=validate.Range(
        *TIMEOUT_RANGE, error=f"must be a number of seconds from {TIMEOUT_RANGE[0]} to {TIMEOUT_RANGE[1]}"))
    memory_mb = _Int(load_default=DEFAULT_MEMORY_MB, validate=validate.Range(
        *MEMORY_RANGE_MB, error=f"must be an integer number of MiB from {MEMORY_RANGE_MB[0]} to {MEMORY_RANGE_MB[1]}"))
    weights = _CheckTable(load_default=dict)
    tolerances = fields.Nested(_TolerancesSchema, load_default=lambda: DEFAULT_TOLERANCES)
    inputs = fields.List(_InputField(), required=True, validate=validate.Length(1, 16, error="one to 16 [[code.inputs]] entries"),
                         error_messages={"required": "required: one [[code.inputs]] entry per forward argument"})
    variants = fields.List(fields.Nested(_CaseSchema), load_default=list)
    boundary = fields.List(fields.Nested(_CaseSchema), load_default=list)
    technique = fields.List(fields.String(validate=validate.OneOf(
        TECHNIQUES, error=f"a technique (known: {', '.join(TECHNIQUES)})")), load_default=list)


_CODE_TABLE = _CodeTableSchema()
_RUN_INPUTS = fields.List(_InputField(), validate=validate.Length(1, 16, error="one to 16 input specs"))


def _unknown_field(key: str, known: list[str], holder: str) -> str:
    """What to say of a key a table does not take: the near miss it may be a typo of."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"unknown field (did you mean {close[0]}?)" if close else f"unknown field ({holder} takes {', '.join(known)})"


def _problems(messages: Any, where: str) -> list[Problem]:
    """marshmallow's nested messages as (field path, message) pairs: code.inputs[0].shape."""
    if isinstance(messages, Mapping):
        out: list[Problem] = []
        for key, sub in messages.items():
            if key == "_schema":
                out += _problems(sub, where)
            else:
                out += _problems(sub, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")
        return out
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [(where, "unknown field" if m == "Unknown field." else m) for m in messages]
    if isinstance(messages, list):
        return [p for m in messages for p in _problems(m, where)]
    return [(where, str(messages))]


# --------------------------------------------------------------------------- loading


def load_input(raw: Any, where: str = "input") -> tuple[InputSpec | None, list[Problem]]:
    try:
        return _InputField().deserialize(raw), []
    except ValidationError as exc:
        return None, _problems(exc.messages, where)


def load_run_inputs(inputs: Any) -> tuple[list[InputSpec], list[Problem]]:
    """The input specs of a "Try it yourself" run (names optional), or the problems with them."""
    if not isinstance(inputs, list) or not inputs:
        return [], [("inputs", "must be a non-empty list of input specs")]
    try:
        return [inp for inp in _RUN_INPUTS.deserialize(inputs) if inp is not None], []
    except ValidationError as exc:
        return [], _problems(exc.messages, "inputs")


def validate_run_inputs(inputs: Any) -> list[Problem]:
    """Problems with a "Try it yourself" input spec (a list of input entries)."""
    return load_run_inputs(inputs)[1]


def _override(base: InputSpec, override: Any, where: str, problems: list[Problem]) -> InputSpec:
    """An input with some fields replaced (as in variants and boundary cases): fields of the base
    that the override makes moot (a range beside a new value) or that the new type does not take
    are left out."""
    if not isinstance(override, Mapping):
        problems.append((where, "must be a table of input fields"))
        return base
    raw = base.as_table()
    new_type = override.get("type", base.type)
    if "value" in override:
        for k in ("range", "avoid", "avoid_margin", "cover"):
            raw.pop(k, None)
        if "shape" not in override:
            raw.pop("shape", None)
    if "range" in override:
        raw.pop("value", None)
    if new_type == "none":
        raw = {"name": raw["name"]}
    elif new_type in _INPUT_SCHEMAS:
        raw = {k: v for k, v in raw.items() if k in _INPUT_SCHEMAS[new_type].fields}
    raw.update(override)
    spec, found = load_input(raw, where)
    problems.extend(found)
    return spec or base


def _cases(raw_cases: list[dict[str, Any]], key: str, inputs: tuple[InputSpec, ...], all_names: set[str],
           problems: list[Problem], *, complete: bool = True) -> tuple[CaseSpec, ...]:
    """Variants or boundary cases. `all_names`: every input's name as written, loaded or not (an
    input that failed to load has its own problems; a case that changes it is not checked again).
    `complete`: whether every input loaded (else a case's rules over all its inputs are not checked)."""
    by_name = {str(inp.name): i for i, inp in enumerate(inputs)}
    cases = []
    for j, raw in enumerate(raw_cases):
        where = f"code.{key}[{j}]"
        overrides = raw["set"]
        if not isinstance(overrides, Mapping):
            problems.append((f"{where}.set", "must be a table: input name -> fields"))
            overrides = {}
        case_inputs = list(inputs)
        for iname, ov in overrides.items():
            if iname not in all_names:
                problems.append((f"{where}.set.{iname}", "no input has this name"))
            elif iname in by_name:
                case_inputs[by_name[iname]] = _override(inputs[by_name[iname]], ov, f"{where}.set.{iname}", problems)
        expected = None
        if "expected_grad" in raw:
            expected = _expected_grad(raw["expected_grad"], key, where, case_inputs, by_name, all_names, problems)
        if complete and key == "boundary" and not any(inp.requires_grad for inp in case_inputs):
            problems.append((where, "a boundary case needs an input that requires grad"))
        cases.append(CaseSpec(raw["name"], tuple(case_inputs), expected))
    return tuple(cases)


def _expected_grad(eg: Any, key: str, where: str, case_inputs: list[InputSpec], by_name: dict[str, Any],
                   all_names: set[str], problems: list[Problem]) -> dict[str, tuple[float, ...]] | None:
    if key != "boundary" or not isinstance(eg, Mapping):
        problems.append((f"{where}.expected_grad", "a table input name -> gradient (boundary cases only)"))
        return None
    out = {}
    for iname, g in eg.items():
        if iname not in by_name:
            if iname not in all_names:  # an input that did not load has its own problem
                problems.append((f"{where}.expected_grad.{iname}", "no input has this name"))
            continue
        target, gshape = case_inputs[by_name[iname]], nested_shape(g)
        if gshape is None or (target.shape is not None and numel(list(gshape)) != numel(list(target.shape))):
            problems.append((f"{where}.expected_grad.{iname}", "must have as many numbers as the input"))
            continue
        out[iname] = tuple(float(v) for v in flatten(g))
    return out


def load_code_spec(spec: Mapping[str, Any]) -> tuple[CodeSpec | None, list[Problem]]:  # noqa: C901
    """The [code] table of an exercise as a CodeSpec, or None and every problem found in it (the
    table's rules across fields are checked on what loaded, so an author sees all at once)."""
    table = spec.get("code")
    if not isinstance(table, Mapping):
        return None, [("code", "a code exercise needs a [code] table")]
    problems: list[Problem] = []
    try:
        data = _CODE_TABLE.load(dict(table))
    except ValidationError as exc:
        data = exc.valid_data if isinstance(exc.valid_data, dict) else {}
        problems += _problems(exc.messages, "code")
    # When an input did not load, the rules across the inputs (one requires grad, a boundary case
    # has one that does, its expected gradient names one) are not checked on what is left: they
    # would blame fields that are right. The input's own problem is the one to fix.
    complete = not any(f == "code.inputs" or f.startswith(("code.inputs[", "code.inputs.")) for f, _ in problems)
    inputs: tuple[InputSpec, ...] = tuple(data.get("inputs", ()))
    raw_inputs = table.get("inputs")
    if not isinstance(raw_inputs, list):
        raw_inputs = []
    all_names = {str(r["name"]) for r in raw_inputs if isinstance(r, Mapping) and isinstance(r.get("name"), str)}
    names = [inp.name for inp in inputs]
    for i, n in enumerate(names):
        if n is None:
            problems.append((f"code.inputs[{i}].name", "must be a Python identifier"))
        elif names.index(n) != i:
            problems.append((f"code.inputs[{i}].name", f"duplicate name {n!r}"))
    if complete and inputs and not any(inp.requires_grad for inp in inputs):
        problems.append(("code.inputs", "at least one input must be a float tensor that requires grad"))
    columns = sum(numel(list(inp.shape or ())) for inp in inputs if inp.type == "tensor" and inp.requires_grad)
    if complete and data.get("differentiable", True) and columns > MAX_JACOBIAN_SIDE:
        # a grade's gradcheck compares the whole Jacobian: every element that requires grad is a column
        problems.append(("code.inputs", f"gradcheck's Jacobian is made for at most {MAX_JACOBIAN_SIDE} input elements "
                                        f"that require grad; these inputs have {columns}"))
    variants = _cases(data.get("variants", []), "variants", inputs, all_names, problems, complete=complete)
    boundary = _cases(data.get("boundary", []), "boundary", inputs, all_names, problems, complete=complete)
    if problems:
        return None, problems
    has_float64 = any(inp.type == "tensor" and inp.dtype == "float64" for inp in inputs)
    code = CodeSpec(
        entry_point=data["entry_point"], call=data.get("call") or f"{data['entry_point']}.apply({', '.join(map(str, names))})",
        inputs=inputs, random_cases=data["random_cases"], differentiable=data["differentiable"],
        gradgradcheck=data["gradgradcheck"], forward_ad=data["forward_ad"], in_place=data["in_place"], vmap=data["vmap"],
        custom_op=data["custom_op"],
        strict_none=data["strict_none"],
        float32_case=has_float64 and data.get("float32_case", True), timeout=float(data["timeout"]),
        memory_mb=data["memory_mb"], tolerances=data["tolerances"], variants=variants, boundary=boundary,
        technique=tuple(dict.fromkeys(data["technique"])),
        weights=MappingProxyType(default_weights({name for name in OPTIONS if data[name]}) | data["weights"]))
    checks = applicable(code, code.weights)
    if checks and sum(checks.values()) <= 0:
        return None, [("code.weights", "at least one applicable check needs a positive weight")]
    return dataclasses.replace(code, checks=MappingProxyType(checks)), []


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


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level: a custom op is a decorated function
    (`@torch.library.custom_op(...) def op(...)`) or an assignment (`op = custom_op(...)(fn)`)."""
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    for n in tree.body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def validate_code_exercise(spec: dict[str, Any], files: dict[str, str]) -> list[Problem]:  # noqa: C901
    """Problems with the [code] table and the code files (nothing is executed)."""
    code, problems = load_code_spec(spec)
    table = spec.get("code")
    raw_ep = table.get("entry_point") if isinstance(table, Mapping) else None
    ep = code.entry_point if code else raw_ep if isinstance(raw_ep, str) else None
    technique = list(code.technique) if code else []
    custom_op = code.custom_op if code else isinstance(table, Mapping) and table.get("custom_op") is True
    for name in ("reference.py", "starter.py"):
        text = files.get(name)
        if text is None:
            problems.append((name, "missing"))
            continue
        try:
            tree = ast.parse(text, filename=name)
        except SyntaxError as exc:
            problems.append((name, f"{SYNTAX_ERROR} at line {exc.lineno}, column {exc.offset}: {exc.msg}"))
            continue
        if ep and custom_op and ep not in _top_level_names(tree):
            problems.append((name, f"does not define the custom op {ep}"))
        elif ep and not custom_op and ep not in _top_level_classes(tree):
            problems.append((name, f"does not define class {ep}"))
        elif name == "reference.py" and ep and missing_techniques(text, ep, technique):
            problems.append((name, f"does not use the exercise's technique: {', '.join(missing_techniques(text, ep, technique))}"))
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
            problems.append((path, f"{SYNTAX_ERROR} at line {exc.lineno}, column {exc.offset}: {exc.msg}"))
        cause, fails = wrong_file_expectations(text)
        if cause is None:
            problems.append((path, "first lines must include '# expect: <likely cause>'"))
        elif cause not in CAUSES:
            problems.append((path, f"unknown likely cause {cause!r}"))
        for f in fails:
            if f not in DEFAULT_WEIGHTS:
                problems.append((path, f"'# fails:' names unknown check {f!r}"))
    other = [p for p in files if p not in ("reference.py", "starter.py", "exercise.toml") and not p.startswith("wrong/")]
    for p in other:
        if not p.endswith((".md", ".txt")):
            problems.append((p, "unexpected file in a code exercise"))
    return problems


def public_code_view(spec: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
    """What a learner may see: never the reference, hidden values, boundary points or wrong files."""
    code, _ = load_code_spec(spec)
    if code is None:
        return {"entry_point": None, "call": None, "starter": files.get("starter.py", ""), "inputs": [], "checks": [],
                "timeout": None}
    inputs = []
    for inp in code.inputs:
        item: dict[str, Any] = {"name": inp.name, "type": inp.type, "description": inp.description}
        if inp.type == "tensor":
            item.update(shape=list(inp.shape or ()), dtype=inp.dtype, requires_grad=inp.requires_grad)
        elif inp.type == "ints":
            item.update(container=inp.container)
        inputs.append(item)
    return {
        "entry_point": code.entry_point,
        "call": code.call,
        "starter": files.get("starter.py", ""),
        "inputs": inputs,
        "checks": [
            {"name": name, "weight": round(weight, 4), "description": CHECK_TERMS[name].description}
            for name, weight in code.checks.items()
        ],
        "timeout": code.timeout,
    }
