"""The choices the judge and the child both make, made in one place: the same rule, the same numbers.

The judge plans a case and checks what the child reports; the child carries the plan out. Where
both must arrive at the same thing, it is defined here once, over plain numbers, and each side
calls it with its own data (the judge with its ``cases.Arg``, the child with the task's JSON and
its tensors):

- ``numel``: the number of elements of a shape;
- ``jacobian_mode``: how a Jacobian plan is carried out once forward's outputs are known ("full",
  "projections" or "too_large"); the judge refuses a report whose mode is not the one this rule
  gives (``cases.JacobianPlan.mode``, ``harness._gradcheck_numbers``);
- ``projection_vectors``: the input directions u and grad_outputs v of a projection check, which
  the child uses and the judge redraws (``checks.projection_numbers``);
- ``seeded_vectors``: a run's gradgradcheck grad_outputs v, drawn by the child from the seed we send
  and redrawn by the judge (``cases.GradgradPlan.grad_outputs``), and the same draw for a run's w
  (``runs.plan_run``);
- ``run_grad_outputs``: a run's grad_outputs, ones then random ones, drawn by the child from the
  seed we send (it alone knows the outputs' shapes) and reported;
- the batching checks' choices (cases.VmapPlan, cases.BatchedGradPlan): ``batch_size`` (none of the
  inputs' sizes), ``batch_scales`` (the batch's entries as factors of the case's values),
  ``batch_grad_outputs`` (one set of grad_outputs per entry) and ``alone_source`` (which vmap call's
  numbers alone another call shares);
- ``forward_ad_tangents`` and ``forward_ad_grad_outputs``: a forward-mode check's random tangents
  and the grad_output of its dot-product test, drawn by both sides from the plan's seed.
- ``in_place_vectors``: the in-place check's factors w of the op after the Function and its
  grad_outputs v, drawn by the child from the plan's seed for the sizes it finds, and redrawn by the
  judge from the sizes reported (``cases.InPlacePlan``, ``harness._in_place``).

A grade's grad_outputs and w are not drawn here: ``plan._random_vector`` draws them from the
grade's own generator, in the judge only, and sends them.

Stdlib only. Imported by the judge (as ``service.grading.draws``) and by the zygote and its children
(as a plain module loaded from this folder, like ``protocol``), so it must not import anything
from ``service``. The numbers are part of the contract: a seed must give the same numbers, in the
same order, on both sides and across versions (a grade's task is cached per exercise version).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence


def numel(shape: Sequence[int]) -> int:
    """The number of elements of a tensor of this shape (1 for a scalar's empty shape)."""
    n = 1
    for d in shape:
        n *= d
    return n


def jacobian_mode(n_points: int | None, width: int, n_in: int, max_side: int | None, max_elements: int | None) -> str:
    """How a Jacobian plan is carried out: "full" (every element, as torch.autograd.gradcheck) when
    it has finite-difference points (`n_points` of them, None for none planned) and neither they nor
    the `width` output elements exceed `max_side` (None: no limit); else "projections" when the
    plan has projections (`max_elements`, None for none) and the `n_in` input elements requiring
    grad and the outputs number at most `max_elements` together; else "too_large"."""
    if n_points is not None and (max_side is None or (n_points <= max_side and width <= max_side)):
        return "full"
    if max_elements is not None and n_in + width <= max_elements:
        return "projections"
    return "too_large"


@functools.lru_cache(maxsize=16)
def projection_vectors(seed: int, kind: str, k: int, n: int) -> tuple[tuple[float, ...], ...]:
    """k standard Gaussian vectors of n elements: input directions (kind "u") or grad_outputs
    ("v") of a projection check. A string seed is hashed with SHA-512 by random.Random, so the judge
    and the child agree whatever PYTHONHASHSEED."""
    out = []
    for j in range(k):
        gen = random.Random(f"{seed}/{kind}/{j}")
        out.append(tuple(gen.gauss(0.0, 1.0) for _ in range(n)))
    return tuple(out)


def _signed(gen: random.Random, sizes: Sequence[int]) -> list[list[float]]:
    """One vector per size: magnitudes in [0.25, 2] with random signs (far from "all ones" and from zero)."""
    return [[gen.uniform(0.25, 2.0) * gen.choice((1.0, -1.0)) for _ in range(n)] for n in sizes]


def seeded_vectors(seed: int, sizes: Sequence[int]) -> list[list[float]]:
    """Random vectors of these sizes from a generator of their own seeded with `seed`."""
    return _signed(random.Random(seed), sizes)


def run_grad_outputs(seed: int, sizes: Sequence[int], n_random: int) -> list[list[list[float]]]:
    """A run's grad_outputs, one set per VJP (one vector per differentiable output, of these sizes):
    ones first (the gradient after ``y.sum().backward()``), then `n_random` random sets drawn one
    after another from one generator seeded with `seed`."""
    gen = random.Random(seed)
    return [[[1.0] * n for n in sizes]] + [_signed(gen, sizes) for _ in range(n_random)]


def batch_size(shapes: Sequence[Sequence[int]], candidates: Sequence[int] = (2, 3, 5, 7, 11, 13)) -> int:
    """The batch size of a vmap or batched-gradient check over inputs of these shapes: the first
    candidate that is none of their sizes, so that a batch dimension put in the wrong place changes
    a shape (a [5, 3, 4] result where [3, 4, 5] was due) instead of hiding among equal sizes."""
    sizes = {d for shape in shapes for d in shape}
    return next((b for b in candidates if b not in sizes), candidates[-1])


def alone_source(in_dims: Sequence[Sequence[int | None]], c: int) -> int:
    """The vmap call whose one-call-per-entry numbers call `c` of a plan shares: the first that
    batches the same arguments (their values are the same whatever the dimensions). The child
    computes and reports them there only; the judge reads them from there."""
    batched = [d is not None for d in in_dims[c]]
    return next(p for p in range(c + 1) if [d is not None for d in in_dims[p]] == batched)


@functools.lru_cache(maxsize=16)
def batch_scales(seed: int, batch: int) -> tuple[float, ...]:
    """The batch of a vmap check, as factors of the case's own values: entry 0 is the case itself
    (1.0), entry b > 0 is every floating-point input batched over multiplied by its factor, drawn
    from [0.5, 0.95] (a positive factor below one keeps an input in any domain that holds the case's
    value and zero: [-1, 1], positive, sorted, symmetric positive definite...). Rounded to 1/1024,
    so that a scaled float32 value is the float32 rounding of the same product on both sides."""
    gen = random.Random(f"{seed}/batch")
    return (1.0,) + tuple(round(gen.uniform(0.5, 0.95) * 1024) / 1024 for _ in range(batch - 1))


def batch_grad_outputs(seed: int, batch: int, sizes: Sequence[int]) -> list[list[list[float]]]:
    """One set of grad_outputs per batch entry (one vector per differentiable output, of these
    sizes), drawn one entry after another from one generator seeded with `seed`."""
    gen = random.Random(f"{seed}/batch grad_outputs")
    return [_signed(gen, sizes) for _ in range(batch)]


def forward_ad_tangents(seed: int, k: int, sizes: Sequence[int]) -> list[list[list[float]]]:
    """The k random tangents of a forward-mode check, one vector per input requiring grad (of these
    sizes) in each, drawn one after another from one generator seeded with `seed`: magnitudes in
    [0.25, 2] with random signs, so no tangent is near ones or zero (a jvp that ignores its tangent
    cannot pass for one that multiplies by it)."""
    gen = random.Random(f"{seed}/tangents")
    return [_signed(gen, sizes) for _ in range(k)]


def forward_ad_grad_outputs(seed: int, sizes: Sequence[int]) -> list[list[float]]:
    """The grad_output u of a forward-mode check's dot-product test <J v, u> = <v, J^T u>, one vector
    per differentiable output (of these sizes): the child draws it once it knows the outputs, the
    judge redraws it from the outputs' reported shapes."""
    return _signed(random.Random(f"{seed}/grad_outputs"), sizes)
def in_place_vectors(seed: int, sizes: Sequence[int]) -> tuple[list[list[float]], list[list[float]]]:
    """The in-place check's bigger expression: w, the factor each part (a differentiable output,
    then each input that requires grad, as it is after the call) is multiplied by, and v, the
    grad_output of each product; both of these sizes, w then v, from one generator seeded with
    `seed`."""
    gen = random.Random(f"{seed}/in_place")
    return _signed(gen, sizes), _signed(gen, sizes)
