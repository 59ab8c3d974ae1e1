"""Errors of the grading core (torch-free, importable anywhere)."""

from __future__ import annotations

from dataclasses import dataclass


class GraderFault(Exception):
    """The grader itself failed (not the submission): the worker retries, then stores
    internal_error. A submission's failure never raises; it is a verdict in the result."""


@dataclass(frozen=True)
class ReferenceProblem:
    """One way an exercise's reference is wrong: the field or check at fault (`check gradcheck`,
    `code.boundary[0].expected_grad.x`, `(runs)`) and what happened."""

    field: str
    message: str
    #: The line of reference.py that raised, when the child says.
    line: int | None = None


class ReferenceFault(GraderFault):
    """The exercise is broken, not the grader: its reference fails its own checks, raises, or
    disagrees with the table. Every grade of that version raises it; the proof (service/catalog/
    proof.py) names each `problems` entry instead of the text."""

    def __init__(self, slug: str, summary: str, problems: list[ReferenceProblem]) -> None:
        self.slug = slug
        self.problems = tuple(problems)
        super().__init__(f"exercise {slug}: {summary}")


class BadOutput(Exception):
    """A child sent something that is not a valid result (a submission verdict, not a fault)."""
