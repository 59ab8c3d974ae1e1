"""The grading worker: claims jobs from the database and has the judge grade them.

One worker process holds one Judge (and so one warm zygote). `flask worker` starts several and
restarts any that dies. The grading core (`grade_attempt`, `execute_run`) does not know how the
job arrived, so another backend (Celery) can call it unchanged.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, object_session, sessionmaker

from .. import metrics
from ..catalog import proof
from ..config import Settings
from ..database import READ_ONLY, engine_for
from ..grading.errors import GraderFault
from ..logs import configure_logging, request_id_context
from ..models import (
    Attempt,
    Exercise,
    ExerciseProof,
    ExerciseVersion,
    GradingJob,
    PreviewAttempt,
    RegradeItem,
    Run,
    VariantPreparation,
)
from ..models.attempt import grade_columns
from ..rules import counted_score
from ..scoring import code_grade
from ..services import preparations, regrades
from ..services.preview import preview_scoring, preview_variant
from . import db_lease
from .counters import CounterFolder

log = logging.getLogger("gradquiz.worker")
IDLE_SLEEP_MIN, IDLE_SLEEP_MAX = 0.005, 0.05
#: A worker's exit code when a required sandbox layer is missing: restarting it cannot help.
EXIT_SANDBOX_MISSING = 3


#: Exercise versions' payloads kept per process (a version is immutable: content-addressed).
PAYLOAD_CACHE_SIZE = 256
#: version id -> (its digest, its payload)
_payloads: OrderedDict[int, tuple[str, dict[str, Any]]] = OrderedDict()
_payloads_lock = threading.Lock()


def exercise_payload(attempt: Attempt | PreviewAttempt | VariantPreparation) -> dict[str, Any]:
    """What the judge needs of the version the attempt answered (not the current one), read once
    per version and process: a version never changes, and reading it (its whole content, as JSON)
    with every claimed attempt cost more CPU than the rest of the claim. The judge only reads it.

    A hit is checked against the version's digest (one indexed read): a deleted course exercise's
    version id is given again to a new version on SQLite (its rowids restart past the highest kept),
    and the process must not grade the new one with the old one's files."""
    version_id = attempt.exercise_version_id
    with _payloads_lock:
        kept = _payloads.get(version_id)
    if kept is not None:
        with _read_only(attempt) as connection:
            digest = connection.scalar(select(ExerciseVersion.digest).where(ExerciseVersion.id == version_id))
        if digest == kept[0]:
            with _payloads_lock:
                if version_id in _payloads:
                    _payloads.move_to_end(version_id)
            return kept[1]
    digest, payload = _read_version(attempt, version_id)
    with _payloads_lock:
        _payloads[version_id] = (digest, payload)
        while len(_payloads) > PAYLOAD_CACHE_SIZE:
            _payloads.popitem(last=False)
    return payload


def grade_attempt(judge: Any, attempt: Attempt) -> dict[str, Any]:
    """Column values of a graded code attempt. Raises GraderFault for the grader's own faults."""
    # The learner's own hidden inputs (service/variants.py); a regrade passes the same variant.
    session = object_session(attempt)
    assert session is not None  # the attempt was loaded by the worker's session
    result = preparations.grade_in_variant(judge, preparations.connections(session), exercise_payload(attempt),
                                           attempt.code or "", version_id=attempt.exercise_version_id,
                                           client_id=attempt.client_id, learner=attempt.learner)
    # Under the scoring policy the attempt was submitted with; the report keeps its checks score.
    score, correct = code_grade(attempt.scoring, result)
    return {"score": counted_score(score, attempt.penalties), "grader_score": score, "correct": correct, "result": result,
            **grade_columns(result, correct, is_code=True)}


def execute_run(judge: Any, run: Run) -> dict[str, Any]:
    try:
        result = judge.run(run.code, run.entry_point, run.inputs, options=run.options)
    except ValueError as exc:  # an input spec the API let through: report it, do not retry
        result = {"status": "invalid_inputs", "error": {"message": str(exc)}}
    return {"result": result}


