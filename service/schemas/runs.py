from __future__ import annotations

import keyword
from typing import Any

from marshmallow import Schema, fields, validate

from ..grading.spec import (
    DEFAULT_AVOID_MARGIN,
    FLOAT_DTYPES,
    INT_BOUNDS,
    INTS_CONTAINERS,
    MAX_DIMS,
    MAX_ELEMENTS,
    MAX_INTS,
    TENSOR_DTYPES,
)
from .attempts import MAX_CODE_CHARS, MAX_WAIT_SECONDS
from .diagnosis import DiagnosisSchema, run_diagnosis
from .request import NO_NUL_PATTERN, JsonBoolean, Pattern, RequestSchema

DEFAULT_RUN_WAIT = 10


def _input_spec_schema() -> dict:
    """The JSON Schema of one input spec, one variant per `type`, for the OpenAPI document only:
    service.grading.spec.validate_run_inputs is the validator (the one place the rules live);
    this describes what it accepts, from the same constants."""
    common = {
        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$", "not": {"enum": keyword.kwlist},
                 "description": "The argument's name in forward, a Python identifier (optional; shown in the "
                                "result)"},
        "description": {"type": "string", "pattern": NO_NUL_PATTERN, "description": "Free text, shown with the input"},
    }
    # A fixed value, or values drawn from a range: not both.
    value_or_range = {"not": {"required": ["value", "range"]}}

    def nested(scalar: dict) -> dict:
        """A tensor's value: a scalar, or lists of them up to MAX_DIMS deep (rectangular: checked by
        spec.py, not said here)."""
        out = scalar
        for _ in range(MAX_DIMS):
            out = {"anyOf": [scalar, {"type": "array", "minItems": 1, "items": out}]}
        return out

    def when_dtype(dtypes: list[str], then: dict) -> dict:
        return {"if": {"required": ["dtype"], "properties": {"dtype": {"enum": dtypes}}}, "then": {"properties": then}}

    by_dtype = [
        *(when_dtype([dtype], {
            "value": nested({"type": "integer", "minimum": low, "maximum": high}),
            "range": {"type": "array", "minItems": 2, "maxItems": 2,
                      "items": {"type": "integer", "minimum": low, "maximum": high}}})
          for dtype, (low, high) in INT_BOUNDS.items()),
        when_dtype(["bool"], {"value": nested({"anyOf": [{"type": "boolean"}, {"enum": [0, 1]}]})}),
        # cover: random float tensors only
        when_dtype([*INT_BOUNDS, "bool"], {"cover": False}),
        {"not": {"required": ["value", "cover"]}},
        # Only a float tensor can require grad (dtype left out: float64).
        {"if": {"required": ["requires_grad"], "properties": {"requires_grad": {"const": True}}},
         "then": {"properties": {"dtype": {"enum": list(FLOAT_DTYPES)}}}},
    ]
    number_pair = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    avoid = {
        "avoid": {"type": "array", "items": {"type": "number"},
                  "description": "Kinks: random values keep avoid_margin away from these points"},
        "avoid_margin": {"type": "number", "exclusiveMinimum": 0, "default": DEFAULT_AVOID_MARGIN,
                         "description": "Distance random values keep from each avoided point"},
    }

    def variant(typ: str, description: str, props: dict, *, required=("type",), type_default=False,
                extra: dict | None = None) -> dict:
        extra = extra or {}
        type_prop = {"type": "string", "enum": [typ], "description": "The kind of argument"}
        if type_default:
            type_prop["default"] = typ
        out = {"title": typ, "type": "object", "description": description, "additionalProperties": False,
               "properties": {"type": type_prop, **common, **props}, **extra}
        if required:
            out["required"] = list(required)
        return out

    return {"oneOf": [
        variant("tensor", (
            "A torch tensor: fixed values (`value`, a number or a rectangular nested list: it sets the shape) "
            "or random ones (`shape`, and `range` for float and integer dtypes). Integer tensors (index "
            "tensors) and bool tensors (masks) never require grad."), {
            "dtype": {"type": "string", "enum": list(TENSOR_DTYPES), "default": "float64"},
            "shape": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_ELEMENTS},
                      "maxItems": MAX_DIMS,
                      "description": f"Dimensions, at most {MAX_DIMS}, at most {MAX_ELEMENTS} elements in all; "
                                     "required without value"},
            "value": {**nested({"type": ["number", "boolean"]}),
                      "description": "Fixed values: a number or a rectangular nested list (integers for integer "
                                     "dtypes, true/false for bool); excludes range"},
            "range": {**number_pair, "description": "[low, high], low < high: random values drawn uniformly "
                                                    "(integers for integer dtypes); default [-1, 1]"},
            **avoid,
            "cover": {"type": "array", "minItems": 1, "items": number_pair,
                      "description": "Float tensors: intervals [low, high] inside range, each holding at least one "
                                     "of the values drawn (at most one interval per element); excludes value"},
            "requires_grad": {"type": "boolean", "description": "Default: true for float64/float32, false "
                                                                "otherwise (only float tensors can require grad)"},
        }, required=(), type_default=True,
            extra={**value_or_range, "anyOf": [{"required": ["value"]}, {"required": ["shape"]}], "allOf": by_dtype}),
        variant("float", "A Python float: `value`, or random in `range` (default [-1, 1]).", {
            "value": {"type": "number"}, "range": {**number_pair, "description": "[low, high], low < high"},
            **avoid}, extra=value_or_range),
        variant("int", "A Python int: `value`, or random in `range` (default [0, 9]).", {
            "value": {"type": "integer"},
            "range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                      "description": "[low, high], low < high, both included"}, **avoid}, extra=value_or_range),
        variant("bool", "A Python bool: `value`, or random.", {"value": {"type": "boolean"}}),
        variant("none", "None (an optional argument left out).", {}),
        variant("ints", "A tuple or list of ints, or a torch.Size (a shape argument): a fixed `value`.", {
            "value": {"type": "array", "maxItems": MAX_INTS,
                      "items": {"type": "integer", "minimum": INT_BOUNDS["int64"][0], "maximum": INT_BOUNDS["int64"][1]},
                      "description": f"At most {MAX_INTS} integers"},
            "container": {"type": "string", "enum": list(INTS_CONTAINERS), "default": "tuple",
                          "description": "How forward receives them: tuple, list or torch.Size"},
        }, required=("type", "value")),
    ]}


