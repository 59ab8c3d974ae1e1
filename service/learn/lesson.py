"""The lessons (/learn, /learn/<folder>), kept as content in lesson/ beside exercises/.

lesson/lesson.toml is the first lesson, served at /learn; its `followed_by` names the lessons after
it, in order, each a folder of lesson/ with a lesson.toml of its own (the same format, its files in
that folder), served at /learn/<folder> (a slug no exercise may take: catalog.loader.RESERVED_SLUGS).
One loader reads them all (`load_lessons`).

A lesson.toml lists the concepts in teaching order; each has a Markdown text, worked examples
(Python files the page's Run button sends to POST /api/v1/runs, with the run's entry point and
input specs) and the slugs of the exercises that practise it. The page shows the published ones,
in that order; a published exercise no lesson names is listed at the end of the first lesson
("More exercises"), never hidden. Its `[recap]` ("Key points") closes the lesson, after the last
concept. The content is read once per process (it changes with a deploy, as the code does).

The same order gives each exercise page its way (`exercise_way`): the breadcrumb names the lesson
and the concept that place the exercise (linking to its anchor on that lesson's page), and previous
and next run through the concept's exercises, then on to the next concept's, within that lesson
(the first lesson's order ends with "More exercises"). A course's own exercise is in no lesson: its
breadcrumb names its course, and it has no neighbours.
"""

from __future__ import annotations

import re
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
from ..grading.registry import RUN_OPTIONS
from ..models import Course, Exercise
from ..ttl_cache import TtlCache
from .pages import API_BASE, page_response

LESSON_DIR = PROJECT_ROOT / "lesson"
#: A following lesson's folder, which is also its path under /learn/: a slug's form.
LESSON_PATH = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Example:
    id: str
    title: str
    code: str
    caption: str = ""
    entry_point: str | None = None
    inputs: tuple[dict[str, Any], ...] | None = None
    #: The optional checks its Run asks for (grading.registry.RUN_OPTIONS: "forward_ad", "vmap", ...)
    checks: tuple[str, ...] = ()
    #: Lines its Run prints (stdout), each somewhere in the output: what the lesson's text says it
    #: shows (tests/api/test_learn_lesson_runs.py runs every example and checks them; not served).
    prints: tuple[str, ...] = ()


def _checks(folder: Path, example: dict[str, Any]) -> tuple[str, ...]:
    """An example's `checks`: optional checks a run request names, with its entry point."""
    checks = tuple(example.get("checks", ()))
    unknown = set(checks) - set(RUN_OPTIONS)
    if unknown or (checks and "entry_point" not in example):
        raise LessonError(f"{folder / 'lesson.toml'}: example {example.get('id')!r}: checks must be among "
                          f"{', '.join(RUN_OPTIONS)}, with an entry_point")
    return checks


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
    #: Where it is served under /learn: "" for the first lesson (/learn), its folder for the others.
    path: str = ""
    #: Its place in the order of the lessons, from 1.
    number: int = 1
    #: The name navigation and breadcrumbs give it ("Lesson 2: Beyond the basics"); default: title.
    short_title: str = ""

    @property
    def slugs(self) -> list[str]:
        return [slug for concept in self.concepts for slug in concept.exercises]

    @property
    def label(self) -> str:
        return f"Lesson {self.number}: {self.short_title or self.title}"


class LessonError(ValueError):
    """lesson.toml or a file it names is missing or malformed."""


def _read(folder: Path, name: str) -> str:
    path = (folder / name).resolve()
    if folder.resolve() not in path.parents or not path.is_file():
        raise LessonError(f"{name}: no such file in {folder}")
    return path.read_text(encoding="utf-8")


def _following(data: dict[str, Any], folder: Path) -> list[str]:
    """The folders `followed_by` names (the first lesson's key: the lessons after it, in order)."""
    names = data.get("followed_by", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and LESSON_PATH.match(n) for n in names):
        raise LessonError(f"{folder / 'lesson.toml'}: followed_by must list folder names (lowercase, digits, hyphens)")
    if len(set(names)) != len(names):
        raise LessonError(f"{folder / 'lesson.toml'}: followed_by names a folder twice")
    return names