def grade_preview(judge: Any, preview: PreviewAttempt) -> dict[str, Any]:
    """Column values of a graded code preview (services/preview.py): graded as an attempt, in the
    previewer's own variant, with nothing of an attempt's penalties, event or passback."""
    payload = exercise_payload(preview)
    result = judge.grade(payload, preview.code or "", variant=preview_variant(preview.client_id, preview.actor))
    # The version's own scoring rules, as a learner's attempt at it would take them by default.
    score, correct = code_grade(preview_scoring(payload["spec"]), result)
    return {"score": score, "correct": correct, "result": result}


def prepare_variant(judge: Any, job: VariantPreparation) -> dict[str, Any]:
    """A learner's reference results of a code exercise version, ahead of their first grade."""
    return preparations.prepare(judge, job, exercise_payload(job))


def prove_version(judge: Any, job: ExerciseProof) -> dict[str, Any]:
    """The proof of a course exercise's version, in the sandbox like a learner's code (the author's
    code is learner code there); db_lease.complete copies the report to the version."""
    # Read once, not kept (exercise_payload's cache is for the versions learners answer again and again).
    payload = read_payload(job, job.exercise_version_id)
    report = proof.prove(judge, payload, spec_text=payload.get("spec_text"))
    # `status`, as every job's result has (the metrics' verdict, an internal error's "internal_error").
    return {"result": {"status": "passed" if report.passed else "failed", **report.to_json()}}


def _read_only(job: Any) -> Any:
    """A connection of its own that reads without a lock, for a job the worker's session loaded: in
    the session it would open a transaction, which on SQLite holds the database's write lock through
    the whole grade."""
    session = object_session(job)
    assert session is not None  # the job was loaded by the worker's session
    engine = session.get_bind()
    assert isinstance(engine, Engine)
    return engine.execution_options(**{READ_ONLY: True}).connect()


def _read_version(job: Any, version_id: int) -> tuple[str, dict[str, Any]]:
    with _read_only(job) as connection:
        slug, digest, content = connection.execute(
            select(Exercise.slug, ExerciseVersion.digest, ExerciseVersion.content)
            .join(ExerciseVersion, ExerciseVersion.exercise_id == Exercise.id).where(ExerciseVersion.id == version_id)).one()
    # exercise.toml as written, where the version keeps it (a course's): a proof's problems get its lines.
    spec_text = (content.get("source") or {}).get("exercise.toml")
    return digest, {"slug": slug, "spec": content["spec"], "files": content["files"], "spec_text": spec_text}


def read_payload(job: Any, version_id: int) -> dict[str, Any]:
    """What the judge needs of a version ({"slug", "spec", "files"}), read for a job."""
    return _read_version(job, version_id)[1]


HANDLERS: dict[type, Callable[[Any, Any], dict[str, Any]]] = {
    # Runs first: a learner is watching the Run button; attempts can take a few ms more.
    Run: execute_run,
    Attempt: grade_attempt,
    # A course's staff watching "Preview as a learner"; never counted.
    PreviewAttempt: grade_preview,
    # An author is watching "Prove"; after the learners' own jobs.
    ExerciseProof: prove_version,
    # Ahead of a learner's first grade, whenever the learners' own jobs leave time.
    VariantPreparation: prepare_variant,
    # Last: a regrade (possibly every attempt of a course) waits for the learners' own jobs.
    RegradeItem: regrades.grade_item,
}


def process_job(settings: Settings, judge: Any, session: Session, model: type, job: Any, worker_id: str) -> str:
    """Grade a claimed job and store the outcome; the same steps for every backend.

    Returns GRADED (stored), "lost" (another worker owns the job now: nothing stored), QUEUED
    (a grader fault: to be tried again) or ERROR (the last try failed: stored as internal_error).
    Log lines written meanwhile carry the request id of the request that made the job.
    """
    with request_id_context(job.request_id):
        return _process_job(settings, judge, session, model, job, worker_id)


