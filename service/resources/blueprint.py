"""The blueprint every API resource module declares its routes on."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import flask_smorest
from flask_smorest.pagination import PaginationMetadataSchema
from marshmallow import Schema
from webargs.flaskparser import FlaskParser


@functools.cache
def _built_once(schema_class: type[Schema]) -> Schema:
    return schema_class()


@contextlib.contextmanager
def _schemas_shared_by_deepcopy() -> Iterator[None]:
    """Within: copy.deepcopy of a structure holding schema instances shares them (single-threaded
    use only: while the apps' routes are registered)."""
    Schema.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del Schema.__deepcopy__  # type: ignore[attr-defined]


class SchemaOnceParser(FlaskParser):
    """webargs' parser, with a schema given as a class built once: webargs builds it again at every
    request (about 7% of a cached GET's CPU; flask-smorest's pagination gives its parameters as a
    class). A schema's load keeps no state between calls, so the threads share the instance."""

    def _get_schema(self, argmap: Any, req: Any) -> Schema:
        if isinstance(argmap, type) and issubclass(argmap, Schema):
            return _built_once(argmap)
        return super()._get_schema(argmap, req)


class Blueprint(flask_smorest.Blueprint):
    """flask-smorest's Blueprint, with each argument schema built once (SchemaOnceParser; the
    pagination header's schema too), alternative responses documented without a layer around the
    view, and a body that is one of several shapes documented as `oneOf` them (ONE_OF)."""

    ARGUMENTS_PARSER = SchemaOnceParser()
    PAGINATION_ARGUMENTS_PARSER = ARGUMENTS_PARSER
    _PAGINATION_METADATA = PaginationMetadataSchema()

    def arguments(self, schema: type[Schema] | Schema, *args: Any, **kwargs: Any) -> Any:
        # Built here, at import, rather than at a route's first request.
        return super().arguments(_built_once(schema) if isinstance(schema, type) else schema, *args, **kwargs)

    def _prepare_arguments_doc(self, doc: dict[str, Any], doc_info: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        # A body schema with ONE_OF (its alternatives, each a schema of its own) is documented as
        # `oneOf` those: a generated client then has one type per alternative, where one object
        # with a `oneOf` of `required` lists became an untyped body. The schema still checks it.
        for parameter in doc_info.get("arguments", {}).get("parameters", []):
            alternatives = getattr(parameter.get("schema"), "ONE_OF", None)
            if alternatives:
                parameter["schema"] = {"oneOf": list(alternatives)}
        return super()._prepare_arguments_doc(doc, doc_info, **kwargs)

    def register_views_in_doc(self, *args: Any, **kwargs: Any) -> None:
        # flask-smorest deep-copies the blueprint's docs for every app it registers them in, so
        # that registering them again (an app per test) starts from the same source. The schema
        # instances in them are only read: copying each with all its fields was most of an app's
        # start (about 40%); shared by the copies, they cost nothing.
        with _schemas_shared_by_deepcopy():
            super().register_views_in_doc(*args, **kwargs)

    @classmethod
    def _make_pagination_metadata(cls, page: int, page_size: int, item_count: int) -> dict[str, Any]:
        # flask-smorest's builds the dict the same way, then dumps it with a schema it builds each time.
        metadata = {"total": item_count, "total_pages": 0}
        if item_count:
            last_page = (item_count - 1) // page_size + 1
            metadata.update(total_pages=last_page, first_page=1, last_page=last_page)
            if page <= last_page:
                metadata["page"] = page
                if page > 1:
                    metadata["previous_page"] = page - 1
                if page < last_page:
                    metadata["next_page"] = page + 1
        return cls._PAGINATION_METADATA.dump(metadata)

    def alt_response(self, status_code: Any, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        """Document a response as flask-smorest does, on the view itself: its decorator wraps the
        view in a function that only calls it, and a route documenting ten problem responses
        (docs.problems) ran ten of them at every request."""
        document = super().alt_response(status_code, *args, **kwargs)

        def decorator(view: Any) -> Any:
            # The wrapper's _apidoc is a copy of the view's with this response added.
            view._apidoc = document(view)._apidoc
            return view

        return decorator
