"""The lesson (/learn), kept as content in lesson/ beside exercises/.

lesson/lesson.toml lists the concepts in teaching order; each has a Markdown text, worked examples
(Python files the page's Run button sends to POST /api/v1/runs, with the run's entry point and
input specs) and the slugs of the exercises that practise it. The page shows the published ones,
in that order; a published exercise no concept names is listed at the end ("More exercises"),
never hidden. Its `[recap]` ("Key points") closes the lesson, after the last concept.
The content is read once per process (it changes with a deploy, as the code does).

The same order gives each exercise page its way (`exercise_way`): the breadcrumb names the concept
that places the exercise (linking to its anchor on /learn), and previous and next run through the
concept's exercises, then on to the next concept's (the lesson's order, then "More exercises"). A
course's own exercise is in no lesson: its breadcrumb names its course, and it has no neighbours.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from flask import Response, current_app, render_template, url_for
from sqlalchemy import select

from ..config import PROJECT_ROOT
from ..extensions import db_session
from ..models import Course, Exercise
from ..ttl_cache import TtlCache
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
class Recap:
    """What closes the lesson: a short summary ("Key points"), Markdown."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Lesson:
    title: str
    intro: str
    concepts: tuple[Concept, ...]
    recap: Recap | None = None

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
        recap = None
        if "recap" in data:
            r = data["recap"]
            recap = Recap(id=r.get("id", "key-points"), title=r.get("title", "Key points"), text=_read(folder, r["text"]))
        return Lesson(title=data["title"], intro=_read(folder, data["intro"]), concepts=tuple(concepts), recap=recap)
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


#: The anchor of the lesson page's list of the exercises no concept places.
MORE_ID, MORE_TITLE = "more-exercises", "More exercises"


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
        "more_id": MORE_ID,
        "recap": None if lesson.recap is None else {"id": lesson.recap.id, "title": lesson.recap.title,
                                                    "markdown": lesson.recap.text},
    }


#: The published built-in catalog, in its order: a course's own exercises are in that course alone
#: (exercise_access.py).
CATALOG = (Exercise.published.is_(True), Exercise.course_id.is_(None))
CATALOG_ORDER = (Exercise.difficulty, Exercise.slug)


def render_lesson_page() -> Response:
    published = list(db_session().scalars(select(Exercise).where(*CATALOG).order_by(*CATALOG_ORDER)))
    lesson = the_lesson()
    return page_response(render_template("learn/lesson.html", lesson=lesson_document(lesson, published), api_base=API_BASE))


# ------------------------------------------------------------------- an exercise page's way


@dataclass(frozen=True)
class Neighbour:
    slug: str
    title: str


@dataclass(frozen=True)
class Way:
    """Where an exercise page sits: its breadcrumb after "Lesson" (`section_title`, linking to
    `section_id`'s anchor on /learn; None: no anchor, a course's own exercise), and the exercises
    before and after it in the lesson's order (None at either end, and for a course's exercise)."""

    section_title: str
    section_id: str | None
    previous: Neighbour | None = None
    next: Neighbour | None = None
    # Its place among its section's exercises (1-based) and how many there are; 0 when none.
    position: int = 0
    count: int = 0
    # After the lesson's last exercise: the recap that closes it, (anchor, title) on /learn.
    end: tuple[str, str] | None = None


def lesson_order(lesson: Lesson, published: Iterable[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """The published catalog's exercises (`published`: (slug, title), in the catalog's order) as
    the lesson page lists them: (slug, title, section id, section title), each concept's in its
    order, then those no concept places ("More exercises")."""
    titles = dict(published)
    order = [(slug, titles[slug], c.id, c.title) for c in lesson.concepts for slug in c.exercises if slug in titles]
    named = set(lesson.slugs)
    return order + [(slug, title, MORE_ID, MORE_TITLE) for slug, title in titles.items() if slug not in named]


def way_in_lesson(order: list[tuple[str, str, str, str]], slug: str) -> Way | None:
    """The way of catalog exercise `slug` in `order` (lesson_order); None when it is not there."""
    index = next((n for n, row in enumerate(order) if row[0] == slug), None)
    if index is None:
        return None
    _slug, _title, section_id, section_title = order[index]
    section = [row[0] for row in order if row[2] == section_id]

    def neighbour(at: int) -> Neighbour | None:
        return Neighbour(order[at][0], order[at][1]) if 0 <= at < len(order) else None

    return Way(section_title, section_id, neighbour(index - 1), neighbour(index + 1),
               section.index(slug) + 1, len(section))


def course_way(course_title: str | None) -> Way:
    """A course's own exercise: in no lesson, so named by its course, with no neighbours."""
    return Way(f"Course: {course_title}" if course_title else "Your course's exercises", None)


def exercise_way(exercise: Exercise) -> Way:
    """The way of a published exercise's page (see Way): from the lesson for a catalog exercise (the
    published catalog's order, read once per EXERCISE_CACHE_SECONDS), from its course for a course's."""
    session = db_session()
    if exercise.course_id is not None:
        return course_way(session.scalar(select(Course.title).where(Course.id == exercise.course_id)))
    cache = current_app.extensions.get("gradquiz.lesson_order")
    if cache is None:
        cache = current_app.extensions["gradquiz.lesson_order"] = TtlCache(current_app.config["SETTINGS"].exercise_cache_ttl)
    order = cache.get("order", lambda: lesson_order(the_lesson(), session.execute(
        select(Exercise.slug, Exercise.title).where(*CATALOG).order_by(*CATALOG_ORDER)).all())) or []
    way = way_in_lesson(order, exercise.slug) or Way(MORE_TITLE, MORE_ID)
    recap = the_lesson().recap
    if way.next is None and recap is not None and way.section_id != MORE_ID:
        way = replace(way, end=(recap.id, recap.title))
    return way
