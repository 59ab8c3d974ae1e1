"""Extension objects, created unbound here and initialised in `create_app`."""

from __future__ import annotations

from flask import current_app, g
from flask_cors import CORS
from flask_smorest import Api
from sqlalchemy.orm import Session

from . import errors


class ProblemApi(Api):
    """flask-smorest's Api with problem+json errors, documented and returned alike."""

    ERROR_SCHEMA = errors.ProblemSchema

    def handle_http_exception(self, error):  # type: ignore[override]
        return errors.handle_http_exception(error)


cors = CORS()


def db_session() -> Session:
    """The session of the current request (or CLI command), opened on first use."""
    session = g.get("db_session")
    if session is None:
        session = g.db_session = current_app.extensions["gradquiz.db"].session_factory()
    return session


def close_db_session(_exc: BaseException | None = None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()
