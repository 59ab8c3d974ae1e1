"""OpenAPI documentation of the problem responses, so the spec says what the API returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import PROBLEM_MIMETYPE, ProblemSchema
from .blueprint import Blueprint

UNAUTHORIZED = (401, "No API key, or not a valid one")
STAFF_ONLY = (403, "The client is neither an instructor nor an admin, or a learner token was sent")
BODY_PROBLEMS = ((400, "The body is not valid JSON"), (413, "The body is larger than MAX_REQUEST_BYTES"),
                 (415, "The body is not sent as application/json"))
# Path converters for integer row ids, bounded like their column (PostgreSQL integer, bigint): a
# larger number is a 404 from routing instead of a database error, and the spec says the maximum.
ROW_ID = "int(max=2147483647)"
BIG_ROW_ID = "int(max=9223372036854775807)"


def problems(blp: Blueprint, *documented: tuple[int, str]) -> Callable[[Any], Any]:
    """Document each (status, description) as an application/problem+json response."""

    def decorate(view: Any) -> Any:
        for status, description in documented:
            view = blp.alt_response(status, schema=ProblemSchema, description=description,
                                    content_type=PROBLEM_MIMETYPE)(view)
        return view

    return decorate
