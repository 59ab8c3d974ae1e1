"""What the agreement tests share: every reference, known mistake and corpus Function with its inputs,
and the run's reported inputs as torch arguments (needs torch)."""

from __future__ import annotations

import linecache

import pytest

from service.grading.runs import exercise_run_inputs
from service.grading.spec import load_code_spec
from tests.grading.corpus_support import load_corpus
from tests.grading.support import code_exercise_slugs, load_exercise

torch = pytest.importorskip("torch")

DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64, "int32": torch.int32,
          "bool": torch.bool}


def agreement_items() -> list[tuple[str, str, str, list]]:
    items = []
    for slug in code_exercise_slugs():
        ex = load_exercise(slug)
        code, _ = load_code_spec(ex["spec"])
        inputs = exercise_run_inputs(code)
        for path, text in sorted(ex["files"].items()):
            if path == "reference.py" or (path.startswith("wrong/") and path.endswith(".py")):
                items.append((f"{slug}/{path}", text, code.entry_point, inputs))
    for entry in load_corpus():
        items.append((f"corpus/{entry.name}", entry.source, entry.entry_point, entry.inputs))
    return items


ITEMS = agreement_items()


def args_from_run(inputs: list[dict]) -> tuple:
    """The run's reported inputs as torch arguments; float32 tensors that require grad as float64 copies."""
    args = []
    for item in inputs:
        kind = item["type"]
        if kind == "tensor":
            dtype = item["dtype"]
            if dtype == "float32" and item["requires_grad"]:
                dtype = "float64"
            t = torch.tensor(item["values"], dtype=DTYPES[dtype]).reshape(item["shape"])
            args.append(t.requires_grad_(item["requires_grad"]))
        elif kind == "ints":
            container = {"tuple": tuple, "list": list, "size": torch.Size}[item["container"]]
            args.append(container(item["value"]))
        elif kind == "none":
            args.append(None)
        else:
            args.append(item["value"])
    return tuple(args)


def load_function(source: str, entry_point: str):
    filename = f"<agreement {entry_point}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "agreement"}
    exec(compile(source, filename, "exec"), namespace)  # our own exercises and corpus
    return namespace[entry_point]