class RunCreateSchema(RequestSchema):
    # The document's side of the check in resources/runs.py: entry_point and inputs come together.
    JSON_SCHEMA = {"dependentRequired": {"entry_point": ["inputs"], "inputs": ["entry_point"],
                                         # A version only of a named exercise (a preview's Run).
                                         "version": ["exercise"]},
                   # An exercise's run brings the exercise's own entry point and inputs (resources/runs.py).
                   "not": {"required": ["exercise", "entry_point"]}}

    code = fields.String(required=True, validate=validate.Length(min=1, max=MAX_CODE_CHARS),
                         metadata={"description": "Python source to run in the sandbox"})
    exercise = fields.String(
        validate=[validate.Length(min=3, max=64), validate.Regexp(r"^[a-z0-9]+(?:-[a-z0-9]+)*$", error="a slug")],
        metadata={"description": "A published code exercise's slug: run with its entry point and sample inputs "
                                 "(its page's \"Run\" button), instead of entry_point and inputs. A learner token "
                                 "names only its own exercises"})
    version = fields.Integer(validate=validate.Range(min=1, max=2**31 - 1), metadata={
        "description": "With `exercise`, for a course's staff: that version of their course's exercise, published "
                       "or a draft (the preview's \"Run\"); the run counts for nobody"})
    entry_point = fields.String(
        validate=Pattern(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$", error="a Python class name"),
        metadata={"description": "Name of a torch.autograd.Function subclass in the code; with inputs, "
                                 "forward, backward (grad_output = ones) and gradcheck are run"})
    inputs = fields.List(fields.Dict(metadata=_input_spec_schema()), validate=validate.Length(min=1, max=16), metadata={
        "description": "One entry per forward argument, in call order, e.g. {\"type\": \"tensor\", \"shape\": [4], "
                       "\"range\": [-2, 2]}, {\"type\": \"tensor\", \"value\": [-2.0, 0.3]}, "
                       "{\"type\": \"tensor\", \"dtype\": \"int64\", \"value\": [0, 2]}, {\"type\": \"float\", "
                       "\"value\": 1.0} or {\"type\": \"ints\", \"value\": [2, 3], \"container\": \"size\"} "
                       "(the [[code.inputs]] format of service/grading/spec.py; validated there)"})
    gradgradcheck = JsonBoolean(load_default=False, metadata={
        "description": "Also check double backward, as torch.autograd.gradgradcheck (fast_mode off) would, for "
                       "random grad_outputs (shown in result.gradgradcheck.grad_outputs): the check 'gradgradcheck' "
                       "of the result. With entry_point and inputs; default false. A run of an exercise whose "
                       "[code] table asks for it makes it too"})
    forward_ad = JsonBoolean(load_default=False, metadata={
        "description": "Also check forward mode: the Function's jvp against finite differences of forward along "
                       "random tangents, for zero tangents and for each input alone having a tangent, and against "
                       "backward (the dot-product test), as torch.autograd.gradcheck(check_forward_ad=True) asks: "
                       "the check 'forward_ad' of the result. With entry_point and inputs; default false. A run of "
                       "an exercise whose [code] table asks for it makes it too"})
    in_place = JsonBoolean(load_default=False, metadata={
        "description": "The Function changes an input in place (ctx.mark_dirty): call it on clones of the inputs "
                       "that require grad (torch refuses such a leaf marked dirty), and check it inside a bigger "
                       "expression: the input it changes marked dirty and returned, the gradient through it against "
                       "finite differences, a leaf refused: the check 'in_place' of the result. Default false; a run "
                       "of an exercise whose [code] table asks for it makes it too"})
    vmap = JsonBoolean(load_default=False, metadata={
        "description": "Also check the Function under torch.func.vmap (batched against one call per batch entry, "
                       "outputs and gradients, with in_dims and out_dims other than 0) and backward for a batch of "
                       "grad_outputs at once (as gradcheck's check_batched_grad): the checks 'vmap' and "
                       "'batched_grad' of the result. Default false; a run of an exercise whose [code] table asks "
                       "for it makes it too"})
    wait = fields.Float(load_default=DEFAULT_RUN_WAIT, validate=validate.Range(min=0, max=MAX_WAIT_SECONDS),
                        metadata={"description": "Seconds to hold the request for the result (default 10)"})


class RunSchema(Schema):
    id = fields.UUID(required=True)
    status = fields.Method("public_status", required=True, metadata={
        "type": "string", "enum": ["queued", "running", "finished", "error"],
        "description": "finished: the code ran (whatever it did); error: the sandbox itself failed"})
    entry_point = fields.String(allow_none=True)
    inputs = fields.List(fields.Dict(), allow_none=True)
    exercise = fields.Function(lambda run: run.exercise.slug if run.exercise_id is not None else None, metadata={
        "type": ["string", "null"], "description": "The exercise the run counts for (its rules' runs and max_runs): the one "
                                        "whose entry point and sample inputs it used, or, for a free run of a learner "
                                        "token that reaches one code exercise, that exercise"})
    learner = fields.String(allow_none=True, metadata={
        "description": "The learner whose token made the run; null for a run made with an API key"})
    gradgradcheck = fields.Boolean(required=True, metadata={"description": "Whether double backward is checked too"})
    forward_ad = fields.Boolean(required=True, metadata={"description": "Whether forward mode (jvp) is checked too"})
    in_place = fields.Boolean(required=True, metadata={"description": "Whether the Function is called on clones and "
                                                                       "checked as an in-place Function"})
    vmap = fields.Boolean(required=True, metadata={"description": "Whether the Function is checked under vmap too"})
    result = fields.Dict(allow_none=True, metadata={
        "description": "stdout, stderr, the exception if any, and with entry_point and inputs: forward, "
                       "gradients, the checks with diagnostics (gradcheck: the full Jacobian, or "
                       "jacobian_projections for a large one; gradgradcheck's Jacobian when asked; the optional checks asked "
                       "for, and a custom op's opcheck tests, among the checks), passed and likely_causes"})
    diagnosis = fields.Nested(DiagnosisSchema, allow_none=True, metadata={
        "description": "Once finished: what the result opens with, made from it (one verdict line, the likely cause "
                       "with what to do, one failing case in the learner's terms); null until then"})
    created_at = fields.DateTime(required=True)
    started_at = fields.DateTime(allow_none=True)
    finished_at = fields.DateTime(allow_none=True, attribute="graded_at")

    def get_attribute(self, obj: Any, attr: str, default: Any) -> Any:
        if attr == "diagnosis":
            return run_diagnosis(obj)
        return super().get_attribute(obj, attr, default)

    @staticmethod
    def public_status(run) -> str:
        return "finished" if run.status == "graded" else run.status
