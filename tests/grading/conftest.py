"""Fixtures of the grading tests: exercise folders read as the catalog stores them, one Judge."""

from __future__ import annotations

import pytest

from tests.grading.support import SECRET, load_exercise


@pytest.fixture(scope="session")
def judge():
    from service.grading.judge import Judge

    with Judge(SECRET, slots=1, timeout=10.0) as j:
        yield j


@pytest.fixture(scope="session")
def clamp_exercise() -> dict:
    return load_exercise("clamp-function")
