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

The entry point is a ``torch.autograd.Function`` subclass, or a function made a custom op by a
``@torch.library.custom_op(...)`` decorator (the custom-op checks are then made unasked). An entry
taken from public code says where from in its ``why`` (``after <repo>/<path>``): written anew in the
corpus's format, its mistake (if any) the one people make there.

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
    # forward mode (forward_ad)
    "jvp_missing", "jvp_ignores_tangent", "jvp_wrong_derivative", "jvp_wrong_count", "jvp_wrong_shape",
    "jvp_missing_tangent", "jvp_backward_disagree", "jvp_signature", "jvp_not_saved_for_forward",
    "jvp_modifies_tangent", "jvp_not_in_place", "jvp_error", "forward_not_repeatable",
    # batching (vmap, batched_grad)
    "vmap_setup_context_missing", "vmap_rule_missing", "vmap_in_place", "vmap_data_dependent",
    "vmap_wrong_out_dims", "vmap_mismatch", "vmap_error", "batched_grad_mismatch",
    # in-place Functions (in_place)
    "not_marked_dirty", "dirty_not_returned", "overwritten_input", "leaf_in_place", "dirty_not_input",
    # custom ops (op_schema, op_autograd_registration, op_fake_tensor, op_aot_dispatch)
    "op_undeclared_mutation", "op_output_aliases_input", "op_no_autograd_formula", "op_autograd_wrong_key",
    "op_setup_context_error", "op_no_fake_kernel", "op_fake_wrong_metadata", "op_fake_kernel_error",
    "op_not_traceable", "op_compiled_differs",
})
#: Checks an incorrect entry may name as the one its run must fail.
FAILING_CHECKS = frozenset({
    "gradcheck", "jacobian_projections", "random_vjp", "inputs_unchanged", "grad_output_unchanged", "backward_arity",
    "needs_input_grad", "gradgradcheck", "forward_ad", "vmap", "batched_grad", "in_place",
    *("op_schema", "op_autograd_registration", "op_fake_tensor", "op_aot_dispatch"),
})
#: Options an entry may give its run (the run request's fields besides code, entry_point, inputs).
OPTIONS = {"gradgradcheck": bool, "forward_ad": bool, "vmap": bool, "in_place": bool}
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
    custom_op: bool = False        # the entry point is a torch.library.custom_op, not a Function

    @property
    def run_options(self) -> tuple[str, ...]:
        """The options asked for, as Judge.run takes them."""
        return tuple(name for name, on in self.options.items() if on)

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
    custom_op = any(isinstance(node, ast.FunctionDef) and node.name == entry_point and _is_custom_op(node)
                    for node in tree.body)
    if not custom_op and not any(isinstance(node, ast.ClassDef) and node.name == entry_point for node in tree.body):
        raise CorpusError(f"source defines no top-level class {entry_point} (nor a custom op of that name)")
    if not any(isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_torch(node) for node in tree.body):
        raise CorpusError("source does not import torch")

    return CorpusEntry(
        path=path, name=path.stem, correct=correct, entry_point=entry_point, inputs=inputs,
        failing_check=failing_check, cause=cause, why=why, source=source, options=options, custom_op=custom_op,
    )


def _is_custom_op(node: ast.FunctionDef) -> bool:
    """Whether a function is decorated with ``torch.library.custom_op(...)`` (or ``custom_op(...)``)."""
    for deco in node.decorator_list:
        func = deco.func if isinstance(deco, ast.Call) else deco
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "custom_op":
            return True
    return False


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
    """Exec the entry's source in a fresh namespace and return its Function class (or custom op).

    The source is registered in ``linecache`` under a fake file name first, so ``inspect`` (and with
    it ``@torch.jit.script``) can find the source of functions defined in it.
    """
    import torch

    filename = source_filename(entry)
    linecache.cache[filename] = (len(entry.source), None, entry.source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"gradquiz_corpus_{entry.name}", "__file__": filename}
    exec(compile(entry.source, filename, "exec"), namespace)  # noqa: S102 - trusted corpus source
    fn = namespace.get(entry.entry_point)
    if entry.custom_op:
        if not isinstance(fn, torch._library.custom_ops.CustomOpDef):
            raise CorpusError(f"{entry.name}: {entry.entry_point} is not a custom op")
    elif not (isinstance(fn, type) and issubclass(fn, torch.autograd.Function)):
        raise CorpusError(f"{entry.name}: {entry.entry_point} is not a torch.autograd.Function subclass")
    return fn


