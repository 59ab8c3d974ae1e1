"""Fixtures of the grading tests: exercise folders read as the catalog stores them, one Judge."""

from __future__ import annotations

import pytest

from tests.grading.support import EXERCISES, SECRET, load_exercise


@pytest.fixture(scope="session")
def judge():
    from service.grading.judge import Judge

    with Judge(SECRET, slots=1, timeout=10.0) as j:
        yield j


@pytest.fixture(scope="session")
def clamp_exercise() -> dict:
    return load_exercise("clamp-function")


class RecordingJudge:
    """The judge, keeping every grade it gives by (exercise slug, source): the proof's grades, for
    the tests that read more of them than the proof does (the diagnosis of each wrong file)."""

    def __init__(self, judge) -> None:
        self.judge = judge
        self.grades: dict[tuple[str, str], dict] = {}

    def grade(self, exercise: dict, source: str, *, timeout: float | None = None, variant: str | None = None) -> dict:
        result = self.judge.grade(exercise, source, timeout=timeout, variant=variant)
        if variant is None:
            self.grades[(exercise["slug"], source)] = result
        return result


@pytest.fixture(scope="session")
def recording_judge(judge) -> RecordingJudge:
    return RecordingJudge(judge)


@pytest.fixture(scope="session")
def catalog_proofs(recording_judge) -> dict:
    """The proof of every exercise of exercises/, once per session: slug -> (ExerciseFile or
    None, ProofReport). The per-exercise tests assert on it."""
    from service.catalog.loader import exercise_folders, read_files
    from service.catalog.proof import prove_many

    return prove_many(recording_judge, [(folder.name, read_files(folder)) for folder in exercise_folders(EXERCISES)])


@pytest.fixture(scope="session")
def catalog_grades(catalog_proofs, recording_judge) -> dict[tuple[str, str], dict]:
    """The grade of every file the proof graded on the exercise's shared cases (each wrong/*.py and
    starter.py, the reference's first grade), by (slug, source)."""
    return recording_judge.grades
