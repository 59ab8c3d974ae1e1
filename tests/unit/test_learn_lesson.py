"""The lessons' content (lesson/ and the lessons its lesson.toml is followed by, read by
service/learn/lesson.py): every exercise they name exists, every exercise is placed under one
concept of one lesson, every example file is there and parses."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from service.catalog import load_catalog
from service.catalog.loader import RESERVED_SLUGS
from service.config import PROJECT_ROOT
from service.learn.lesson import LessonError, load_lesson, load_lessons

EXERCISES = {e.slug: e for e in load_catalog(PROJECT_ROOT / "exercises")[0]}


def test_every_slug_the_lessons_name_exists_and_every_exercise_is_placed_once():
    slugs = [slug for lesson in load_lessons() for slug in lesson.slugs]
    unknown = [s for s in slugs if s not in EXERCISES]
    assert unknown == [], f"the lessons name exercises that exercises/ does not have: {unknown}"
    twice = sorted({s for s in slugs if slugs.count(s) > 1})
    assert twice == [], f"named under more than one concept: {twice}"
    missing = sorted(set(EXERCISES) - set(slugs))
    assert missing == [], f"exercises no concept names (add them to a lesson's lesson.toml): {missing}"


def test_the_lessons_in_order_each_at_a_path_no_exercise_can_take():
    lessons = load_lessons()
    assert [(lesson.number, lesson.path) for lesson in lessons] == [(1, ""), (2, "beyond")]
    assert [lesson.label for lesson in lessons] == ["Lesson 1: Custom autograd functions", "Lesson 2: Beyond the basics"]
    for lesson in lessons[1:]:
        assert lesson.path in RESERVED_SLUGS, f"/learn/{lesson.path} is a lesson: add it to RESERVED_SLUGS"
        assert lesson.recap is not None and lesson.concepts and all(c.exercises for c in lesson.concepts)


def test_concepts_and_examples_are_complete():
    lessons = load_lessons()
    # Anchors are per page; an example's id is also its draft key in the browser, shared by all pages.
    for lesson in lessons:
        anchors = [c.id for c in lesson.concepts] + [e.id for c in lesson.concepts for e in c.examples]
        anchors += [lesson.recap.id] if lesson.recap else []
        assert len(anchors) == len(set(anchors)), f"{lesson.label}: concept and example ids are anchors: keep them unique"
    drafts = [e.id for lesson in lessons for c in lesson.concepts for e in c.examples]
    assert len(drafts) == len(set(drafts)), "example ids are draft keys: keep them unique across the lessons"
    for lesson in lessons:
        assert lesson.intro.strip()
        for concept in lesson.concepts:
            assert concept.text.strip(), concept.id
            for example in concept.examples:
                ast.parse(example.code)  # a syntax error in an example would greet every learner
                assert (example.entry_point is None) == (example.inputs is None), example.id
                if example.entry_point:  # a Function's class, or a custom op's function
                    assert (f"class {example.entry_point}(" in example.code
                            or f"def {example.entry_point}(" in example.code), example.id
                # A script alone shows only what it prints: say what (the runs' test checks it).
                assert example.prints or example.entry_point, f"{example.id}: add prints = [...]"


def test_a_missing_file_is_a_lesson_error(tmp_path: Path):
    (tmp_path / "lesson.toml").write_text('title = "t"\nintro = "nope.md"\nconcepts = []\n')
    with pytest.raises(LessonError, match="nope.md"):
        load_lesson(tmp_path)
    (tmp_path / "lesson.toml").write_text('title = "t"\nintro = "../../etc/passwd"\nconcepts = []\n')
    with pytest.raises(LessonError):
        load_lesson(tmp_path)


def test_following_lessons_are_folders_of_the_first_and_name_none_themselves(tmp_path: Path):
    (tmp_path / "intro.md").write_text("Hello.")
    (tmp_path / "next").mkdir()
    (tmp_path / "next" / "intro.md").write_text("Again.")
    lesson = 'title = "t"\nintro = "intro.md"\n{}concepts = []\n'
    (tmp_path / "lesson.toml").write_text(lesson.format('followed_by = ["next"]\n'))
    (tmp_path / "next" / "lesson.toml").write_text(lesson.format('short_title = "Next one"\n'))
    first, second = load_lessons(tmp_path)
    assert (first.path, second.path, second.number, second.label) == ("", "next", 2, "Lesson 2: Next one")
    assert second.intro == "Again."  # its files are its own folder's
    (tmp_path / "next" / "lesson.toml").write_text(lesson.format('followed_by = ["next"]\n'))
    with pytest.raises(LessonError, match="only the first lesson"):
        load_lessons(tmp_path)
    for bad in ('["../next"]', '["Next"]', '"next"', '["next", "next"]'):
        (tmp_path / "lesson.toml").write_text(lesson.format(f"followed_by = {bad}\n"))
        with pytest.raises(LessonError, match="followed_by"):
            load_lessons(tmp_path)
    (tmp_path / "lesson.toml").write_text(lesson.format('followed_by = ["missing"]\n'))
    with pytest.raises(LessonError):
        load_lessons(tmp_path)


def test_placement_covers_the_following_lessons_and_names_their_file(tmp_path: Path):
    from service.learn.lesson import placement_problems

    (tmp_path / "next").mkdir()
    first = tmp_path / "lesson.toml"
    first.write_text('followed_by = ["next"]\n\n[[concepts]]\nexercises = ["one", "two"]\n')
    (tmp_path / "next" / "lesson.toml").write_text('[[concepts]]\nexercises = ["three", "two", "gone"]\n')
    found = placement_problems(first, ["one", "two", "three", "four"])
    problems = {(p.slug, p.message.split(":")[0], p.line, p.file) for p in found}
    assert problems == {
        ("four", "not placed in any lesson", None, None),
        ("two", "placed under more than one concept", 4, first),
        ("gone", "a lesson names it, but no exercise has this slug", 2, tmp_path / "next" / "lesson.toml"),
    }


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


def test_each_lesson_has_its_own_way_and_only_the_first_lists_the_unplaced():
    from service.learn.lesson import MORE_ID, lesson_order, way_in_lesson

    first, second = load_lessons()
    published = [(slug, f"T {slug}") for slug in sorted(first.slugs + second.slugs)] + [("extra", "Extra")]
    one = lesson_order(first, published, second.slugs)
    two = lesson_order(second, published, first.slugs)
    assert [row[0] for row in one] == [*first.slugs, "extra"] and one[-1][2] == MORE_ID
    assert [row[0] for row in two] == second.slugs  # none of the first's, and no "More exercises"
    # Previous and next stay within the lesson that places the exercise.
    opening = way_in_lesson(two, second.slugs[0])
    assert opening.previous is None and opening.section_id == second.concepts[0].id
    assert way_in_lesson(two, second.slugs[-1]).next is None
    assert way_in_lesson(one, first.slugs[-1]).next.slug == "extra"
    assert way_in_lesson(two, first.slugs[0]) is None
