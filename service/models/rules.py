"""What staff set over an exercise's assessment rules: for an assignment, and for one learner."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, func, text
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class AssessmentRules(Base):
    """Rules set over an exercise's defaults (its exercise.toml [rules]) in one scope.

    The scope is an assignment: the LTI resource link (`lti_link_id`), or, for attempts made
    through the REST API, the client's own use of the exercise (no link). With `learner`, the row
    is that learner's extension in the assignment. `rules` holds only the keys set here; the
    layers are merged in service/rules.py.
    """

    __tablename__ = "assessment_rules"
    __table_args__ = (
        Index("ux_assessment_rules_scope", "client_id", "exercise_id", func.coalesce(text("lti_link_id"), 0),
              func.coalesce(text("learner"), ""), unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"))
    lti_link_id: Mapped[int | None] = mapped_column(ForeignKey("lti_resource_links.id"))
    learner: Mapped[str | None] = mapped_column(String(255))
    rules: Mapped[dict[str, Any]]
    # Why (an extension's reason: "medical note"), for staff only.
    note: Mapped[str | None] = mapped_column(Text)
    updated_by: Mapped[str] = mapped_column(String(100))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
