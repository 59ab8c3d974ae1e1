"""The background loops beside the grading (`flask worker`, `flask outbound`): the outbound runner,
the counters' folder, the roster syncer. Each is a step run again and again until told to stop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("gradquiz.background")


def serve(name: str, step: Callable[[], Any], stop: threading.Event, pause: float, *,
          again_at_once: bool = False) -> None:
    """Run `step` until `stop` is set, `pause` seconds apart (at once again while it reports work
    done, with `again_at_once`). An error is logged and the loop goes on: the database went away,
    and a background loop must never die on it."""
    while not stop.is_set():
        try:
            if step() and again_at_once:
                continue
        except Exception:
            log.exception("%s error", name)
        stop.wait(pause)


def start_thread(name: str, step: Callable[[], Any], stop: threading.Event, pause: float, *,
                 again_at_once: bool = False) -> threading.Thread:
    """`serve` in a daemon thread called `name`."""
    thread = threading.Thread(target=serve, args=(name, step, stop, pause), kwargs={"again_at_once": again_at_once},
                              name=name, daemon=True)
    thread.start()
    return thread
