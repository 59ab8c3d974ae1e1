"""Log lines as JSON (or text), each carrying the request id of the work it is about.

A request id comes with each API request (a well-formed `X-Request-Id` header, or a new one), is
sent back in the response's `X-Request-Id`, stored on the attempt, run or regrade it creates, and
set again by the worker that grades that job: `grep <id>` over web and worker logs follows one
submission from the request to its grade.
"""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from flask import Flask, Response, g, request
from sqlalchemy import inspect

REQUEST_ID_HEADER = "X-Request-Id"
# An id a proxy or client sends is kept if it is short and plain (it goes into logs and columns).
_WELL_FORMED_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
access_log = logging.getLogger("gradquiz.access")


def current_request_id() -> str | None:
    """The id of the request (or job) this code runs for; None outside both."""
    return _request_id.get()


@contextmanager
def request_id_context(request_id: str | None) -> Iterator[None]:
    """Log lines written inside carry `request_id` (a worker grading a job uses the job's)."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


# What every LogRecord has: anything else on a record came from `extra=` and goes into its line.
_RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "request_id"}


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


_ENCODER = json.JSONEncoder(default=_json_default)


class JsonLineFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, logger, message, request_id, process (the
    pid), service, then the record's `extra=` fields, and exc_info / stack_info when present.

    Written for the access line every request writes: it costs a third of a general-purpose JSON
    formatter's (python-json-logger's, which this replaced with the same fields), and the time
    is formatted once a second, not once a line."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service
        self._second: tuple[int, str] = (-1, "")

    def _time(self, created: float) -> str:
        second = int(created)
        cached = self._second  # one read: another thread may replace it meanwhile
        if cached[0] != second:
            cached = self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(second)))
        return cached[1]

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": self._time(record.created), "level": record.levelname, "logger": record.name,
                "message": record.getMessage(), "request_id": getattr(record, "request_id", None),
                "process": record.process, "service": self.service}
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRIBUTES:
                line[key] = value
        return _ENCODER.encode(line)


def log_handler(log_format: str, process: str, stream: TextIO) -> logging.Handler:
    """A handler writing JSON lines (or text, for a person at a terminal), each with `request_id`;
    `process` names the process kind (web, worker, outbound…) in every line."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    if log_format == "json":
        handler.setFormatter(JsonLineFormatter(f"gradquiz-{process}"))
    else:
        handler.setFormatter(logging.Formatter(
            f"%(asctime)s {process}[%(process)d] %(levelname)s %(name)s [%(request_id)s] %(message)s"))
    return handler


def configure_logging(log_format: str, process: str, level: int = logging.INFO) -> None:
    """Send every log line of this process to stderr through one `log_handler`."""
    root = logging.getLogger()
    root.handlers[:] = [log_handler(log_format, process, sys.stderr)]
    root.setLevel(level)


def _start_request() -> None:
    presented = request.headers.get(REQUEST_ID_HEADER, "")
    request_id = presented if _WELL_FORMED_ID.fullmatch(presented) else uuid.uuid4().hex
    g.request_id_token = _request_id.set(request_id)
    g.request_started = time.perf_counter()


def request_seconds() -> float | None:
    """Seconds since the current request's first hook; None outside a request."""
    started = g.get("request_started")
    return None if started is None else time.perf_counter() - started


def _client_id() -> int | None:
    # From the identity map, not `client.id`: after a failed flush (the database went away) the
    # session has expired its objects, and reading an attribute would query it again and turn the
    # 503 into a 500 (PendingRollbackError).
    client = g.get("client")
    identity = inspect(client).identity if client is not None else None
    return identity[0] if identity else None


def _finish_request(response: Response) -> Response:
    request_id = _request_id.get()
    if request_id is not None:
        response.headers[REQUEST_ID_HEADER] = request_id
        # The access line: no headers and no query string, so no key or token can reach a log.
        access_log.info("%s %s %s", request.method, request.path, response.status_code, extra={
            "method": request.method, "path": request.path, "status": response.status_code,
            "duration_ms": round((request_seconds() or 0.0) * 1000, 1),
            "client_id": _client_id()})
    return response


def _end_request(_exc: BaseException | None) -> None:
    token = g.pop("request_id_token", None)
    if token is not None:
        _request_id.reset(token)


def init_request_ids(app: Flask) -> None:
    app.before_request(_start_request)
    app.after_request(_finish_request)
    app.teardown_request(_end_request)
