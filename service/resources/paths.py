"""Path converters for the string path parameters, so that what a route takes is what the document
says it takes: a path that no exercise slug (or learner id) could be is a 404 from routing, and
never reaches a query (a NUL in a slug was a PostgreSQL error, a 500)."""

from __future__ import annotations

from typing import Any

from flask_smorest import Api
from werkzeug.routing import BaseConverter, ValidationError

from ..catalog.loader import SLUG_PATTERN
from ..learner_ids import LEARNER_CHARACTERS, LEARNER_PATTERN, is_learner_id

SLUG_LENGTH = (3, 64)  # as the catalog loader checks an exercise folder's name


class SlugConverter(BaseConverter):
    """`<slug:slug>`: an exercise slug, as the catalog makes them."""

    regex = SLUG_PATTERN.pattern.removeprefix("^").removesuffix("$")

    def to_python(self, value: str) -> str:
        if not SLUG_LENGTH[0] <= len(value) <= SLUG_LENGTH[1]:
            raise ValidationError()
        return value


class LearnerConverter(BaseConverter):
    """`<learner:learner>`: a learner id as attempts take it (service/schemas/attempts.py)."""

    regex = LEARNER_CHARACTERS

    def to_python(self, value: str) -> str:
        if not is_learner_id(value):  # white space alone: the route's regex cannot say it
            raise ValidationError()
        return value


def _slug_schema(_converter: Any) -> dict[str, Any]:
    return {"type": "string", "pattern": SLUG_PATTERN.pattern, "minLength": SLUG_LENGTH[0],
            "maxLength": SLUG_LENGTH[1]}


def _learner_schema(_converter: Any) -> dict[str, Any]:
    return {"type": "string", "pattern": LEARNER_PATTERN}


def register_converters(api: Api) -> None:
    """Before the blueprints: their routes name these converters."""
    app = api._app  # flask-smorest keeps the app it was initialised with here, and names it nowhere else
    app.url_map.converters["slug"] = SlugConverter
    app.url_map.converters["learner"] = LearnerConverter
    api.register_converter(SlugConverter, _slug_schema)
    api.register_converter(LearnerConverter, _learner_schema)
