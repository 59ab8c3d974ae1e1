from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask_smorest import Page
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
PAGINATION = {"page_size": DEFAULT_PAGE_SIZE, "max_page_size": MAX_PAGE_SIZE}


@dataclass(frozen=True)
class Query:
    session: Session
    statement: Select


class SelectPage(Page):
    """flask-smorest's pager over a SQLAlchemy select (`collection` is a Query)."""

    collection: Query

    @property
    def items(self) -> list[Any]:
        offset, size = self.page_params.first_item, self.page_params.page_size
        if offset >= self.page_params.item_count:  # past the end: no query (and no huge OFFSET)
            return []
        return list(self.collection.session.scalars(self.collection.statement.offset(offset).limit(size)))

    @property
    def item_count(self) -> int:
        counted = select(func.count()).select_from(self.collection.statement.order_by(None).subquery())
        return self.collection.session.scalar(counted) or 0
