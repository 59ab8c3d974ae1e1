"""Errors of the grading core (torch-free, importable anywhere)."""

from __future__ import annotations


class GraderFault(Exception):
    """The grader itself failed (not the submission): the worker retries, then stores
    internal_error. A submission's failure never raises; it is a verdict in the result."""


class BadOutput(Exception):
    """A child sent something that is not a valid result (a submission verdict, not a fault)."""
