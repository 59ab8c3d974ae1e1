"""The lesson (/learn), kept as content in lesson/ beside exercises/.

lesson/lesson.toml lists the concepts in teaching order; each has a Markdown text, worked examples
(Python files the page's Run button sends to POST /api/v1/runs, with the run's entry point and
input specs) and the slugs of the exercises that practise it. The page shows the published ones,
in that order; a published exercise no concept names is listed at the end, never hidden.
The content is read once per process (it changes with a deploy, as the code does).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from flask import Response, render_template, url_for
from sqlalchemy import select

from ..config import PROJECT_ROOT
from ..extensions import db_session
from ..models import Exercise
from .pages import API_BASE, page_response

LESSON_DIR = PROJECT_ROOT / "lesson"


@dataclass(frozen=True)
class Example:
    id: str
    title: str
    code: str
    caption: str = ""
    entry_point: str | None = None
    inputs: tuple[dict[str, Any], ...] | None = None


@dataclass(frozen=True)
class Concept:
    id: str
    title: str
    text: str
    examples: tuple[Example, ...]
    exercises: tuple[str, ...]


@dataclass(frozen=True)
class Lesson:
    title: str
    intro: str
    concepts: tuple[Concept, ...]

    @property
    def slugs(self) -> list[str]:
        return [slug for concept in self.concepts for slug in concept.exercises]


class LessonError(ValueError):
    """lesson.toml or a file it names is missing or malformed."""


def _read(folder: Path, name: str) -> str:
    path = (folder / name).resolve()
    if folder.resolve() not in path.parents or not path.is_file():
        raise LessonError(f"{name}: no such file in {folder}")
    return path.read_text(encoding="utf-8")


def load_lesson(folder: Path = LESSON_DIR) -> Lesson:
    try:
        data = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
        concepts = []
        for c in data["concepts"]:
            examples = tuple(
                Example(id=e["id"], title=e["title"], code=_read(folder, e["code"]), caption=e.get("caption", ""),
                        entry_point=e.get("entry_point"),
                        inputs=tuple(e["inputs"]) if "inputs" in e else None)
                for e in c.get("examples", []))
            concepts.append(Concept(id=c["id"], title=c["title"], text=_read(folder, c["text"]), examples=examples,
                                    exercises=tuple(c.get("exercises", []))))
        return Lesson(title=data["title"], intro=_read(folder, data["intro"]), concepts=tuple(concepts))
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise LessonError(f"lesson/lesson.toml: {exc!r}") from exc


@dataclass(frozen=True)
class PlacementProblem:
    """An exercise of the catalog the lesson does not place once, or a slug it names in vain."""

    slug: str
    message: str
    #: The line of lesson.toml naming the slug, where it names it.
    line: int | None = None


def placement_problems(lesson_file: Path, slugs: Iterable[str]) -> list[PlacementProblem]:
    """Every exercise of the built-in catalog (`slugs`) is placed under exactly one concept of the
    lesson (`[[concepts]] exercises = [...]`), which names no other: otherwise the lesson page
    lists it under "More exercises", after the concepts, or names nothing."""
    text = lesson_file.read_text(encoding="utf-8")
    try:
        concepts = tomllib.loads(text).get("concepts", [])
    except tomllib.TOMLDecodeError as exc:
        return [PlacementProblem("(lesson)", f"lesson.toml does not parse: {exc}")]
    lines = text.splitlines()

    def line_of(slug: str) -> int | None:
        return next((n for n, line in enumerate(lines, start=1) if f'"{slug}"' in line), None)

    placed = [slug for concept in concepts if isinstance(concept, dict)
              for slug in concept.get("exercises", []) if isinstance(slug, str)]
    wanted = set(slugs)
    problems = [PlacementProblem(slug, "not placed in lesson/lesson.toml: add its slug to a concept's exercises")
                for slug in sorted(wanted - set(placed))]
    problems += [PlacementProblem(slug, "placed under more than one concept: keep it under one", line_of(slug))
                 for slug in sorted({s for s in placed if placed.count(s) > 1})]
    problems += [PlacementProblem(slug, "lesson/lesson.toml names it, but no exercise has this slug", line_of(slug))
                 for slug in sorted(set(placed) - wanted)]
    return problems


@lru_cache(maxsize=1)
def the_lesson() -> Lesson:
    return load_lesson()


def lesson_document(lesson: Lesson, published: list[Exercise]) -> dict[str, Any]:
    """What the page renders: the lesson, and the published exercises under their concepts."""
    by_slug = {e.slug: e for e in published}

    def card(exercise: Exercise) -> dict[str, Any]:
        return {"slug": exercise.slug, "title": exercise.title, "kind": exercise.kind,
                "difficulty": exercise.difficulty, "url": url_for("learn.exercise_page", slug=exercise.slug)}

    named = set(lesson.slugs)
    return {
        "title": lesson.title,
        "intro": lesson.intro,
        "concepts": [{
            "id": c.id, "title": c.title, "markdown": c.text,
            "examples": [{"id": e.id, "title": e.title, "caption": e.caption, "code": e.code,
                          "entry_point": e.entry_point, "inputs": list(e.inputs) if e.inputs else None}
                         for e in c.examples],
            "exercises": [card(by_slug[s]) for s in c.exercises if s in by_slug],
        } for c in lesson.concepts],
        "more": [card(e) for e in published if e.slug not in named],
    }


def render_lesson_page() -> Response:
    # The built-in catalog's: a course's own exercises are in that course alone (exercise_access.py).
    published = list(db_session().scalars(select(Exercise).where(Exercise.published.is_(True), Exercise.course_id.is_(None))
                                          .order_by(Exercise.difficulty, Exercise.slug)))
    lesson = the_lesson()
    return page_response(render_template("learn/lesson.html", lesson=lesson_document(lesson, published), api_base=API_BASE))
