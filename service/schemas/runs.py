from __future__ import annotations

from marshmallow import Schema, fields, validate

from .attempts import MAX_CODE_CHARS, MAX_WAIT_SECONDS

DEFAULT_RUN_WAIT = 10


class RunCreateSchema(Schema):
    code = fields.String(required=True, validate=validate.Length(min=1, max=MAX_CODE_CHARS),
                         metadata={"description": "Python source to run in the sandbox"})
    entry_point = fields.String(
        validate=validate.Regexp(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$", error="a Python class name"),
        metadata={"description": "Name of a torch.autograd.Function subclass in the code; with inputs, "
                                 "forward, backward (grad_output = ones) and gradcheck are run"})
    inputs = fields.List(fields.Dict(), validate=validate.Length(min=1, max=16), metadata={
        "description": "One entry per forward argument, e.g. {\"type\": \"tensor\", \"shape\": [4], "
                       "\"range\": [-2, 2]}, {\"type\": \"tensor\", \"value\": [-2.0, 0.3]} or "
                       "{\"type\": \"float\", \"value\": 1.0} (the [[code.inputs]] format of service/grading/spec.py)"})
    wait = fields.Float(load_default=DEFAULT_RUN_WAIT, validate=validate.Range(min=0, max=MAX_WAIT_SECONDS),
                        metadata={"description": "Seconds to hold the request for the result (default 10)"})


class RunSchema(Schema):
    id = fields.UUID(required=True)
    status = fields.Method("public_status", required=True, metadata={
        "type": "string", "enum": ["queued", "running", "finished", "error"],
        "description": "finished: the code ran (whatever it did); error: the sandbox itself failed"})
    entry_point = fields.String(allow_none=True)
    inputs = fields.List(fields.Dict(), allow_none=True)
    result = fields.Dict(allow_none=True, metadata={
        "description": "stdout, stderr, the exception if any, and with entry_point and inputs: forward, "
                       "gradient and gradcheck with diagnostics"})
    created_at = fields.DateTime(required=True)
    started_at = fields.DateTime(allow_none=True)
    finished_at = fields.DateTime(allow_none=True, attribute="graded_at")

    @staticmethod
    def public_status(run) -> str:
        return "finished" if run.status == "graded" else run.status
