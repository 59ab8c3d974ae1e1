"""A small per-process cache whose entries live a bounded number of seconds.

What a web process reads on nearly every request and changes rarely (an API key's client, an
exercise's current version, an exercise's detail response) is kept for `seconds`: a change made
elsewhere (another process, the CLI, a sync) shows within that time, never later. Threads of one
process share it; a lost race loads twice and keeps either answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """`get(key, load)`: the value kept for `key` if younger than `seconds`, else `load()`'s,
    kept unless it is None (a miss is never kept: an unknown key costs a load each time, and
    cannot fill the cache). `seconds` 0 keeps nothing. At most `max_entries` are kept; past that
    the cache starts again empty (the keys are few: clients, exercises)."""

    def __init__(self, seconds: float, *, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self.clock = clock
        self.entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K, load: Callable[[], V | None]) -> V | None:
        now = self.clock()
        entry = self.entries.get(key)
        if entry is not None and entry[0] > now:
            return entry[1]
        value = load()
        if self.seconds and value is not None:
            if len(self.entries) >= self.max_entries:
                self.entries = {}
            self.entries[key] = (now + self.seconds, value)
        return value

    def clear(self) -> None:
        self.entries = {}