def _process_job(settings: Settings, judge: Any, session: Session, model: type[GradingJob], job: Any,
                 worker_id: str) -> str:
    started = time.perf_counter()
    try:
        values = HANDLERS[model](judge, job)
    except Exception as exc:
        if not isinstance(exc, GraderFault):
            log.exception("grader error on %s %s (try %d)", model.__name__, job.id, job.tries)
        outcome = db_lease.give_up_or_retry(session, model, job.id, worker_id, settings.grading_max_tries)
        log.warning("grader fault on %s %s (try %d): %s -> %s", model.__name__, job.id, job.tries, exc, outcome)
        if outcome == db_lease.ERROR:
            metrics.observe_job(model.JOB_KIND, job_label(job), time.perf_counter() - started, "internal_error")
        return outcome
    seconds = time.perf_counter() - started
    stored = db_lease.complete(session, model, job.id, worker_id, values, job=job)
    log.info("%s %s %s in %.1f ms", model.JOB_KIND, job.id, "graded" if stored else "lease lost, result dropped",
             seconds * 1000)
    if not stored:
        return "lost"
    metrics.observe_job(model.JOB_KIND, job_label(job), seconds, values["result"].get("status", "unknown"))
    return db_lease.GRADED


def job_label(job: Any) -> str:
    """The exercise a job's metrics are filed under."""
    if isinstance(job, RegradeItem):
        return "regrade"  # not the exercise's: a regrade's timings are not its learners' waits
    if isinstance(job, PreviewAttempt):
        return "preview"  # a course's draft: one label for all previews, not one per course exercise
    if isinstance(job, ExerciseProof):
        return "proof"  # an author's exercise: one label for all, not one per course exercise
    if isinstance(job, VariantPreparation):
        return "preparation"  # not the exercise's: no learner waits on it
    return exercise_payload(job)["slug"] if isinstance(job, Attempt) else "run"


class Worker:
    """The database backend: claims the oldest queued job from the database, in a loop."""

    def __init__(self, settings: Settings, judge: Any, worker_id: str | None = None) -> None:
        self.settings = settings
        self.judge = judge
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        engine = engine_for(settings.sqlalchemy_url)
        self.sessions = sessionmaker(bind=engine, expire_on_commit=False)
        self.lease = timedelta(seconds=settings.grading_lease_seconds)
        # SQLite: a claim takes the database's write lock (BEGIN IMMEDIATE), for which the web's
        # POSTs and the other workers queue; a read beside the writers first says which tables
        # hold a claimable job, so that an empty table, or an idle worker's poll, takes no lock.
        # (PostgreSQL's claims skip locked rows and lock nothing else: no need.)
        self.peek_engine = engine.execution_options(**{READ_ONLY: True}) if engine.dialect.name == "sqlite" else None

    def _models_to_claim(self) -> list[type[GradingJob]]:
        if self.peek_engine is None:
            return list(HANDLERS)
        with self.peek_engine.connect() as connection:
            return db_lease.claimable_models(connection, list(HANDLERS), self.worker_id)

    def run_once(self) -> bool:
        """Claim and finish one job (or, with none to grade, apply part of a regrade whose apply
        did not finish in its request); False when there was nothing to do."""
        with self.sessions() as session:
            for model in self._models_to_claim():
                job, more = db_lease.claim_next(session, model, self.worker_id, self.lease,
                                                self.settings.grading_max_tries)
                if job is not None:
                    # Another job waits: the child forked after this grade takes it at once, and
                    # skips the warm-up that only pays while a child waits idle (pool.py).
                    set_backlog = getattr(self.judge, "set_backlog", None)  # a test's judge may have none
                    if set_backlog is not None:
                        set_backlog(more)
                    process_job(self.settings, self.judge, session, model, job, self.worker_id)
                    return True
            return regrades.continue_applying(session, regrades.APPLY_WORKER_SECONDS)

    def serve(self, stop: threading.Event) -> None:
        idle = IDLE_SLEEP_MIN
        while not stop.is_set():
            try:
                if self.run_once():
                    idle = IDLE_SLEEP_MIN
                    continue
            except Exception:  # the database went away: wait and try again, never die on it
                log.exception("worker loop error")
                stop.wait(1.0)
                continue
            stop.wait(idle)
            idle = min(idle * 2, IDLE_SLEEP_MAX)


