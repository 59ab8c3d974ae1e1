"""Every error the API returns is application/problem+json (RFC 9457), built here and only here."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, NoReturn

from flask import Flask, Response
from marshmallow import Schema, fields
from sqlalchemy.exc import DBAPIError, OperationalError
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.http import HTTP_STATUS_CODES

PROBLEM_MIMETYPE = "application/problem+json"
log = logging.getLogger(__name__)

# Problem types the API defines beyond plain HTTP statuses (those use "about:blank").
VALIDATION_ERROR = "/problems/validation-error"
INVALID_ANSWER = "/problems/invalid-answer"
IDEMPOTENCY_KEY_REUSED = "/problems/idempotency-key-reused"
DATABASE_UNAVAILABLE = "/problems/database-unavailable"
# Other submissions of the same learner took every attempt number this one tried: 503, retry.
SIMULTANEOUS_ATTEMPTS = "/problems/simultaneous-attempts"
# An attempt or run the assessment rules refuse: ATTEMPT_REFUSED + the reason (service/rules.py),
# e.g. /problems/attempt-refused/no-attempts-left; the body's `standing` says where the learner is.
ATTEMPT_REFUSED = "/problems/attempt-refused/"


class FieldErrorSchema(Schema):
    field = fields.String(metadata={"description": "Dotted path of the offending field, e.g. 'answer' or 'json.learner'"})
    message = fields.String()


class ProblemSchema(Schema):
    """RFC 9457 problem details; `errors` lists field errors for validation problems."""

    type = fields.String(metadata={"description": "URI reference naming the problem type"})
    title = fields.String()
    status = fields.Integer()
    detail = fields.String()
    errors = fields.List(fields.Nested(FieldErrorSchema))


class Problem(HTTPException):
    """An HTTP error carrying problem details; raised by `problem_abort`."""

    def __init__(self, status: int, detail: str, *, title: str | None = None, type: str = "about:blank",
                 errors: list[dict[str, str]] | None = None, headers: Mapping[str, str] | None = None,
                 members: Mapping[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.code = status
        self.title = title or HTTP_STATUS_CODES.get(status, "Error")
        self.type = type
        self.errors = errors
        self.extra_headers = dict(headers or {})
        # Extension members of the problem's body (RFC 9457, section 3.2).
        self.members = dict(members or {})


def problem_abort(status: int, detail: str, **kwargs: Any) -> NoReturn:
    raise Problem(status, detail, **kwargs)


def flatten_messages(messages: Any, prefix: str = "") -> list[dict[str, str]]:
    """marshmallow's nested {"json": {"learner": ["..."]}} as a flat list of field errors."""
    if isinstance(messages, Mapping):
        out: list[dict[str, str]] = []
        for key, value in messages.items():
            name = "(body)" if key == "_schema" else str(key)
            out += flatten_messages(value, f"{prefix}.{name}" if prefix else name)
        return out
    if isinstance(messages, (list, tuple)):
        if all(isinstance(m, str) for m in messages):
            return [{"field": prefix, "message": m} for m in messages]
        out = []
        for i, value in enumerate(messages):
            out += flatten_messages(value, f"{prefix}[{i}]")
        return out
    return [{"field": prefix, "message": str(messages)}]


def problem_response(status: int, title: str, detail: str | None = None, *, type: str = "about:blank",
                     errors: list[dict[str, str]] | None = None,
                     headers: Mapping[str, str] | None = None, members: Mapping[str, Any] | None = None) -> Response:
    body: dict[str, Any] = {**(members or {}), "type": type, "title": title, "status": status}
    if detail:
        body["detail"] = detail
    if errors:
        body["errors"] = errors
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_MIMETYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _response_headers(error: HTTPException) -> dict[str, str]:
    # Werkzeug puts headers such as Allow (405) and Retry-After (429, 503) on the response it
    # would build; keep them, drop the ones describing its HTML body.
    return {k: v for k, v in error.get_response().headers.items() if k.lower() not in {"content-type", "content-length"}}


def handle_http_exception(error: HTTPException) -> Response:
    status = error.code or 500
    headers = _response_headers(error)
    if isinstance(error, Problem):
        headers.update(error.extra_headers)
        return problem_response(status, error.title, error.description, type=error.type,
                                errors=error.errors, headers=headers, members=error.members)
    data = getattr(error, "data", None) or {}
    headers.update(data.get("headers") or {})
    messages = data.get("messages")
    if messages is not None:
        # webargs: 422 for schema errors, 400 for a body that is not JSON at all.
        errors = flatten_messages(messages)
        if status == 400:
            return problem_response(400, "Malformed request body", "The request body is not valid JSON.",
                                    errors=errors, headers=headers)
        return problem_response(status, "Validation failed", "The request has invalid or unknown fields.",
                                type=VALIDATION_ERROR, errors=errors, headers=headers)
    detail: str | None
    if status >= 500:
        detail = "The server could not complete the request; the error has been logged."
    else:
        detail = data.get("message") or error.description
    return problem_response(status, error.name, detail, headers=headers)


def handle_database_unavailable(error: DBAPIError) -> Response:
    if isinstance(error, OperationalError) or error.connection_invalidated:
        log.warning("database unavailable: %s", type(error.orig).__name__ if error.orig else error)
        return problem_response(503, HTTP_STATUS_CODES[503], "The database is unavailable; retry shortly.",
                                type=DATABASE_UNAVAILABLE, headers={"Retry-After": "2"})
    log.exception("database error")
    return handle_http_exception(InternalServerError())


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(DBAPIError, handle_database_unavailable)
