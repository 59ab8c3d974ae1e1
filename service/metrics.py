"""Prometheus metrics: request latency, grading time and verdicts, attempts and the queue.

Several processes record metrics: gunicorn's workers, and the grading workers' processes. With
PROMETHEUS_MULTIPROC_DIR set, prometheus_client keeps each process's values in files of that
directory, and a scrape (GET /metrics, or a worker's own server) sums the files of every process.
`use_multiprocess_dir()` sets the variable (a fresh temporary directory unless it is set already)
in the process that starts the others: gunicorn.conf.py at config load, the grading supervisor
before it starts its children.

prometheus_client decides once, when it is first imported, whether values live in this process's
memory or in those files: the variable must be set before that import. So this module never
imports prometheus_client at import time, nor does `init_app`: `flask worker` builds the app
before it calls `use_multiprocess_dir()`, and gunicorn.conf.py imports this module to call it.
The first request, scrape or `observe_job` imports it; the metric objects (`instruments()`) are
made then, on first use. If prometheus_client was
imported without the variable, `use_multiprocess_dir()` raises rather than let each process
count alone, unseen by every scrape.

Never imports torch or the judge: the web process imports this module.
"""

from __future__ import annotations

import atexit
import functools
import hmac
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flask import Flask, Response, current_app, request
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import NotFound

from .database import Database
from .errors import problem_abort
from .logs import request_seconds
from .models import Attempt, AttemptStatus, ExerciseProof, RegradeItem, Run, VariantPreparation

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry, Counter, Histogram
    from prometheus_client.metrics_core import Metric

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
METRICS_ENDPOINT = "metrics"
# From a refused request or a syntax error (a few ms) to a 30 s long poll or the longest grade.
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
# Any other method string a client sends is "other": a label value per string would be unbounded.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"


@dataclass(frozen=True)
class Instruments:
    """The metric objects this service records."""

    request_latency: Histogram
    grading_duration: Histogram
    sandbox_verdicts: Counter
    registration_failures: Counter


_making_instruments = threading.Lock()


def instruments() -> Instruments:
    """The metric objects, made (and prometheus_client imported) by the first caller."""
    with _making_instruments:  # two threads of a gunicorn worker must not register them twice
        return _make_instruments()


@functools.cache
def _make_instruments() -> Instruments:
    from prometheus_client import Counter, Histogram

    return Instruments(
        request_latency=Histogram("gradquiz_http_request_duration_seconds", "Time to answer an API request.",
                                  ["route", "method", "status"], buckets=SECONDS_BUCKETS),
        grading_duration=Histogram("gradquiz_grading_duration_seconds", "Time to grade an attempt or execute a run.",
                                   ["exercise"], buckets=SECONDS_BUCKETS),
        sandbox_verdicts=Counter("gradquiz_sandbox_verdicts", "Finished grading jobs by the judge's verdict.",
                                 ["kind", "verdict"]),
        registration_failures=Counter("gradquiz_lti_registration_failures",
                                      "Failed tries of LTI Dynamic Registration links, by the step that failed "
                                      "(configuration, registration) and how.", ["step", "reason"]),
    )


def use_multiprocess_dir() -> str:
    """Share metrics with the processes this one starts; call it before prometheus_client is imported.

    Keeps PROMETHEUS_MULTIPROC_DIR if it is set (creating the directory), else sets it to a new
    temporary directory, removed when this process exits.
    """
    path = os.environ.get(MULTIPROC_ENV)
    if path:
        os.makedirs(path, exist_ok=True)
        return path
    if "prometheus_client" in sys.modules:
        raise RuntimeError("use_multiprocess_dir() was called after prometheus_client was imported: "
                           "the metrics of this process tree would not be shared; call it first")
    # The pid in the name tells whose directory one left behind by a killed process was.
    path = tempfile.mkdtemp(prefix=f"gradquiz-metrics-{os.getpid()}-")
    os.environ[MULTIPROC_ENV] = path
    atexit.register(_remove_dir_of, os.getpid(), path)
    return path


def _remove_dir_of(owner_pid: int, path: str) -> None:
    # A forked child inherits this handler; only the process that made the directory removes it.
    if os.getpid() == owner_pid:
        shutil.rmtree(path, ignore_errors=True)


def observe_job(kind: str, exercise: str, seconds: float, verdict: str) -> None:
    """Record one finished grading job: kind "attempt", "run" (exercise "run"), "regrade", "proof" or
    "preparation" (exercise "regrade", "proof", "preparation"), its judge verdict (a proof's: passed
    or failed; a preparation's: prepared)."""
    metrics = instruments()
    metrics.grading_duration.labels(exercise).observe(seconds)
    metrics.sandbox_verdicts.labels(kind, verdict).inc()


