"""Extension objects, created unbound here and initialised in `create_app`."""

from __future__ import annotations

import http
from collections.abc import Callable
from typing import Any

from flask import current_app, g, has_request_context, request
from flask_cors import CORS
from flask_smorest import Api
from flask_smorest.utils import prepare_response
from sqlalchemy.orm import Session

from . import errors

PAGINATION_HEADER_DOC = {
    "description": "Pagination as a JSON object: total, total_pages, first_page, last_page, page, "
                   "previous_page, next_page (the last two when they exist)",
    "schema": {"type": "string"},
}


class ProblemApi(Api):
    """flask-smorest's Api with problem+json errors, documented and returned alike."""

    ERROR_SCHEMA = errors.ProblemSchema

    def handle_http_exception(self, error):
        return errors.handle_http_exception(error)

    def _register_responses(self) -> None:
        # flask-smorest documents its error components as application/json; ours are problem+json.
        for status in [*http.HTTPStatus, None]:
            name = status.name if status else self.DEFAULT_ERROR_RESPONSE_NAME
            response: dict[str, Any] = {"description": status.phrase if status else "Error"}
            if status is None or status >= 400:
                response["schema"] = self.ERROR_SCHEMA
                prepare_response(response, self.spec, errors.PROBLEM_MIMETYPE)
            self.spec.components.response(name, response, lazy=True)

    def _register_pagination_header(self) -> None:
        # The header carries JSON text; describing it as an object would mean "simple" style.
        self.spec.components.header("PAGINATION", PAGINATION_HEADER_DOC, lazy=True)


cors = CORS()
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def db_session() -> Session:
    """The session of the current request (or CLI command), opened on first use: a GET's reads
    only (on PostgreSQL its transaction is READ ONLY), unless its view `writes_on_get`."""
    session = g.get("db_session")
    if session is None:
        database = current_app.extensions["gradquiz.db"]
        reads_only = has_request_context() and request.method in READ_ONLY_METHODS and not _view_writes_on_get()
        factory = database.read_session_factory if reads_only else database.session_factory
        session = g.db_session = factory()
    return session


def writes_on_get(view: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a GET view that writes (the JWKS makes the tool's first key; an LMS opens the dynamic
    registration link with a GET): a view function, or a MethodView's `get`. Every session of its
    requests is a writer's, as a POST's is, whether the view or a hook before it opens it."""
    view.writes_on_get = True  # type: ignore[attr-defined]
    return view


def _view_writes_on_get() -> bool:
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    view_class = getattr(view, "view_class", None)
    if view_class is not None:  # a MethodView's route: the mark is on the method that answers
        view = getattr(view_class, request.method.lower(), None) or getattr(view_class, "get", None)
    return getattr(view, "writes_on_get", False)


def close_db_session(_exc: BaseException | None = None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def dispatch_job(model: type, job_id: Any) -> None:
    """Hand a job whose row is committed to the grading workers (service/jobs/dispatch.py)."""
    current_app.extensions["gradquiz.dispatcher"].dispatch(db_session(), model, job_id)
