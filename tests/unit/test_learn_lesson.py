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
