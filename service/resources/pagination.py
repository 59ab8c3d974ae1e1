from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask_smorest import Page
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ..database import window, window_of_built_once

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
PAGINATION = {"page_size": DEFAULT_PAGE_SIZE, "max_page_size": MAX_PAGE_SIZE}


@dataclass(frozen=True)
class Query:
    session: Session
    statement: Select
    #: How many rows `statement` selects, when the caller has counted them already (no count statement).
    count: int | None = None
    #: The values of `statement`'s bound parameters, if it has any of its own.
    parameters: Mapping[str, Any] | None = None
    #: `statement` is kept for the process (built once, its values bound): so are its pages'
    #: statements, whose SQLAlchemy cache keys are then made once, not at every request.
    built_once: bool = False


class OffsetPage(Page):
    """flask-smorest's pager, with the rows of a page read by `rows(offset, size)`.

    A page past the end is empty without a query: an OFFSET beyond 2**63 (`?page=` is not
    bounded) would be a database error."""

    def rows(self, offset: int, size: int) -> list[Any]:
        raise NotImplementedError

    @property
    def items(self) -> list[Any]:
        offset, size = self.page_params.first_item, self.page_params.page_size
        if offset >= self.page_params.item_count:
            return []
        return self.rows(offset, size)


class SelectPage(OffsetPage):
    """The pager over a SQLAlchemy select (`collection` is a Query)."""

    collection: Query

    def rows(self, offset: int, size: int) -> list[Any]:
        return list(self.collection.session.scalars(self.page_statement(offset, size), self.collection.parameters))

    def page_statement(self, offset: int, size: int) -> Select:
        query = self.collection
        return (window_of_built_once if query.built_once else window)(query.statement, size, offset)

    @property
    def item_count(self) -> int:
        if self.collection.count is not None:
            return self.collection.count
        counted = select(func.count()).select_from(self.collection.statement.order_by(None).subquery())
        return self.collection.session.scalar(counted, self.collection.parameters) or 0


class RowsPage(SelectPage):
    """The pager over a Core select: its rows, run on the session's connection (no ORM objects,
    none of the ORM's execution step)."""

    def rows(self, offset: int, size: int) -> list[Any]:
        connection = self.collection.session.connection()
        return list(connection.execute(self.page_statement(offset, size), self.collection.parameters))
