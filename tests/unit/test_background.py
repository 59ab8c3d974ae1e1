"""The background loops (service/background.py): a failing step is logged and the loop goes on; a
step that reports work done runs again at once when asked to."""

from __future__ import annotations

import logging
import threading
import time

from service import background


def test_a_failing_step_is_logged_and_the_loop_goes_on(caplog):
    stop, calls = threading.Event(), []

    def step() -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("the database went away")
        if len(calls) == 3:
            stop.set()

    with caplog.at_level(logging.ERROR, logger="gradquiz.background"):
        background.serve("test-loop", step, stop, pause=0.01)
    assert len(calls) == 3
    assert [r.getMessage() for r in caplog.records] == ["test-loop error"]


class CountedStop(threading.Event):
    """A stop event that counts the pauses the loop takes on it (and does not sleep them)."""

    def __init__(self) -> None:
        super().__init__()
        self.pauses = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.pauses += 1
        return self.is_set()


def test_a_step_with_work_done_runs_again_at_once_only_when_asked():
    for again_at_once, expected_pauses in ((True, 0), (False, 3)):
        stop, calls = CountedStop(), []

        def step(stop=stop, calls=calls) -> bool:
            calls.append(1)
            if len(calls) == 3:
                stop.set()
            return True

        background.serve("test-loop", step, stop, pause=60, again_at_once=again_at_once)
        assert (len(calls), stop.pauses) == (3, expected_pauses), again_at_once
