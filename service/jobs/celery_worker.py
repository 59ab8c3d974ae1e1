"""The Celery backend's worker (GRADING_BACKEND=celery), started by `flask worker`.

Main process: consumes the `grading` queue and runs the sweeper (service/jobs/dispatch.py).
Each pool process: a warm judge, its zygote holding torch, started at `worker_process_init`; the
zygote forks the sandboxed child per submission, as with the database backend. A task carries a
job id only; it claims the job's row with a lease before grading and stores the result through
the same core (`process_job`), so a task delivered twice grades once and stores once.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import sessionmaker

from ..config import Settings
from ..database import dispose_engines, engine_for
from ..logs import configure_logging
from ..models import Attempt, ExerciseProof, GradingJob, PreviewAttempt, RegradeItem, Run, VariantPreparation
from ..models.base import utcnow
from ..services import regrades
from . import db_lease
from .dispatch import QUEUES, TASK_NAMES, CeleryDispatcher, make_celery, mark_dispatched
from .worker import EXIT_SANDBOX_MISSING, missing_sandbox_layers, open_judge, process_job

log = logging.getLogger("gradquiz.worker")
#: Retries of a task whose database went away (each waits longer, up to 30 s); after the last,
#: the sweeper sends the job again once its lease runs out.
DATABASE_RETRIES = 10


def grader_fault_backoff(tries: int) -> int:
    """Seconds before a job whose grader failed is tried again: 2, 4, 8… up to 60."""
    return min(2 ** tries, 60)


class PoolProcess:
    """What one pool process holds: its judge, started after the fork."""

    judge: Any = None


def create_worker_app(settings: Settings) -> Any:  # noqa: C901
    """The Celery app with the grading tasks and the pool processes' judges."""
    from celery import signals

    app = make_celery(settings)
    lease = timedelta(seconds=settings.grading_lease_seconds)
    # The engine's pool is emptied in each pool process after the fork (start_judge).
    sessions = sessionmaker(bind=engine_for(settings.sqlalchemy_url), expire_on_commit=False)

    def run(task: Any, model: type[GradingJob], job_id: str) -> str:
        owner = f"celery:{task.request.id}"
        with sessions() as session:
            job = db_lease.claim_job(session, model, uuid.UUID(job_id), owner, lease, settings.grading_max_tries)
            if job is None:
                log.info("%s %s: finished already or held by a live worker; duplicate delivery ignored",
                         model.JOB_KIND, job_id)
                return "skipped"
            outcome = process_job(settings, PoolProcess.judge, session, model, job, owner)
            if outcome == db_lease.QUEUED:
                mark_dispatched(session, model, [job.id], utcnow())
                raise task.retry(countdown=grader_fault_backoff(job.tries), max_retries=None)
        return outcome

    task_options = dict(bind=True, autoretry_for=(DBAPIError,), retry_backoff=1, retry_backoff_max=30,
                        retry_jitter=True, max_retries=DATABASE_RETRIES)

    @app.task(name=TASK_NAMES[Attempt], **task_options)
    def grade_attempt(self: Any, attempt_id: str) -> str:
        return run(self, Attempt, attempt_id)

    @app.task(name=TASK_NAMES[Run], **task_options)
    def execute_run(self: Any, run_id: str) -> str:
        return run(self, Run, run_id)

    @app.task(name=TASK_NAMES[PreviewAttempt], **task_options)
    def grade_preview(self: Any, preview_id: str) -> str:
        return run(self, PreviewAttempt, preview_id)
    @app.task(name=TASK_NAMES[ExerciseProof], **task_options)
    def prove_exercise(self: Any, proof_id: str) -> str:
        return run(self, ExerciseProof, proof_id)

    @app.task(name=TASK_NAMES[VariantPreparation], **task_options)
    def prepare_variant(self: Any, preparation_id: str) -> str:
        return run(self, VariantPreparation, preparation_id)

    @app.task(name=TASK_NAMES[RegradeItem], **task_options)
    def regrade_item(self: Any, item_id: str) -> str:
        return run(self, RegradeItem, item_id)

    def start_judge(**_: Any) -> None:
        dispose_engines()  # connections pooled before the fork belong to the parent
        PoolProcess.judge = open_judge(settings)
        log.info("pool process %d ready: %s", os.getpid(), PoolProcess.judge.info())

    def stop_judge(**_: Any) -> None:
        if PoolProcess.judge is not None:
            PoolProcess.judge.close()

    sweeper_stop = threading.Event()

    def start_sweeper(**_: Any) -> None:
        threading.Thread(target=sweep_forever, args=(settings, sweeper_stop), name="sweeper", daemon=True).start()

    # weak=False: these closures live only as long as the signals hold them.
    signals.worker_process_init.connect(start_judge, weak=False)
    signals.worker_process_shutdown.connect(stop_judge, weak=False)
    signals.worker_ready.connect(start_sweeper, weak=False)
    signals.worker_shutdown.connect(lambda **_: sweeper_stop.set(), weak=False)
    return app


def sweep_forever(settings: Settings, stop: threading.Event) -> None:
    """Every GRADING_SWEEP_SECONDS, send the jobs that are due again (see dispatch.due), and
    apply part of a regrade whose apply did not finish in its request."""
    dispatcher = CeleryDispatcher(settings)
    sessions = sessionmaker(bind=engine_for(settings.sqlalchemy_url), expire_on_commit=False)
    while not stop.wait(settings.grading_sweep_seconds):
        try:
            with sessions() as session:
                dispatcher.sweep(session, settings)
                regrades.continue_applying(session, settings.grading_sweep_seconds / 2)
        except Exception:  # the database or the broker is away: the next sweep tries again
            log.exception("sweep failed")


def probe_sandbox(settings: Settings) -> dict[str, Any]:
    """The sandbox layers this machine gives a child, as a zygote would find them (no torch needed)."""
    from ..grading.sandbox import Sandbox

    sandbox = Sandbox(settings.wanted_layers)
    try:
        sandbox.probe()
        return sandbox.report(os.getpid())
    finally:
        sandbox.close()


def celery_main(settings: Settings, processes: int) -> None:
    """A Celery worker with `processes` pool processes, until SIGTERM (warm shutdown).
    `flask worker` runs it under `supervise`, which restarts it and serves its metrics."""
    configure_logging(settings.log_format, "worker")
    # Check the sandbox once, before taking any task: a worker without it must not grade.
    if missing_sandbox_layers(settings, probe_sandbox(settings)):
        sys.exit(EXIT_SANDBOX_MISSING)
    app = create_worker_app(settings)
    app.worker_main([
        "worker", f"--concurrency={processes}", "--pool=prefork", f"--queues={','.join(QUEUES)}", "--loglevel=INFO",
        # Unique per process, so several workers on one machine do not clash; no gossip or
        # mingle: the workers share nothing but the queue.
        f"--hostname=gradquiz-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
    ])


if __name__ == "__main__":
    celery_main(Settings.from_env(), int(sys.argv[1]) if len(sys.argv) > 1 else Settings.from_env().grading_workers)
