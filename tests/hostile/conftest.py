"""Fixtures of the hostile suite: one judge per module (every layer the machine has), canaries."""

from __future__ import annotations

import os

import pytest

from tests.hostile.support import CANARY_VAR, Canaries, clamp, make_judge, set_canary_environment


@pytest.fixture(scope="session", autouse=True)
def canary_environment():
    """A secret-looking variable in the test process's environment, set before any judge starts."""
    old = set_canary_environment()
    yield
    if old is None:
        os.environ.pop(CANARY_VAR, None)
    else:
        os.environ[CANARY_VAR] = old


@pytest.fixture(scope="session")
def clamp_exercise() -> dict:
    return clamp()


@pytest.fixture(scope="module")
def judge(canary_environment, clamp_exercise):
    """Every sandbox layer the machine supports, short wall clock for the loops and sleeps."""
    j = make_judge(None, timeout=3.0)
    try:
        j.prepare(clamp_exercise)
        yield j
    finally:
        j.close()


@pytest.fixture
def canaries(tmp_path) -> Canaries:
    c = Canaries(tmp_path)
    yield c
    c.cleanup()
