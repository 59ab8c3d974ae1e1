from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask_smorest import Page
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ..database import window

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
PAGINATION = {"page_size": DEFAULT_PAGE_SIZE, "max_page_size": MAX_PAGE_SIZE}


@dataclass(frozen=True)
class Query:
    session: Session
    statement: Select
    #: How many rows `statement` selects, when the caller has counted them already (no count statement).
    count: int | None = None


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
        return list(self.collection.session.scalars(window(self.collection.statement, size, offset)))

    @property
    def item_count(self) -> int:
        if self.collection.count is not None:
            return self.collection.count
        counted = select(func.count()).select_from(self.collection.statement.order_by(None).subquery())
        return self.collection.session.scalar(counted) or 0
