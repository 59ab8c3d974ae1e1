"""`flask exercises validate` and `sync` prove the exercises: validate names each problem with its
file, line and field and fails; sync never makes current a version whose proof fails."""

from __future__ import annotations

import shutil

import pytest
from sqlalchemy import select

from service import create_app
from service.catalog import load_catalog
from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.models import Exercise, ExerciseVersion
from tests.grading.support import SIN_REFERENCE, SIN_TOML, sin_exercise, write_exercise

WRONG_SIGN = SIN_REFERENCE.replace("return grad_output * torch.cos(x)", "return -grad_output * torch.cos(x)")
QUIZ = "backward-none-for-bounds"


def run(app, *args):
    return app.test_cli_runner().invoke(args=list(args))


@pytest.fixture
def no_database_app(tmp_path):
    """An app for `exercises validate`, which touches no database: one run, not one per database."""
    return create_app({"database_url": f"sqlite:///{tmp_path / 'unused.sqlite3'}", "env": "testing"})


def test_validate_passes_on_the_repository(no_database_app, shared_judge):
    """Every exercise of exercises/ is valid, proven and placed in the lesson."""
    result = run(no_database_app, "exercises", "validate")
    assert result.exit_code == 0, result.output
    exercises, _ = load_catalog(PROJECT_ROOT / "exercises")
    assert result.output.startswith(f"{len(exercises)} exercises valid and proven in ")


def test_validate_proves_and_names_each_problem_with_its_file_line_and_field(no_database_app, tmp_path):
    """The judge validate opens here is open_judge's, with the settings' limits."""
    root = tmp_path / "exercises"
    write_exercise(root, "sin-function", sin_exercise({"reference.py": WRONG_SIGN}))
    typo = SIN_TOML.replace("range = [-3.0, 3.0]", "range_ = [-3.0, 3.0]")
    write_exercise(root, "sin-typo", sin_exercise({"exercise.toml": typo}))
    shutil.copytree(PROJECT_ROOT / "exercises" / QUIZ, root / QUIZ)

    result = run(no_database_app, "exercises", "validate", "--dir", str(root))
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert f"{root}/sin-function/reference.py: check gradcheck: " in result.output
    line = typo.splitlines().index("range_ = [-3.0, 3.0]") + 1
    assert f"{root}/sin-typo/exercise.toml:{line}: code.inputs[0].range_: unknown field (did you mean range?)" in lines
    assert not any("sin-typo" in text and "range_" not in text for text in lines)  # one problem, not three
    assert lines[-1].startswith("2 problems in 2 of 3 exercises (")

    alone = run(no_database_app, "exercises", "validate", "--dir", str(root), "--slug", QUIZ)
    assert alone.exit_code == 0 and alone.output.startswith("1 exercise valid and proven in ")
    assert run(no_database_app, "exercises", "validate", "--dir", str(root), "--slug", "nowhere").exit_code == 1


def test_validate_and_sync_name_a_catalog_exercise_the_lesson_does_not_place(bare_app, tmp_path):
    root = tmp_path / "exercises"
    for slug in (QUIZ, "squarefn-gradient-at-four"):
        shutil.copytree(PROJECT_ROOT / "exercises" / slug, root / slug)
    (tmp_path / "lesson").mkdir()
    (tmp_path / "lesson" / "lesson.toml").write_text(
        f'title = "t"\nintro = "intro.md"\n\n[[concepts]]\nid = "c"\nexercises = ["{QUIZ}", "gone-away"]\n')

    result = run(bare_app, "exercises", "validate", "--dir", str(root))
    assert result.exit_code == 1
    lesson = tmp_path / "lesson" / "lesson.toml"
    assert (f"{lesson}: squarefn-gradient-at-four: not placed in any lesson: add its slug to a concept's "
            "exercises") in result.output
    assert f"{lesson}:6: gone-away: a lesson names it, but no exercise has this slug" in result.output
    synced = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert synced.exit_code == 0 and "2 created" in synced.output  # a warning: the lesson lists it at the end
    assert "warning: " in synced.output and "squarefn-gradient-at-four: not placed" in synced.output


def test_sync_keeps_the_last_proven_version_live_when_an_edit_fails_its_proof(bare_app, tmp_path, shared_judge):
    root = tmp_path / "exercises"
    folder = write_exercise(root, "sin-function", sin_exercise())
    first = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert first.exit_code == 0, first.output
    assert "1 created" in first.output and "1 proven" in first.output
    with bare_app.app_context():
        version = db_session().scalars(select(ExerciseVersion)).one()
        assert version.proof_status == "passed" and version.proven_at is not None
        assert version.proof["passed"] and version.proof["steps"][0]["subject"] == "reference.py (shared cases)"

    (folder / "reference.py").write_text(WRONG_SIGN)
    (folder / "exercise.toml").write_text(SIN_TOML.replace('title = "', 'title = "Revised: ', 1))
    broken = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert broken.exit_code == 0, broken.output  # `make run` goes on
    assert f"{root}/sin-function/reference.py: check gradcheck: " in broken.output
    assert "sin-function: its proof fails, keeps its last proven version" in broken.output
    assert "0 updated" in broken.output and "1 kept at their last valid version" in broken.output
    detail = bare_app.test_client().get("/api/v1/exercises/sin-function").json
    assert detail["version"] == 1 and not detail["title"].startswith("Revised: ")

    (folder / "reference.py").write_text(SIN_REFERENCE)
    mended = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert "1 updated" in mended.output and "kept" not in mended.output
    assert bare_app.test_client().get("/api/v1/exercises/sin-function").json["title"].startswith("Revised: ")
    again = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert "1 unchanged" in again.output and "proven" not in again.output  # unchanged content: not proven again


def test_sync_does_not_create_a_new_exercise_whose_proof_fails(bare_app, tmp_path, shared_judge):
    root = tmp_path / "exercises"
    write_exercise(root, "sin-function", sin_exercise({"starter.py": SIN_REFERENCE}))
    shutil.copytree(PROJECT_ROOT / "exercises" / QUIZ, root / QUIZ)
    synced = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert synced.exit_code == 0, synced.output
    assert f"{root}/sin-function/starter.py: (grade): the starter already passes every check" in synced.output
    assert "sin-function: its proof fails, not synced (no proven version yet)" in synced.output
    with bare_app.app_context():
        assert [e.slug for e in db_session().scalars(select(Exercise))] == [QUIZ]


def test_quizzes_are_proven_without_opening_a_judge(no_database_app, tmp_path, monkeypatch):
    def no_judge(*args, **kwargs):
        raise AssertionError("a quiz needs no sandbox")

    monkeypatch.setattr("service.jobs.worker.open_judge", no_judge)
    root = tmp_path / "exercises"
    shutil.copytree(PROJECT_ROOT / "exercises" / QUIZ, root / QUIZ)
    assert run(no_database_app, "exercises", "validate", "--dir", str(root)).exit_code == 0
    spec = root / QUIZ / "exercise.toml"
    text = spec.read_text()
    spec.write_text(text.replace("correct = false", "correct = true", 1))
    result = run(no_database_app, "exercises", "validate", "--dir", str(root))
    first_choice = text.splitlines().index("[[choices]]") + 1
    assert result.exit_code == 1
    assert f"{QUIZ}/exercise.toml:{first_choice}: choices: single_choice needs exactly one correct choice" in result.output
