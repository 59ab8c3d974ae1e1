"""Helpers of the grading tests: exercise folders read as the catalog stores them."""

from __future__ import annotations

import pathlib
import tomllib

EXERCISES = pathlib.Path(__file__).resolve().parents[2] / "exercises"
SECRET = b"grading-tests-secret-0123456789"


def load_exercise(slug: str) -> dict:
    """{"slug", "spec", "files"}: what the catalog stores for one version."""
    folder = EXERCISES / slug
    files = {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
    spec = tomllib.loads(files.pop("exercise.toml"))
    return {"slug": slug, "spec": spec, "files": files}


def code_exercise_slugs() -> list[str]:
    slugs = []
    for folder in sorted(EXERCISES.iterdir()):
        toml = folder / "exercise.toml"
        if toml.is_file() and tomllib.loads(toml.read_text(encoding="utf-8")).get("kind") == "code":
            slugs.append(folder.name)
    return slugs


# A ClampFn whose backward has the wrong sign everywhere, boundary points included: the code the
# tamper tests (grading and hostile) put their tricks after.
WRONG_SIGN_CLAMPFN = '''
import torch


class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return -grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None
'''


# A small sound code exercise to break one file at a time (the SinFn): the proof's tests
# and the command line's take it from here.
SIN_TOML = '''title = "SinFn: sine with its own backward"
kind = "code"
prompt = """
Write `SinFn`, a `torch.autograd.Function` computing `sin(x)`, with its own backward.
"""
topics = ["custom-function", "backward"]
difficulty = 1
explanation = """
The derivative of sin is cos: `backward` returns `grad_output * torch.cos(x)`.
"""

[code]
entry_point = "SinFn"

[[code.inputs]]
name = "x"
type = "tensor"
shape = [5]
range = [-3.0, 3.0]
description = "a float64 tensor"

[[code.boundary]]
name = "at zero"
set = { x = { value = [0.0] } }
expected_grad = { x = [1.0] }
'''

SIN_REFERENCE = '''import torch


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)
'''

SIN_STARTER = '''import torch


class SinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ...

    @staticmethod
    def backward(ctx, grad_output):
        ...
'''

SIN_FORGOT_GRAD_OUTPUT = '''# expect: forgot_grad_output
# fails: gradcheck, gradient
''' + SIN_REFERENCE.replace("return grad_output * torch.cos(x)", "return torch.cos(x)")


def sin_exercise(changes: dict[str, str | None] | None = None) -> dict[str, bytes]:
    """The SinFn exercise's files (path -> bytes), with `changes` made (path -> new text, or None
    to remove the file)."""
    files: dict[str, str | None] = {"exercise.toml": SIN_TOML, "reference.py": SIN_REFERENCE,
                                    "starter.py": SIN_STARTER, "wrong/forgot_grad_output.py": SIN_FORGOT_GRAD_OUTPUT}
    files.update(changes or {})
    return {path: text.encode() for path, text in files.items() if text is not None}


def write_exercise(root: pathlib.Path, slug: str, files: dict[str, bytes]) -> pathlib.Path:
    """An exercise folder `root/slug` holding `files`."""
    for path, data in files.items():
        target = root / slug / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root / slug