def load_lessons(folder: Path = LESSON_DIR) -> tuple[Lesson, ...]:
    """Every lesson, in order: `folder`'s lesson.toml (served at /learn), then each folder its
    `followed_by` names (served at /learn/<folder>; a following lesson names none itself)."""
    first = load_lesson(folder)
    try:
        data = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LessonError(f"{folder / 'lesson.toml'}: {exc!r}") from exc
    lessons = [first]
    for number, name in enumerate(_following(data, folder), start=2):
        lesson = load_lesson(folder / name, path=name, number=number)
        lessons.append(lesson)
    return tuple(lessons)


def load_lesson(folder: Path = LESSON_DIR, *, path: str = "", number: int = 1) -> Lesson:
    """One lesson: `folder`'s lesson.toml and the files it names (in `folder`)."""
    try:
        data = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
        if path and "followed_by" in data:
            raise LessonError(f"{folder / 'lesson.toml'}: only the first lesson says which lessons follow it")
        concepts = []
        for c in data["concepts"]:
            examples = tuple(
                Example(id=e["id"], title=e["title"], code=_read(folder, e["code"]), caption=e.get("caption", ""),
                        entry_point=e.get("entry_point"),
                        inputs=tuple(e["inputs"]) if "inputs" in e else None, checks=_checks(folder, e),
                        prints=tuple(e.get("prints", ())))
                for e in c.get("examples", []))
            concepts.append(Concept(id=c["id"], title=c["title"], text=_read(folder, c["text"]), examples=examples,
                                    exercises=tuple(c.get("exercises", []))))
        recap = None
        if "recap" in data:
            r = data["recap"]
            recap = Recap(id=r.get("id", "key-points"), title=r.get("title", "Key points"), text=_read(folder, r["text"]))
        return Lesson(title=data["title"], intro=_read(folder, data["intro"]), concepts=tuple(concepts), recap=recap,
                      path=path, number=number, short_title=data.get("short_title", ""))
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise LessonError(f"{folder / 'lesson.toml'}: {exc!r}") from exc


@dataclass(frozen=True)
class PlacementProblem:
    """An exercise of the catalog the lessons do not place once, or a slug a lesson names in vain."""

    slug: str
    message: str
    #: The line of the lesson.toml naming the slug, where it names it.
    line: int | None = None
    #: The lesson.toml at fault, where one is (None: the lessons as a whole).
    file: Path | None = None


def placement_problems(lesson_file: Path, slugs: Iterable[str]) -> list[PlacementProblem]:
    """Every exercise of the built-in catalog (`slugs`) is placed under exactly one concept of one
    lesson (`[[concepts]] exercises = [...]` in `lesson_file` or in a lesson its `followed_by`
    names), and the lessons name no other: otherwise the first lesson's page lists it under "More
    exercises", after the concepts, or names nothing."""
    files = [lesson_file]
    try:
        first = tomllib.loads(lesson_file.read_text(encoding="utf-8"))
        files += [lesson_file.parent / name / "lesson.toml" for name in _following(first, lesson_file.parent)]
    except tomllib.TOMLDecodeError as exc:
        return [PlacementProblem("(lesson)", f"lesson.toml does not parse: {exc}")]
    except LessonError as exc:
        return [PlacementProblem("(lesson)", str(exc))]
    placed: list[tuple[str, Path]] = []
    texts: dict[Path, list[str]] = {}
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            concepts = tomllib.loads(text).get("concepts", [])
        except (OSError, tomllib.TOMLDecodeError) as exc:
            return [PlacementProblem("(lesson)", f"{file} does not parse: {exc}", file=file)]
        texts[file] = text.splitlines()
        placed += [(slug, file) for concept in concepts if isinstance(concept, dict)
                   for slug in concept.get("exercises", []) if isinstance(slug, str)]

    def where(slug: str) -> tuple[int | None, Path | None]:
        """The first line naming `slug`, and its file."""
        for file in files:
            line = next((n for n, text in enumerate(texts[file], start=1) if f'"{slug}"' in text), None)
            if line is not None:
                return line, file
        return None, None

    names = [slug for slug, _ in placed]
    wanted = set(slugs)
    problems = [PlacementProblem(slug, "not placed in any lesson: add its slug to a concept's exercises")
                for slug in sorted(wanted - set(names))]
    problems += [PlacementProblem(slug, "placed under more than one concept: keep it under one", *where(slug))
                 for slug in sorted({s for s in names if names.count(s) > 1})]
    problems += [PlacementProblem(slug, "a lesson names it, but no exercise has this slug", *where(slug))
                 for slug in sorted(set(names) - wanted)]
    return problems


