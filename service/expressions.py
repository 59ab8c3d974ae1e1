"""A small, safe evaluator of arithmetic over named parameters: a numeric quiz item's answer
computed from the learner's own values ("2 * x", see docs/authoring.md, `[params]`).

The grammar, and nothing else: numbers, the declared parameter names, the constants `pi` and `e`,
binary `+ - * / **`, unary `-` and `+`, parentheses, and calls of one argument to FUNCTIONS
(`exp(x)`, `sqrt(2 * x)`). The text is parsed by `ast` (mode "eval", never executed) and every node
is checked against that grammar before anything is computed; evaluation walks the checked tree
with floats. Anything outside it (attributes, subscripts, keywords, comparisons, strings, lambdas,
an undeclared name) is an ExpressionError, and so is a result that is not a finite real number
(a division by zero, `log(0)`, an overflow, a negative number to a fractional power).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

MAX_LENGTH = 200

FUNCTIONS: dict[str, Callable[[float], float]] = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "abs": abs,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "tanh": math.tanh,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
#: Names a parameter may not take.
RESERVED = frozenset(FUNCTIONS) | frozenset(CONSTANTS)

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: _power(a, b),
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a}


def _power(base: float, exponent: float) -> float:
    result = base ** exponent
    if isinstance(result, complex):  # a negative base to a fractional power
        raise ValueError("a negative number to a fractional power")
    return result


class ExpressionError(ValueError):
    """The text is not in the grammar, or it does not evaluate to a finite real number."""


@dataclass(frozen=True)
class Expression:
    """A checked expression: `names` are the parameters it reads."""

    text: str
    names: frozenset[str]
    _tree: ast.expr

    def evaluate(self, values: Mapping[str, float]) -> float:
        """Its value for `values` (every name in `names`); ExpressionError if it is not finite."""
        try:
            result = _evaluate(self._tree, values)
        except (ArithmeticError, ValueError, TypeError) as exc:  # ZeroDivisionError, OverflowError, math domain
            raise ExpressionError(_reason(exc)) from None
        if not isinstance(result, float) or not math.isfinite(result):
            raise ExpressionError("the result is not a finite real number")
        return result


def _reason(exc: Exception) -> str:
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, OverflowError):
        return "the result is too large"
    return str(exc) or type(exc).__name__


def parse_expression(text: str, names: Collection[str]) -> Expression:
    """Check `text` against the grammar, with `names` the parameters it may read."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("an expression is a non-empty string")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"an expression is at most {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExpressionError(f"not an expression: {getattr(exc, 'msg', None) or exc}") from None
    used: set[str] = set()
    _check(tree.body, frozenset(names), used)
    return Expression(text, frozenset(used), tree.body)


def _check(node: ast.AST, names: frozenset[str], used: set[str]) -> None:  # noqa: C901
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"{node.value!r} is not a number")
    elif isinstance(node, ast.Name):
        if node.id in names:
            used.add(node.id)
        elif node.id not in CONSTANTS:
            known = ", ".join(sorted(names)) or "none"
            raise ExpressionError(f"unknown name {node.id!r} (parameters: {known}; constants: pi, e)")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise ExpressionError("only + - * / ** combine numbers")
        _check(node.left, names, used)
        _check(node.right, names, used)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise ExpressionError("only - and + go before a number")
        _check(node.operand, names, used)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(f"the functions are {', '.join(sorted(FUNCTIONS))}")
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise ExpressionError(f"{node.func.id}() takes one argument")
        _check(node.args[0], names, used)
    else:
        raise ExpressionError(f"{type(node).__name__.lower()} is not allowed: numbers, parameters, + - * / **, "
                              "parentheses and function calls only")


def _evaluate(node: ast.expr, values: Mapping[str, float]) -> float:
    # Only the node types _check let through reach here.
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, (int, float))
        return float(node.value)
    if isinstance(node, ast.Name):
        return float(values[node.id]) if node.id in values else CONSTANTS[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, values))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return float(FUNCTIONS[node.func.id](_evaluate(node.args[0], values)))
