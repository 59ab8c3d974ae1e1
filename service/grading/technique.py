"""Techniques an exercise teaches, read from the submission's source by the trusted judge.

Some exercises teach a way of writing a Function whose numbers are the same as another way's:
torch 2's `setup_context`, saving the output instead of recomputing it, marking an output
non-differentiable, asking for None gradients (`ctx.set_materialize_grads(False)`), marking a
backward that cannot be differentiated again (`@once_differentiable`). Forward values and gradients cannot tell these apart; the code can. The judge
reads the syntax tree (nothing is executed), so the submission cannot fake this check either.

Torch-free and stdlib only: imported by the web process too (for validation).
"""

from __future__ import annotations

import ast

#: name -> (what the check asks, shown to learners; the likely cause when it is missing)
TECHNIQUES: dict[str, tuple[str, str]] = {
    "setup_context": ("forward takes no ctx, and a setup_context(ctx, inputs, output) static method keeps "
                      "what backward needs (torch 2 style).", "setup_context_missing"),
    "saves_output": ("forward's output is what is saved for backward (ctx.save_for_backward(output)), "
                     "so backward reuses it instead of recomputing it.", "output_not_saved"),
    "mark_non_differentiable": ("The output that carries no gradient is marked with "
                                "ctx.mark_non_differentiable(...).", "not_marked_non_differentiable"),
    "materialize_grads_off": ("forward or setup_context calls ctx.set_materialize_grads(False), so backward is "
                              "given None, not zeros, for an output that gets no gradient.", "materialize_grads_on"),
    "once_differentiable": ("backward is decorated with @once_differentiable: it runs without recording, and says "
                            "that it cannot be differentiated again.", "once_differentiable_missing"),
}


def _entry_class(tree: ast.Module, entry_point: str) -> ast.ClassDef | None:
    found = None
    for node in tree.body:  # the last definition wins, as at run time
        if isinstance(node, ast.ClassDef) and node.name == entry_point:
            found = node
    return found


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _calls(node: ast.AST, attribute: str) -> list[ast.Call]:
    return [n for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == attribute]


def _names(node: ast.AST) -> set[str]:
    """Names a returned or saved expression is made of: `y`, `(y, i)`, `output[0]`."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_names(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Subscript):
        return _names(node.value)
    if isinstance(node, ast.Starred):
        return _names(node.value)
    return set()


def _output_names(methods: dict[str, ast.FunctionDef]) -> set[str]:
    names: set[str] = set()
    forward = methods.get("forward")
    if forward is not None:
        for ret in (n for n in ast.walk(forward) if isinstance(n, ast.Return)):
            if ret.value is not None:
                names |= _names(ret.value)
    setup = methods.get("setup_context")
    if setup is not None:
        params = [a.arg for a in setup.args.posonlyargs + setup.args.args]
        if len(params) >= 3:
            names.add(params[2])
            # `out, _ = output` or `values = output[0]` inside setup_context
            for assign in (n for n in ast.walk(setup) if isinstance(n, ast.Assign)):
                if _names(assign.value) & {params[2]}:
                    for target in assign.targets:
                        names |= _names(target)
    return names


def _materializes_not(call: ast.Call) -> bool:
    """`ctx.set_materialize_grads(False)` (or `value=False`)."""
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "value")]
    return len(args) == 1 and isinstance(args[0], ast.Constant) and args[0].value is False


def _decorated(method: ast.FunctionDef | None, name: str) -> bool:
    """`method` carries the decorator `name` (`@name`, `@module.name`)."""
    return method is not None and any(
        (isinstance(d, ast.Name) and d.id == name) or (isinstance(d, ast.Attribute) and d.attr == name)
        for d in method.decorator_list)


def _uses(methods: dict[str, ast.FunctionDef], technique: str) -> bool:
    saving = [m for name, m in methods.items() if name in ("forward", "setup_context")]
    if technique == "setup_context":
        return "setup_context" in methods
    if technique == "mark_non_differentiable":
        return any(_calls(m, "mark_non_differentiable") for m in saving)
    if technique == "materialize_grads_off":
        return any(_materializes_not(call) for m in saving for call in _calls(m, "set_materialize_grads"))
    if technique == "once_differentiable":
        return _decorated(methods.get("backward"), "once_differentiable")
    if technique == "saves_output":
        saved = {name for m in saving for call in _calls(m, "save_for_backward")
                 for arg in call.args for name in _names(arg)}
        return bool(saved & _output_names(methods))
    raise ValueError(f"unknown technique {technique!r}")


def missing_techniques(source: str, entry_point: str, required: list[str]) -> list[str]:
    """The required techniques the entry point's class does not use (all of them when the
    source does not parse or defines no such class)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return list(required)
    cls = _entry_class(tree, entry_point)
    if cls is None:
        return list(required)
    methods = _methods(cls)
    return [t for t in required if not _uses(methods, t)]
