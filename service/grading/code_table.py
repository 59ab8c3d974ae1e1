"""A code exercise's `[code]` table as typed, frozen data: what spec.py loads it into, and what the
planner, the judge and the registry of checks read. Its format, its defaults' meaning and its
validation: spec.py and docs/authoring.md ("code"). Stdlib only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT = 10.0
DEFAULT_MEMORY_MB = 1024


@dataclass(frozen=True)
class Tolerances:
    """How close is close enough; the [code.tolerances] format: spec.py and docs/authoring.md."""

    forward_rtol: float = 1e-6
    forward_atol: float = 1e-8
    grad_rtol: float = 1e-6
    grad_atol: float = 1e-8
    float32_rtol: float = 1e-4
    float32_atol: float = 1e-5
    eps: float = 1e-6
    gradcheck_atol: float = 1e-5
    gradcheck_rtol: float = 1e-3


DEFAULT_TOLERANCES = Tolerances()


@dataclass(frozen=True)
class InputSpec:
    """One forward argument, validated, defaults filled. Fields that do not apply are None."""

    type: str
    name: str | None = None
    description: str = ""
    dtype: str | None = None                     # tensor
    shape: tuple[int, ...] | None = None         # tensor
    requires_grad: bool | None = None            # tensor
    #: fixed values: a tensor's, flattened; a scalar; an "ints" list
    value: Any = None
    range: tuple[float, float] | None = None     # random values (a random bool: (0, 1))
    avoid: tuple[float, ...] | None = None
    avoid_margin: float | None = None
    #: random float tensors: intervals [low, high] each holding at least one of the values drawn
    cover: tuple[tuple[float, float], ...] | None = None
    container: str | None = None                 # ints

    @property
    def has_value(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        """The table form (fields that apply only): the inputs' share of the plan's seed material,
        and what an override in a variant starts from."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None or f.name == "description":
                out[f.name] = as_lists(v)
        return out

    def as_table(self) -> dict[str, Any]:
        """The entry as an author writes it (a tensor's fixed value nested, which sets its shape):
        valid input to the loaders again."""
        out = self.as_dict()
        if self.type == "tensor" and self.value is not None:
            out["value"] = nest(list(self.value), list(self.shape or ()))
            del out["shape"]
        return out


@dataclass(frozen=True)
class CaseSpec:
    """A variant or a boundary case: every input, some of them changed."""

    name: str
    inputs: tuple[InputSpec, ...]
    #: boundary cases: input name -> the gradient for grad_output = ones, flattened
    expected_grad: Mapping[str, tuple[float, ...]] | None = None


@dataclass(frozen=True)
class CodeSpec:
    """A code exercise's [code] table, validated, defaults filled (its format: spec.py and docs/authoring.md)."""

    entry_point: str
    call: str
    inputs: tuple[InputSpec, ...]
    random_cases: int = 3
    differentiable: bool = True
    gradgradcheck: bool = False
    #: also check forward mode: the Function's jvp (registry.OPTIONS)
    forward_ad: bool = False
    #: the Function changes an input in place (ctx.mark_dirty): called on clones, and checked so
    in_place: bool = False
    #: also check the Function under torch.func.vmap, and backward for a batch of grad_outputs
    vmap: bool = False
    #: the entry point is a custom op (torch.library.custom_op): torch.library.opcheck's tests too
    custom_op: bool = False
    strict_none: bool = False
    float32_case: bool = False
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    tolerances: Tolerances = DEFAULT_TOLERANCES
    variants: tuple[CaseSpec, ...] = ()
    boundary: tuple[CaseSpec, ...] = ()
    technique: tuple[str, ...] = ()
    #: every check's weight as written (defaults: registry.DEFAULT_WEIGHTS)
    weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: the checks that apply, weights normalised to sum to 1
    checks: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def options(self) -> frozenset[str]:
        """The optional checks the table asks for (registry.OPTIONS), by their `[code]` keys."""
        flags = (("gradgradcheck", self.gradgradcheck), ("forward_ad", self.forward_ad), ("in_place", self.in_place),
                 ("vmap", self.vmap), ("custom_op", self.custom_op))
        return frozenset(name for name, on in flags if on)

    @property
    def input_names(self) -> list[str]:
        return [inp.name or f"input {i}" for i, inp in enumerate(self.inputs)]

    def as_dict(self) -> dict[str, Any]:
        """Plain data (the seed material of the plan: a change here changes every drawn input)."""
        def case(c: CaseSpec) -> dict[str, Any]:
            out: dict[str, Any] = {"name": c.name, "inputs": [i.as_dict() for i in c.inputs]}
            if c.expected_grad is not None:
                out["expected_grad"] = {k: list(v) for k, v in c.expected_grad.items()}
            return out

        return {
            "entry_point": self.entry_point, "differentiable": self.differentiable, "gradgradcheck": self.gradgradcheck,
            "strict_none": self.strict_none, "technique": list(self.technique), "random_cases": self.random_cases,
            "timeout": self.timeout, "memory_mb": self.memory_mb, "tolerances": dataclasses.asdict(self.tolerances),
            "inputs": [i.as_dict() for i in self.inputs], "variants": [case(c) for c in self.variants],
            "boundary": [case(c) for c in self.boundary], "float32_case": self.float32_case,
            "weights": dict(self.weights), "checks": dict(self.checks), "call": self.call,
            # the options that came later, only when asked for: the seed material of a table without them is unchanged
            **{name: True for name in sorted(self.options - {"gradgradcheck"})},
        }


def as_lists(value: Any) -> Any:
    """Tuples, nested or not, as the lists a table writes."""
    return [as_lists(v) for v in value] if isinstance(value, tuple) else value


def nest(flat: list[Any], shape: list[int]) -> Any:
    """A flat list of values as the nested list of that shape."""
    if not shape:
        return flat[0]
    step = len(flat) // shape[0]
    return [nest(flat[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])]