def entry_call(fn: Any, *, in_place: bool = False):
    """How a run calls the entry point: ``Fn.apply`` or the custom op itself; with ``in_place``
    (an in-place Function), on clones of its tensor inputs, as a run with that option does."""
    import torch

    call = fn.apply if isinstance(fn, type) else fn
    if not in_place:
        return lambda *a: call(*a)
    return lambda *a: call(*(x.clone() if isinstance(x, torch.Tensor) else x for x in a))


def torch_gradcheck(entry: CorpusEntry) -> tuple[bool, str]:
    """(passed, message) of torch.autograd.gradcheck (slow mode) on the entry's Function.

    The message is empty when it passed, else the exception's type and text.
    """
    import torch

    fn = load_function(entry)
    args = build_args(entry, float64_copies=True)
    try:
        ok = torch.autograd.gradcheck(entry_call(fn, in_place=bool(entry.options.get("in_place"))), args,
                                      **GRADCHECK_KWARGS)
    except Exception as e:  # noqa: BLE001 - any failure of the check is the verdict
        return False, f"{type(e).__name__}: {e}"
    return bool(ok), "" if ok else "gradcheck returned False"


# --------------------------------------------------------------------------- torch's own verdicts on the newer checks

#: torch.library.opcheck's test behind each custom-op check.
OPCHECK_TESTS = {"op_schema": "test_schema", "op_autograd_registration": "test_autograd_registration",
                 "op_fake_tensor": "test_faketensor", "op_aot_dispatch": "test_aot_dispatch_dynamic"}
#: How many entries torch.func.vmap's batch has in torch_vmap (each its own scaling of the inputs).
VMAP_BATCH = 3