@lru_cache(maxsize=1)
def the_lessons() -> tuple[Lesson, ...]:
    return load_lessons()


def the_lesson() -> Lesson:
    """The first lesson (/learn)."""
    return the_lessons()[0]


def lesson_at(path: str) -> Lesson | None:
    """The lesson after the first served at /learn/<path>; None when no lesson is."""
    return next((lesson for lesson in the_lessons()[1:] if lesson.path == path), None)


def lesson_url(lesson: Lesson) -> str:
    return url_for("learn.exercise_page", slug=lesson.path) if lesson.path else url_for("learn.lesson_page")


#: The anchor of the lesson page's list of the exercises no concept places.
MORE_ID, MORE_TITLE = "more-exercises", "More exercises"


def lesson_document(lesson: Lesson, published: list[Exercise], elsewhere: Iterable[str] = ()) -> dict[str, Any]:
    """What the page renders: the lesson, and the published exercises under their concepts. The first
    lesson lists, under "More exercises", those that neither it nor another lesson (`elsewhere`:
    the slugs the other lessons place) names; a following lesson lists none."""
    by_slug = {e.slug: e for e in published}

    def card(exercise: Exercise) -> dict[str, Any]:
        return {"slug": exercise.slug, "title": exercise.title, "kind": exercise.kind,
                "difficulty": exercise.difficulty, "url": url_for("learn.exercise_page", slug=exercise.slug)}

    named = set(lesson.slugs) | set(elsewhere)
    return {
        "title": lesson.title,
        "intro": lesson.intro,
        "concepts": [{
            "id": c.id, "title": c.title, "markdown": c.text,
            "examples": [{"id": e.id, "title": e.title, "caption": e.caption, "code": e.code,
                          "entry_point": e.entry_point, "inputs": list(e.inputs) if e.inputs else None,
                          "checks": list(e.checks)}
                         for e in c.examples],
            "exercises": [card(by_slug[s]) for s in c.exercises if s in by_slug],
        } for c in lesson.concepts],
        "more": [card(e) for e in published if e.slug not in named] if lesson.number == 1 else [],
        "more_id": MORE_ID,
        "recap": None if lesson.recap is None else {"id": lesson.recap.id, "title": lesson.recap.title,
                                                    "markdown": lesson.recap.text},
    }


def _elsewhere(lessons: tuple[Lesson, ...], lesson: Lesson) -> set[str]:
    """The slugs the lessons other than `lesson` place."""
    return {slug for other in lessons if other is not lesson for slug in other.slugs}


@dataclass(frozen=True)
class LessonLink:
    """A lesson as the lessons' navigation links it: its label ("Lesson 2: Beyond the basics"), its
    short title ("Beyond the basics"), its page, and whether it is this page's."""

    label: str
    title: str
    url: str
    current: bool = False


def lesson_links(lessons: tuple[Lesson, ...], current: Lesson) -> dict[str, Any]:
    """The lessons' navigation of `current`'s page: every lesson in order (the current one marked),
    and the lessons before and after it (None at either end)."""
    links = [LessonLink(lesson.label, lesson.short_title or lesson.title, lesson_url(lesson), lesson is current)
             for lesson in lessons]
    at = lessons.index(current)
    return {"all": links, "previous": links[at - 1] if at > 0 else None,
            "next": links[at + 1] if at + 1 < len(links) else None}


