"""The grading corpus: hand-written correct and incorrect custom autograd Functions.

Each file in ``tests/grading/corpus/`` is named ``correct_<what>.py`` or ``incorrect_<what>.py`` and
starts with a header of comment lines, then plain Python source defining the Function::

    # corpus: correct | incorrect
    # entry_point: ClampFn
    # inputs: [{"name": "x", "type": "tensor", "value": [1.0, 2.0]}, {"type": "float", "value": 1.0}]
    # options: {"gradgradcheck": true}   (optional: the run request's options)
    # failing_check: gradcheck          (incorrect only)
    # cause: forgot_grad_output         (incorrect only)
    # why: one sentence

A tensor gives its values (at most 16), or, for a large input, a ``shape`` and a ``range`` (up to
the run API's 1024 elements): the run draws the values from a generator seeded with the source.

``load_corpus()`` parses every file strictly (a malformed header raises ``CorpusError`` naming the
file); ``torch_gradcheck(entry)`` builds the inputs the way the run API does and runs
``torch.autograd.gradcheck`` (slow mode) on ``Fn.apply``: the reference verdict the grader's own
"gradcheck" check must agree with.
"""

from __future__ import annotations

import ast
import json
import keyword
import linecache
import math
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

CORPUS_DIR = pathlib.Path(__file__).resolve().parent / "corpus"

#: Likely-cause codes an incorrect entry may name.
CAUSES = frozenset({
    "forgot_grad_output", "wrong_sign", "constant_factor", "gradient_for_non_tensor",
    "wrong_number_of_returns", "not_reduced", "needs_input_grad", "grad_output_modified",
    "input_modified", "forward_error", "backward_error", "output_detached", "wrong_value",
    "float32_imprecise", "not_reentrant", "wrong_shape", "backward_not_differentiable",
})
#: Checks an incorrect entry may name as the one its run must fail.
FAILING_CHECKS = frozenset({
    "gradcheck", "jacobian_projections", "random_vjp", "inputs_unchanged", "grad_output_unchanged", "backward_arity",
    "needs_input_grad", "gradgradcheck",
})
#: Options an entry may give its run (the run request's fields besides code, entry_point, inputs).
OPTIONS = {"gradgradcheck": bool}
#: Checks that torch.autograd.gradcheck itself is expected to reproduce (the entry must fail it).
TORCH_GRADCHECK_CHECKS = frozenset({"gradcheck"})

TENSOR_DTYPES = ("float64", "float32", "int64", "int32", "bool")
FLOAT_DTYPES = ("float64", "float32")
CONTAINERS = ("tuple", "list", "size")
MAX_TENSOR_NUMEL = 16
#: A large input (shape and range instead of values): at most the run API's elements per tensor.
MAX_DRAWN_NUMEL = 1024

#: Header keys, in the order they must appear.
_CORRECT_KEYS = ("corpus", "entry_point", "inputs", "why")
_INCORRECT_KEYS = ("corpus", "entry_point", "inputs", "failing_check", "cause", "why")
_HEADER_LINE = re.compile(r"^# ([a-z_]+): (.*\S)\s*$")
_FILE_NAME = re.compile(r"^(correct|incorrect)_[a-z0-9]+(?:_[a-z0-9]+)*\.py$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

GRADCHECK_KWARGS = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3, "fast_mode": False, "raise_exception": True}


class CorpusError(ValueError):
    """A corpus file whose header (or inputs) is malformed."""


@dataclass(frozen=True)
class CorpusEntry:
    path: pathlib.Path
    name: str                      # file stem, e.g. "correct_softplus"
    correct: bool
    entry_point: str
    inputs: list                   # the parsed "inputs" JSON list
    failing_check: str | None      # incorrect only
    cause: str | None              # incorrect only
    why: str
    source: str                    # the whole file (header comments included, so line numbers match)
    options: dict = field(default_factory=dict)  # the run request's options, e.g. {"gradgradcheck": true}

    @property
    def large(self) -> bool:
        """Whether an input is drawn (shape and range) rather than given: a large input."""
        return any("shape" in raw for raw in self.inputs)


# --------------------------------------------------------------------------- parsing


