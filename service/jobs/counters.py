"""The statistics counters' folder: takes the attempt events in, in batches, behind the grades.

A thread of `flask worker` (and of `flask outbound`): every COUNTERS_FOLD_SECONDS it folds the
events not yet counted into the counters (progress.fold_pending), a batch per transaction, until
none is left. Several folders may run at once (one per worker host): on PostgreSQL each batch
takes its events with SKIP LOCKED.
"""

from __future__ import annotations

import threading

from sqlalchemy.orm import sessionmaker

from .. import background
from ..config import Settings
from ..database import engine_for
from ..services import progress


class CounterFolder:
    def __init__(self, settings: Settings) -> None:
        self.interval = settings.counters_fold_seconds
        self.sessions = sessionmaker(bind=engine_for(settings.sqlalchemy_url), expire_on_commit=False)

    def run_once(self) -> int:
        """Fold every event not yet counted; how many were folded."""
        folded = 0
        while True:
            with self.sessions() as session:
                n = progress.fold_pending(session)
                session.commit()
            folded += n
            if n < progress.FOLD_BATCH:
                return folded

    def start_thread(self, stop: threading.Event) -> threading.Thread:
        return background.start_thread("counter-folder", self.run_once, stop, self.interval)
