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


@pytest.fixture(scope="session")
def catalog_proofs(judge) -> dict:
    """The proof of every exercise of exercises/, once per session: slug -> (ExerciseFile or
    None, ProofReport). The per-exercise tests assert on it."""
    from service.catalog.loader import exercise_folders, read_files
    from service.catalog.proof import prove_many

    return prove_many(judge, [(folder.name, read_files(folder)) for folder in exercise_folders(EXERCISES)])