def open_judge(settings: Settings, *, slots: int = 1) -> Any:
    """A warm judge (its zygote started) with the settings' limits and sandbox layers, grading
    `slots` submissions at once (a worker process grades one; `flask exercises validate` proves
    on every core)."""
    from ..grading.judge import (
        Judge,  # starts the zygote; the web process never gets here
    )

    return Judge(settings.grading_seed, slots=slots, timeout=settings.grading_timeout_seconds,
                 memory_mb=settings.grading_memory_mb, output_limit=settings.grading_output_kib * 1024,
                 layers=settings.wanted_layers, custom_ops=settings.grading_custom_ops)


def missing_sandbox_layers(settings: Settings, sandbox: dict[str, Any]) -> list[str]:
    """Log which sandbox layers are active (`sandbox`: the sandbox's report); return the required
    ones that are not."""
    log.info("sandbox layers active: %s", ", ".join(sandbox["active"]) or "none")
    for layer, reason in sandbox["unavailable"].items():
        log.warning("sandbox layer %s is NOT active: %s", layer, reason)
    missing = [layer for layer in settings.required_layers if layer not in sandbox["active"]]
    if missing:
        log.error("refusing to grade: required sandbox layers are not active: %s (SANDBOX_REQUIRED)", ", ".join(missing))
    return missing


def worker_main(settings: Settings) -> None:
    """One worker process: a warm judge and the claim loop, until SIGTERM or SIGINT."""
    configure_logging(settings.log_format, "worker")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with open_judge(settings) as judge:
        if missing_sandbox_layers(settings, judge.info()["sandbox"]):
            sys.exit(EXIT_SANDBOX_MISSING)
        log.info("worker ready: %s", judge.info())
        Worker(settings, judge).serve(stop)


def supervise(settings: Settings, processes: int) -> None:  # noqa: C901
    """`flask worker`: run the grading workers, restart any that dies, serve their metrics, send
    score passbacks and webhooks, read course rosters from the LMSs, run the courses' git syncs,
    fold new grades into the statistics; stop them all on SIGTERM/SIGINT, or when one refuses to start for want of a
    required sandbox layer (exit code 3).

    The database backend runs `processes` worker processes; the Celery backend runs one Celery
    worker with `processes` pool processes (restarted too: a Celery worker can exit on a broker
    failure it does not recover from)."""
    import subprocess

    metrics.use_multiprocess_dir()  # the children record their metrics where this process serves them
    configure_logging(settings.log_format, "workers")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if settings.grading_backend == "celery":
        commands = [[sys.executable, "-m", "service.jobs.celery_worker", str(processes)]]
    else:
        commands = [[sys.executable, "-m", "service.jobs.worker"]] * processes
    metrics.serve_worker_metrics(settings.worker_metrics_bind)
    children: list[subprocess.Popen] = [subprocess.Popen(command) for command in commands]
    # Score passbacks and webhooks go out from here, beside the grading; imported here, so the
    # grading processes never load the HTTP and JOSE code.
    from ..deliveries import git_syncer, outbound_runner, roster_syncer
    from .dispatch import dispatcher_for

    outbound_runner(settings).start_thread(stop)
    roster_syncer(settings).start_thread(stop)
    git_syncer(settings, dispatcher_for(settings)).start_thread(stop)
    CounterFolder(settings).start_thread(stop)
    log.info("started %d grading worker processes (%s backend)", len(children), settings.grading_backend)
    refused = False
    while not refused and not stop.wait(0.5):
        for i, child in enumerate(children):
            if child.poll() is None:
                continue
            if child.returncode == EXIT_SANDBOX_MISSING:
                log.error("a worker refused to start: a required sandbox layer is missing; stopping")
                refused = True
                break
            log.warning("worker %d exited with %s; restarting it", child.pid, child.returncode)
            children[i] = subprocess.Popen(commands[i])
    for child in children:
        child.terminate()
    for child in children:
        try:
            # A Celery worker finishes the grades in hand first (warm shutdown).
            child.wait(timeout=settings.grading_timeout_seconds + 15)
        except subprocess.TimeoutExpired:
            child.kill()
    if refused:
        sys.exit(EXIT_SANDBOX_MISSING)


if __name__ == "__main__":
    worker_main(Settings.from_env())