#: The published built-in catalog, in its order: a course's own exercises are in that course alone
#: (exercise_access.py).
CATALOG = (Exercise.published.is_(True), Exercise.course_id.is_(None))
CATALOG_ORDER = (Exercise.difficulty, Exercise.slug)


def render_lesson_page(lesson: Lesson | None = None) -> Response:
    """The page of `lesson` (default: the first, /learn)."""
    published = list(db_session().scalars(select(Exercise).where(*CATALOG).order_by(*CATALOG_ORDER)))
    lessons = the_lessons()
    lesson = lesson or lessons[0]
    document = lesson_document(lesson, published, _elsewhere(lessons, lesson))
    return page_response(render_template("learn/lesson.html", lesson=document, lessons=lesson_links(lessons, lesson),
                                         api_base=API_BASE))


# ------------------------------------------------------------------- an exercise page's way


@dataclass(frozen=True)
class Neighbour:
    slug: str
    title: str


@dataclass(frozen=True)
class Way:
    """Where an exercise page sits: its breadcrumb, the lesson (`lesson_label`, linking to
    `lesson_url`) then the section (`section_title`, linking to `section_id`'s anchor on that
    lesson's page; None: no anchor, a course's own exercise), and the exercises before and after it
    in that lesson's order (None at either end, and for a course's exercise)."""

    section_title: str
    section_id: str | None
    previous: Neighbour | None = None
    next: Neighbour | None = None
    # Its place among its section's exercises (1-based) and how many there are; 0 when none.
    position: int = 0
    count: int = 0
    # After the lesson's last exercise: the recap that closes it, (anchor, title) on the lesson's page.
    end: tuple[str, str] | None = None
    lesson_label: str = "Lesson"
    lesson_url: str = "/learn"


def lesson_order(lesson: Lesson, published: Iterable[tuple[str, str]],
                 elsewhere: Iterable[str] = ()) -> list[tuple[str, str, str, str]]:
    """The published catalog's exercises (`published`: (slug, title), in the catalog's order) as
    `lesson`'s page lists them: (slug, title, section id, section title), each concept's in its
    order, then, on the first lesson, those no lesson places ("More exercises"; `elsewhere`: the
    slugs the other lessons place)."""
    titles = dict(published)
    order = [(slug, titles[slug], c.id, c.title) for c in lesson.concepts for slug in c.exercises if slug in titles]
    if lesson.number != 1:
        return order
    named = set(lesson.slugs) | set(elsewhere)
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
    """The way of a published exercise's page (see Way): from the lesson that places a catalog
    exercise (the first lesson for one no lesson places; the published catalog's order, read once
    per EXERCISE_CACHE_SECONDS), from its course for a course's."""
    session = db_session()
    if exercise.course_id is not None:
        way = course_way(session.scalar(select(Course.title).where(Course.id == exercise.course_id)))
        return replace(way, lesson_url=url_for("learn.lesson_page"))
    cache = current_app.extensions.get("gradquiz.lesson_order")
    if cache is None:
        cache = current_app.extensions["gradquiz.lesson_order"] = TtlCache(current_app.config["SETTINGS"].exercise_cache_ttl)
    lessons = the_lessons()

    def orders() -> list[list[tuple[str, str, str, str]]]:
        published = session.execute(select(Exercise.slug, Exercise.title).where(*CATALOG).order_by(*CATALOG_ORDER)).all()
        return [lesson_order(lesson, published, _elsewhere(lessons, lesson)) for lesson in lessons]

    placed = [(lesson, found) for lesson, order in zip(lessons, cache.get("orders", orders) or [])
              if (found := way_in_lesson(order, exercise.slug)) is not None]
    lesson, way = placed[0] if placed else (lessons[0], Way(MORE_TITLE, MORE_ID))
    way = replace(way, lesson_label=lesson.label, lesson_url=lesson_url(lesson))
    if way.next is None and lesson.recap is not None and way.section_id != MORE_ID:
        way = replace(way, end=(lesson.recap.id, lesson.recap.title))
    return way