def _verdict(check) -> tuple[bool, str]:
    """(passed, message) of a torch check: a callable returning a bool or raising."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ok = check()
    except Exception as e:  # noqa: BLE001 - any failure of the check is the verdict
        return False, f"{type(e).__name__}: {str(e)[:300]}"
    return bool(ok), "" if ok else "the check returned False"


def _tensors(out: Any) -> tuple:
    import torch

    return tuple(o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, torch.Tensor))


def torch_forward_ad(call, args: tuple) -> tuple[bool, str]:
    """gradcheck(check_forward_ad=True) (fast mode off, backward checked too: its default)."""
    import torch

    return _verdict(lambda: torch.autograd.gradcheck(call, args, check_forward_ad=True, **GRADCHECK_KWARGS))


def torch_batched_grad(call, args: tuple) -> tuple[bool, str] | None:
    """gradcheck(check_batched_grad=True)'s batched-gradient test (None: gradcheck fails without it,
    so that test says nothing)."""
    import torch

    if not _verdict(lambda: torch.autograd.gradcheck(call, args, **GRADCHECK_KWARGS))[0]:
        return None
    return _verdict(lambda: torch.autograd.gradcheck(call, args, check_batched_grad=True, **GRADCHECK_KWARGS))


def torch_vmap(call, args: tuple) -> tuple[bool, str]:
    """torch.func.vmap of the call over a batch (every float tensor at dim 0, entry b scaled by
    1 + b/4) against one call per entry: each output, and the gradients of a weighted sum of the
    differentiable outputs, must be the entry's own."""
    import torch

    floats = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
    scales = [1.0 + b / 4 for b in range(VMAP_BATCH)]

    def entry(b: int) -> list:
        return [a.detach() * scales[b] if i in floats else a for i, a in enumerate(args)]

    def check() -> bool:
        batched = [torch.stack([a.detach() * s for s in scales]).requires_grad_(a.requires_grad) if i in floats else a
                   for i, a in enumerate(args)]
        in_dims = tuple(0 if i in floats else None for i in range(len(args)))
        outs = _tensors(torch.func.vmap(call, in_dims=in_dims)(*batched))
        weights = [torch.linspace(-1.0, 1.0, o.numel(), dtype=o.dtype).reshape(o.shape) if o.is_floating_point() else None
                   for o in outs]
        leaves = [batched[i] for i in floats if batched[i].requires_grad]
        total = sum((o * w).sum() for o, w in zip(outs, weights) if o.requires_grad and w is not None)
        grads = torch.autograd.grad(total, leaves, allow_unused=True) if leaves and torch.is_tensor(total) else ()
        for b in range(VMAP_BATCH):
            one = entry(b)
            for i in floats:
                one[i] = one[i].requires_grad_(args[i].requires_grad)
            ones = _tensors(call(*one))
            if len(ones) != len(outs) or any(o.shape[1:] != e.shape or not torch.allclose(o[b], e) for o, e in zip(outs, ones)):
                return False
            rg = [one[i] for i in floats if one[i].requires_grad]
            part = sum((e * w[b]).sum() for e, w in zip(ones, weights) if e.requires_grad and w is not None)
            if rg and torch.is_tensor(part):
                for g, e in zip(grads, torch.autograd.grad(part, rg, allow_unused=True)):
                    if (g is None) != (e is None) or (g is not None and not torch.allclose(g[b], e)):
                        return False
        return True

    return _verdict(check)


def torch_in_place(call, args: tuple) -> tuple[bool, str]:
    """gradcheck of the Function inside a bigger expression, on clones: its differentiable outputs
    and each input as it is after the call (changed in place), each times its own factor."""
    import torch

    def expression(*a: Any) -> Any:
        clones = [x.clone() if isinstance(x, torch.Tensor) and x.requires_grad else x for x in a]
        outs = _tensors(call(*clones))
        total = sum(1.5 * o for o in outs if o.requires_grad)
        return total + sum(0.5 * c for c in clones if isinstance(c, torch.Tensor) and c.requires_grad)

    return _verdict(lambda: torch.autograd.gradcheck(expression, args, **GRADCHECK_KWARGS))


def torch_opcheck(op, args: tuple) -> dict[str, tuple[bool, str]]:
    """torch.library.opcheck's four tests, by the name of our check for each."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = torch.library.opcheck(op, args, raise_exception=False)
    return {ours: (results[theirs] == "SUCCESS", "" if results[theirs] == "SUCCESS" else str(results[theirs])[:300])
            for ours, theirs in OPCHECK_TESTS.items()}


def torch_verdicts(entry: CorpusEntry, args: tuple) -> dict[str, tuple[bool, str]]:
    """torch's own verdict, by the name of our check, for each newer check the entry's run makes
    (forward_ad, vmap, batched_grad, in_place when asked for; opcheck's four tests for a custom op),
    on ``args`` (the values the run reports it used: float64 copies of float32 inputs)."""
    import torch

    fn = load_function(entry)
    in_place = bool(entry.options.get("in_place"))
    call = entry_call(fn, in_place=in_place)
    out: dict[str, tuple[bool, str]] = {}
    if entry.options.get("forward_ad"):
        out["forward_ad"] = torch_forward_ad(call, args)
    if entry.options.get("vmap"):
        out["vmap"] = torch_vmap(call, args)
        batched = torch_batched_grad(call, args)
        if batched is not None:
            out["batched_grad"] = batched
    if in_place:
        out["in_place"] = torch_in_place(entry_call(fn), args)
    if entry.custom_op:
        fresh = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                      for a in args)
        out.update(torch_opcheck(fn, fresh))
    return out