class DatabaseCollector:
    """gradquiz_attempts{status} and gradquiz_queue_depth{kind} (attempt, run, regrade, proof, preparation), counted in
    the database at scrape time.

    Counted by the scraping process, not recorded by each process: the database holds the truth.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        queued = AttemptStatus.QUEUED.value
        try:
            # A read-only session: on SQLite it takes no write lock, so a scrape never delays a grade.
            with self.database.read_session_factory() as session:
                attempts_by_status = dict(session.execute(
                    select(Attempt.status, func.count()).group_by(Attempt.status)).all())
                queued_runs = session.scalar(select(func.count()).select_from(Run).where(Run.status == queued))
                queued_regrades = session.scalar(
                    select(func.count()).select_from(RegradeItem).where(RegradeItem.status == queued))
                queued_proofs = session.scalar(
                    select(func.count()).select_from(ExerciseProof).where(ExerciseProof.status == queued))
                queued_preparations = session.scalar(
                    select(func.count()).select_from(VariantPreparation).where(VariantPreparation.status == queued))
        except SQLAlchemyError as exc:  # the database is down: the other families still answer
            log.warning("metrics: database unavailable, attempt and queue counts skipped: %s", type(exc).__name__)
            return
        attempts = GaugeMetricFamily("gradquiz_attempts", "Attempts by status.", labels=["status"])
        for status in sorted({s.value for s in AttemptStatus} | set(attempts_by_status)):
            attempts.add_metric([status], attempts_by_status.get(status, 0))
        queue_depth = GaugeMetricFamily("gradquiz_queue_depth", "Jobs waiting for a grading worker.", labels=["kind"])
        queue_depth.add_metric(["attempt"], attempts_by_status.get(queued, 0))
        queue_depth.add_metric(["run"], queued_runs or 0)
        queue_depth.add_metric([RegradeItem.JOB_KIND], queued_regrades or 0)
        queue_depth.add_metric([ExerciseProof.JOB_KIND], queued_proofs or 0)
        queue_depth.add_metric([VariantPreparation.JOB_KIND], queued_preparations or 0)
        yield attempts
        yield queue_depth


def scrape_registry(database: Database | None = None) -> CollectorRegistry:
    """What a scrape shows: every process's metrics (multiprocess mode) or this process's, and
    the counts in `database` if given."""
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    if os.environ.get(MULTIPROC_ENV):
        MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)
    if database is not None:
        registry.register(DatabaseCollector(database))
    return registry


def init_app(app: Flask) -> None:
    """Time every request (from its first hook, service/logs.py, so a request a later hook
    refuses, a 415, is timed too) and serve GET /metrics."""
    app.after_request(_record_latency)
    app.add_url_rule("/metrics", METRICS_ENDPOINT, _metrics_view, methods=["GET"])


def _record_latency(response: Response) -> Response:
    seconds = request_seconds()
    if seconds is None or request.endpoint == METRICS_ENDPOINT:
        return response
    # The rule's template, never the path: one series per route, whatever ids clients send.
    route = request.url_rule.rule if request.url_rule is not None else UNMATCHED_ROUTE
    method = request.method if request.method in KNOWN_METHODS else "other"
    instruments().request_latency.labels(route, method, str(response.status_code)).observe(seconds)
    return response


def _metrics_view() -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    _authorize_scrape()
    registry = scrape_registry(current_app.extensions["gradquiz.db"])
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _authorize_scrape() -> None:
    """With METRICS_TOKEN, only its bearer may scrape; without it, production has no /metrics."""
    settings = current_app.config["SETTINGS"]
    if settings.metrics_token:
        presented = request.authorization
        token = presented.token if presented is not None and presented.type == "bearer" else None
        if not token or not hmac.compare_digest(token.encode(), settings.metrics_token.encode()):
            problem_abort(401, "Metrics need the metrics token: send it as 'Authorization: Bearer <token>'.",
                          headers={"WWW-Authenticate": 'Bearer realm="gradquiz metrics"'})
    elif settings.env == "production":
        problem_abort(404, NotFound.description)  # the same answer as any unknown route


@dataclass
class WorkerMetricsServer:
    """A grading worker's metrics endpoint, running in a daemon thread."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return self.server.server_port

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve_worker_metrics(bind: str) -> WorkerMetricsServer | None:
    """Serve every worker process's metrics on "host:port" (WORKER_METRICS_BIND); "" means none.

    Never stops the worker: a busy port or a malformed bind is logged, and the worker grades on
    without its metrics endpoint (None).
    """
    if not bind:
        return None
    host, _, port = bind.rpartition(":")
    try:
        from prometheus_client import start_http_server

        server, thread = start_http_server(int(port), addr=host.strip("[]"), registry=scrape_registry())
    except (OSError, ValueError) as exc:
        log.warning("worker metrics not served on %r: %s", bind, exc)
        return None
    log.info("worker metrics on http://%s:%d/metrics", host, server.server_port)
    return WorkerMetricsServer(server, thread)