def _nested_shape(value: Any) -> list[int] | None:
    if isinstance(value, list):
        if not value:
            return [0]
        shapes = [_nested_shape(v) for v in value]
        if any(s is None for s in shapes) or any(s != shapes[0] for s in shapes):
            return None
        return [len(value)] + shapes[0]
    if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
        return []
    return None


def _flatten(value: Any) -> list:
    if isinstance(value, list):
        return [v for item in value for v in _flatten(item)]
    return [value]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_input(raw: Any, where: str) -> None:  # noqa: C901
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: must be a JSON object")
    typ = raw.get("type")
    allowed = {"name", "type"}
    if "name" in raw and not (isinstance(raw["name"], str) and _IDENT.match(raw["name"])):
        raise CorpusError(f"{where}: name must be an identifier")
    if typ == "tensor" and "value" not in raw:
        allowed |= {"shape", "range", "dtype", "requires_grad"}
        shape, rng = raw.get("shape"), raw.get("range")
        if not (isinstance(shape, list) and shape and all(_is_int(d) and d > 0 for d in shape)):
            raise CorpusError(f"{where}: a tensor needs a value, or a shape (positive integers) and a range")
        if math.prod(shape) > MAX_DRAWN_NUMEL:
            raise CorpusError(f"{where}: a drawn tensor has at most {MAX_DRAWN_NUMEL} elements")
        if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, (int, float)) for v in rng) and rng[0] < rng[1]):
            raise CorpusError(f"{where}: range must be [low, high] with low < high")
        if raw.get("dtype", "float64") not in FLOAT_DTYPES or not isinstance(raw.get("requires_grad", True), bool):
            raise CorpusError(f"{where}: a drawn tensor is a float tensor")
    elif typ == "tensor":
        allowed |= {"value", "dtype", "requires_grad"}
        dtype = raw.get("dtype", "float64")
        if dtype not in TENSOR_DTYPES:
            raise CorpusError(f"{where}: dtype must be one of {', '.join(TENSOR_DTYPES)}")
        shape = _nested_shape(raw["value"])
        if shape is None:
            raise CorpusError(f"{where}: value must be a rectangular nested list of finite numbers")
        flat = _flatten(raw["value"])
        if len(flat) > MAX_TENSOR_NUMEL:
            raise CorpusError(f"{where}: at most {MAX_TENSOR_NUMEL} elements (got {len(flat)})")
        if dtype in FLOAT_DTYPES and not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat):
            raise CorpusError(f"{where}: a float tensor holds numbers")
        if dtype in ("int64", "int32") and not all(_is_int(v) for v in flat):
            raise CorpusError(f"{where}: an integer tensor holds integers")
        if dtype == "bool" and not all(isinstance(v, bool) for v in flat):
            raise CorpusError(f"{where}: a bool tensor holds true/false")
        rg = raw.get("requires_grad", dtype in FLOAT_DTYPES)
        if not isinstance(rg, bool):
            raise CorpusError(f"{where}: requires_grad must be true or false")
        if rg and dtype not in FLOAT_DTYPES:
            raise CorpusError(f"{where}: only float tensors can require grad")
    elif typ == "float":
        allowed |= {"value"}
        v = raw.get("value")
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)):
            raise CorpusError(f"{where}: a float needs a finite numeric value")
    elif typ == "int":
        allowed |= {"value"}
        if not _is_int(raw.get("value")):
            raise CorpusError(f"{where}: an int needs an integer value")
    elif typ == "bool":
        allowed |= {"value"}
        if not isinstance(raw.get("value"), bool):
            raise CorpusError(f"{where}: a bool needs true or false")
    elif typ == "none":
        pass
    elif typ == "ints":
        allowed |= {"value", "container"}
        v = raw.get("value")
        if not (isinstance(v, list) and all(_is_int(i) for i in v)):
            raise CorpusError(f"{where}: ints needs a list of integers")
        if raw.get("container", "tuple") not in CONTAINERS:
            raise CorpusError(f"{where}: container must be one of {', '.join(CONTAINERS)}")
    else:
        raise CorpusError(f"{where}: unknown type {typ!r}")
    extra = set(raw) - allowed
    if extra:
        raise CorpusError(f"{where}: unknown keys for type {typ}: {', '.join(sorted(extra))}")


