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
