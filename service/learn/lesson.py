"""The lesson page (/learn): placeholder until the lesson content lands."""

from __future__ import annotations

from flask import Response, render_template
from sqlalchemy import select

from ..extensions import db_session
from ..models import Exercise


def render_lesson_page() -> Response:
    from . import API_BASE, _page

    exercises = db_session().scalars(select(Exercise).where(Exercise.published.is_(True))
                                     .order_by(Exercise.difficulty, Exercise.slug)).all()
    return _page(render_template("learn/lesson.html", exercises=exercises, api_base=API_BASE))