def parse_file(path: pathlib.Path) -> CorpusEntry:
    """Parse one corpus file; raise CorpusError (naming the file) if anything is malformed."""
    path = pathlib.Path(path)
    fname = path.name
    try:
        return _parse(path)
    except CorpusError as e:
        raise CorpusError(f"{fname}: {e}") from None


def _parse(path: pathlib.Path) -> CorpusEntry:  # noqa: C901
    if not _FILE_NAME.match(path.name):
        raise CorpusError("file name must be correct_<what>.py or incorrect_<what>.py (lower-case, underscores)")
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    header: dict[str, str] = {}
    order: list[str] = []
    n = 0
    for n, line in enumerate(lines):
        if not line.startswith("#"):
            break
        m = _HEADER_LINE.match(line)
        if not m:
            raise CorpusError(f"line {n + 1}: header lines read '# key: value' (got {line!r})")
        key, value = m.group(1), m.group(2)
        if key in header:
            raise CorpusError(f"line {n + 1}: duplicate header key {key!r}")
        header[key] = value
        order.append(key)
    else:
        raise CorpusError("no source after the header")
    if n == 0:
        raise CorpusError("missing header")

    kind = header.get("corpus")
    if kind not in ("correct", "incorrect"):
        raise CorpusError("'# corpus:' must be correct or incorrect")
    correct = kind == "correct"
    if not path.name.startswith(kind + "_"):
        raise CorpusError(f"'# corpus: {kind}' but the file name does not start with {kind}_")
    expected = _CORRECT_KEYS if correct else _INCORRECT_KEYS
    if "options" in order:  # optional, right after inputs
        expected = expected[:3] + ("options",) + expected[3:]
    if tuple(order) != expected:
        raise CorpusError(f"header keys must be, in order: {', '.join(expected)} (got {', '.join(order)})")

    entry_point = header["entry_point"]
    if not _IDENT.match(entry_point) or keyword.iskeyword(entry_point):
        raise CorpusError(f"entry_point {entry_point!r} is not an identifier")

    try:
        inputs = json.loads(header["inputs"])
    except json.JSONDecodeError as e:
        raise CorpusError(f"inputs is not valid JSON: {e}") from None
    if not isinstance(inputs, list) or not inputs:
        raise CorpusError("inputs must be a non-empty JSON list")
    for i, raw in enumerate(inputs):
        _check_input(raw, f"inputs[{i}]")
    if not any(_requires_grad(raw) for raw in inputs):
        raise CorpusError("no input requires grad")

    options: dict = {}
    if "options" in header:
        try:
            options = json.loads(header["options"])
        except json.JSONDecodeError as e:
            raise CorpusError(f"options is not valid JSON: {e}") from None
        if not isinstance(options, dict) or any(k not in OPTIONS or not isinstance(v, OPTIONS[k]) for k, v in options.items()):
            raise CorpusError(f"options must be an object of {', '.join(OPTIONS)}")

    failing_check = cause = None
    if not correct:
        failing_check, cause = header["failing_check"], header["cause"]
        if failing_check not in FAILING_CHECKS:
            raise CorpusError(f"failing_check {failing_check!r} unknown (known: {', '.join(sorted(FAILING_CHECKS))})")
        if cause not in CAUSES:
            raise CorpusError(f"cause {cause!r} unknown (known: {', '.join(sorted(CAUSES))})")
    why = header["why"]
    if len(why) < 10:
        raise CorpusError("why must be a sentence")

    try:
        tree = ast.parse(source, filename=path.name)
    except SyntaxError as e:
        raise CorpusError(f"source does not parse: {e}") from None
    if not any(isinstance(node, ast.ClassDef) and node.name == entry_point for node in tree.body):
        raise CorpusError(f"source defines no top-level class {entry_point}")
    if not any(isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_torch(node) for node in tree.body):
        raise CorpusError("source does not import torch")

    return CorpusEntry(
        path=path, name=path.stem, correct=correct, entry_point=entry_point, inputs=inputs,
        failing_check=failing_check, cause=cause, why=why, source=source, options=options,
    )


