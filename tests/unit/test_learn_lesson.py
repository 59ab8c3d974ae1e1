"""The lesson's content (lesson/, read by service/learn/lesson.py): every exercise it names exists,
every exercise is placed under one concept, every example file is there and parses."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from service.catalog import load_catalog
from service.config import PROJECT_ROOT
from service.learn.lesson import LessonError, load_lesson

EXERCISES = {e.slug: e for e in load_catalog(PROJECT_ROOT / "exercises")[0]}


def test_every_slug_the_lesson_names_exists_and_every_exercise_is_placed_once():
    lesson = load_lesson()
    slugs = lesson.slugs
    unknown = [s for s in slugs if s not in EXERCISES]
    assert unknown == [], f"lesson/lesson.toml names exercises that exercises/ does not have: {unknown}"
    twice = sorted({s for s in slugs if slugs.count(s) > 1})
    assert twice == [], f"named under more than one concept: {twice}"
    missing = sorted(set(EXERCISES) - set(slugs))
    assert missing == [], f"exercises no concept names (add them to lesson/lesson.toml): {missing}"


def test_concepts_and_examples_are_complete():
    lesson = load_lesson()
    ids = [c.id for c in lesson.concepts] + [e.id for c in lesson.concepts for e in c.examples]
    assert len(ids) == len(set(ids)), "concept and example ids are anchors and draft keys: keep them unique"
    assert lesson.intro.strip()
    for concept in lesson.concepts:
        assert concept.text.strip(), concept.id
        for example in concept.examples:
            ast.parse(example.code)  # a syntax error in an example would greet every learner
            assert (example.entry_point is None) == (example.inputs is None), example.id
            if example.entry_point:
                assert f"class {example.entry_point}(" in example.code, example.id


def test_a_missing_file_is_a_lesson_error(tmp_path: Path):
    (tmp_path / "lesson.toml").write_text('title = "t"\nintro = "nope.md"\nconcepts = []\n')
    with pytest.raises(LessonError, match="nope.md"):
        load_lesson(tmp_path)
    (tmp_path / "lesson.toml").write_text('title = "t"\nintro = "../../etc/passwd"\nconcepts = []\n')
    with pytest.raises(LessonError):
        load_lesson(tmp_path)


def test_the_recap_closes_the_lesson():
    recap = load_lesson().recap
    assert recap is not None and recap.id == "key-points" and recap.title == "Key points"
    assert "grad_output" in recap.text and "gradcheck" in recap.text and "None" in recap.text


def test_an_exercises_way_runs_through_its_concept_then_on_to_the_next():
    from service.learn.lesson import MORE_ID, Neighbour, course_way, lesson_order, way_in_lesson

    lesson = load_lesson()
    first, second = lesson.concepts[0], lesson.concepts[1]
    # The catalog's order (easiest first) is not the lesson's; an unpublished exercise is skipped;
    # one no concept places comes last, under "More exercises".
    unpublished = second.exercises[1]
    published = [(slug, f"T {slug}") for slug in sorted(lesson.slugs) if slug != unpublished] + [("extra", "Extra")]
    order = lesson_order(lesson, published)
    assert [row[0] for row in order[:len(first.exercises)]] == list(first.exercises)
    assert order[-1] == ("extra", "Extra", MORE_ID, "More exercises")

    opening = way_in_lesson(order, first.exercises[0])
    assert opening.previous is None and opening.next == Neighbour(first.exercises[1], f"T {first.exercises[1]}")
    assert (opening.section_id, opening.section_title) == (first.id, first.title)
    assert (opening.position, opening.count) == (1, len(first.exercises))
    # A concept's last exercise leads to the next concept's first, and back.
    last = way_in_lesson(order, first.exercises[-1])
    assert last.next.slug == second.exercises[0] and last.section_id == first.id
    assert way_in_lesson(order, second.exercises[0]).previous.slug == first.exercises[-1]
    # The unpublished one is stepped over.
    assert way_in_lesson(order, second.exercises[0]).next.slug == second.exercises[2]
    assert way_in_lesson(order, unpublished) is None
    lesson_last = lesson.concepts[-1].exercises[-1]
    assert way_in_lesson(order, lesson_last).next == Neighbour("extra", "Extra")
    extra = way_in_lesson(order, "extra")
    assert extra.section_id == MORE_ID and extra.next is None and extra.previous.slug == lesson_last

    # A course's own exercise: named by its course, linked to no anchor, no neighbours.
    course = course_way("Deep Learning 101")
    assert course.section_title == "Course: Deep Learning 101" and course.section_id is None
    assert course.previous is None and course.next is None and course.end is None
