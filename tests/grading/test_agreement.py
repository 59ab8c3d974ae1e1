"""The run's gradcheck never disagrees with torch.autograd.gradcheck (fast_mode off) on the same inputs.

Over every reference and every known mistake of every code exercise, run on the exercise's own input
specs, and over the corpus of tests/grading/corpus: the judge decides from the child's numbers
(checks.py); torch's gradcheck runs here, in the test process, on the values the run reports it
used (float64 copies of float32 inputs, as the run checks them).
"""

from __future__ import annotations

import linecache

import pytest

from service.grading.runs import exercise_run_inputs
from service.grading.spec import load_code_spec
from tests.grading.corpus_support import GRADCHECK_KWARGS, load_corpus
from tests.grading.support import code_exercise_slugs, load_exercise

torch = pytest.importorskip("torch")

_DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64, "int32": torch.int32,
           "bool": torch.bool}


def _items() -> list[tuple[str, str, str, list]]:
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


ITEMS = _items()


def _args_from_run(inputs: list[dict]) -> tuple:
    """The run's reported inputs as torch arguments; float32 tensors that require grad as float64 copies."""
    args = []
    for item in inputs:
        kind = item["type"]
        if kind == "tensor":
            dtype = item["dtype"]
            if dtype == "float32" and item["requires_grad"]:
                dtype = "float64"
            t = torch.tensor(item["values"], dtype=_DTYPES[dtype]).reshape(item["shape"])
            args.append(t.requires_grad_(item["requires_grad"]))
        elif kind == "ints":
            container = {"tuple": tuple, "list": list, "size": torch.Size}[item["container"]]
            args.append(container(item["value"]))
        elif kind == "none":
            args.append(None)
        else:
            args.append(item["value"])
    return tuple(args)


def _load(source: str, entry_point: str):
    filename = f"<agreement {entry_point}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "agreement"}
    exec(compile(source, filename, "exec"), namespace)  # our own exercises and corpus
    return namespace[entry_point]


def _torch_gradcheck(source: str, entry_point: str, args: tuple) -> tuple[bool, str]:
    fn = _load(source, entry_point)
    try:
        return bool(torch.autograd.gradcheck(lambda *a: fn.apply(*a), args, **GRADCHECK_KWARGS)), ""
    except Exception as exc:  # noqa: BLE001 - any failure is torch's verdict
        return False, f"{type(exc).__name__}: {str(exc)[:300]}"


def test_the_agreement_covers_every_exercise_and_the_corpus():
    assert len(code_exercise_slugs()) >= 10
    corpus = load_corpus()
    assert sum(e.correct for e in corpus) >= 20 and sum(not e.correct for e in corpus) >= 15
    assert len(ITEMS) >= len(corpus) + 2 * len(code_exercise_slugs())


@pytest.mark.parametrize(("label", "source", "entry_point", "inputs"), ITEMS, ids=[i[0] for i in ITEMS])
def test_run_gradcheck_agrees_with_torch(judge, label, source, entry_point, inputs):
    result = judge.run(source, entry_point, inputs)
    assert result["status"] in ("ok", "error"), result
    if result.get("inputs") is None:  # forward (or loading) raised: torch's gradcheck raises too
        assert (result["gradcheck"] or {}).get("passed") is not True
        return
    torch_passed, torch_message = _torch_gradcheck(source, entry_point, _args_from_run(result["inputs"]))
    ours = (result["gradcheck"] or {}).get("passed", False)
    assert ours == torch_passed, (label, result["gradcheck"], torch_message)
