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


def add_course_exercise(app, course_id: int, slug: str, like: str, *, published: bool = True) -> int:
    """Course `course_id`'s own exercise `slug`, a copy of the catalog's `like` (its current version),
    as the course exercises API leaves one once proven (and published, unless `published` is False):
    for the tests of who sees a course's exercises. Returns its id."""
    from service.models import Exercise, ExerciseVersion
    from service.models.base import utcnow

    with app.app_context():
        session = db_session()
        source = session.scalar(select(Exercise).where(Exercise.slug == like))
        version = source.version
        now = utcnow()
        exercise = Exercise(slug=slug, course_id=course_id, kind=source.kind, title=f"{source.title} (course {course_id})",
                            difficulty=source.difficulty, published=published, current_version=1, created_at=now,
                            updated_at=now)
        session.add(exercise)
        session.flush()
        session.add(ExerciseVersion(exercise_id=exercise.id, number=1, digest=version.digest, content=version.content,
                                    created_at=now, author="tests", source="api", proof_status="passed",
                                    proven_at=now, published_at=now if published else None))
        session.commit()
        return exercise.id
