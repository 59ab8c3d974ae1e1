"""Fixtures of the command-line tests."""

from __future__ import annotations

import contextlib

import pytest

from tests.grading.support import SECRET


@pytest.fixture(scope="session")
def proof_judge():
    from service.grading.judge import Judge

    with Judge(SECRET, slots=2, timeout=10.0) as judge:
        yield judge


@pytest.fixture
def shared_judge(monkeypatch, proof_judge):
    """`flask exercises …` proving on one judge for the session (a judge takes seconds to open,
    and a sync opens one each time it proves): open_judge hands it out and does not close it."""
    monkeypatch.setattr("service.jobs.worker.open_judge", lambda settings, slots=1: contextlib.nullcontext(proof_judge))
    return proof_judge
