"""Small helpers shared by tests."""

from __future__ import annotations

import shutil

import pytest
from sqlalchemy import func, select

from service.extensions import db_session


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def count_rows(app, model) -> int:
    with app.app_context():
        return db_session().scalar(select(func.count()).select_from(model))


def correct_answer(spec: dict):
    """The fully correct answer to a quiz spec, derived from its content."""
    kind = spec["kind"]
    if kind == "single_choice":
        return next(c["id"] for c in spec["choices"] if c["correct"])
    if kind == "multiple_choice":
        return [c["id"] for c in spec["choices"] if c["correct"]]
    if kind == "short_answer":
        return spec["answer"]["accepted"][0]
    return spec["answer"]["value"]


def node_tool(name: str) -> str:
    """The path of Node.js's `name` (node, npm), or the test fails saying how to install it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"This test needs {name}: install Debian's nodejs and npm (apt-get install nodejs npm; "
                    ".ci/run does)", pytrace=False)
    return path