def _imports_torch(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "torch" or a.name.startswith("torch.") for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch"


def _requires_grad(raw: dict) -> bool:
    return raw.get("type") == "tensor" and raw.get("requires_grad", raw.get("dtype", "float64") in FLOAT_DTYPES)


def load_corpus(directory: pathlib.Path | str = CORPUS_DIR) -> list[CorpusEntry]:
    """Every corpus entry, sorted by file name (correct_* before incorrect_*)."""
    directory = pathlib.Path(directory)
    paths = sorted(p for p in directory.glob("*.py") if p.is_file())
    strays = [p.name for p in directory.iterdir() if p.is_file() and p.suffix != ".py"]
    if strays:
        raise CorpusError(f"{directory}: unexpected files {', '.join(sorted(strays))}")
    if not paths:
        raise CorpusError(f"{directory}: no corpus files")
    return [parse_file(p) for p in paths]


# --------------------------------------------------------------------------- running


def build_args(entry: CorpusEntry, *, float64_copies: bool = True) -> tuple:
    """The arguments of ``Fn.apply(...)``, built as the run API builds them.

    Tensors are float64 unless their dtype says otherwise; float tensors require grad unless
    ``requires_grad`` is false; other dtypes never do. With ``float64_copies`` (what gradcheck runs
    on), float32 tensors that require grad become float64 copies. Not for a large entry (its values
    are drawn by the run: take them from the run's result).
    """
    import torch

    if entry.large:
        raise CorpusError(f"{entry.name}: a large entry's values are drawn by the run")
    args: list[Any] = []
    for raw in entry.inputs:
        typ = raw["type"]
        if typ == "tensor":
            dtype_name = raw.get("dtype", "float64")
            rg = _requires_grad(raw)
            if float64_copies and rg and dtype_name == "float32":
                dtype_name = "float64"
            t = torch.tensor(raw["value"], dtype=getattr(torch, dtype_name))
            args.append(t.requires_grad_(rg))
        elif typ == "float":
            args.append(float(raw["value"]))
        elif typ in ("int", "bool"):
            args.append(raw["value"])
        elif typ == "none":
            args.append(None)
        elif typ == "ints":
            container = raw.get("container", "tuple")
            vals = [int(v) for v in raw["value"]]
            args.append(torch.Size(vals) if container == "size" else list(vals) if container == "list" else tuple(vals))
        else:  # pragma: no cover - rejected by the parser
            raise CorpusError(f"{entry.name}: unknown input type {typ!r}")
    return tuple(args)


def source_filename(entry: CorpusEntry) -> str:
    """The fake file name the source is compiled under (registered in linecache)."""
    return f"<gradquiz-corpus:{entry.name}.py>"


def load_function(entry: CorpusEntry):
    """Exec the entry's source in a fresh namespace and return its Function class.

    The source is registered in ``linecache`` under a fake file name first, so ``inspect`` (and with
    it ``@torch.jit.script``) can find the source of functions defined in it.
    """
    import torch

    filename = source_filename(entry)
    linecache.cache[filename] = (len(entry.source), None, entry.source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"gradquiz_corpus_{entry.name}", "__file__": filename}
    exec(compile(entry.source, filename, "exec"), namespace)  # noqa: S102 - trusted corpus source
    fn = namespace.get(entry.entry_point)
    if not (isinstance(fn, type) and issubclass(fn, torch.autograd.Function)):
        raise CorpusError(f"{entry.name}: {entry.entry_point} is not a torch.autograd.Function subclass")
    return fn


def torch_gradcheck(entry: CorpusEntry) -> tuple[bool, str]:
    """(passed, message) of torch.autograd.gradcheck (slow mode) on the entry's Function.

    The message is empty when it passed, else the exception's type and text.
    """
    import torch

    fn = load_function(entry)
    args = build_args(entry, float64_copies=True)
    try:
        ok = torch.autograd.gradcheck(lambda *a: fn.apply(*a), args, **GRADCHECK_KWARGS)
    except Exception as e:  # noqa: BLE001 - any failure of the check is the verdict
        return False, f"{type(e).__name__}: {e}"
    return bool(ok), "" if ok else "gradcheck returned False"
