"""GRADING_BACKEND=celery with real Celery workers, started as `flask worker` subprocesses, on the
CI machine's PostgreSQL and on each broker: a private Redis server (so it can be restarted
without disturbing anything else) and a fresh virtual host on the machine's RabbitMQ.

The fault test submits code attempts while worker processes are killed with SIGKILL at random,
the broker restarts once and the database drops every connection once; afterwards every attempt
is graded exactly once, in time, with the result the embedded backend gives.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from service import create_app
from service.config import PROJECT_ROOT, Settings
from service.extensions import db_session
from service.jobs.worker import Worker, open_judge
from service.models import GRADED_EVENT, Attempt, AttemptEvent, Run
from tests.distributed.brokers import PrivateRedis, RabbitVhost
from tests.helpers import bearer

# Short limits keep the test quick; the lease outlasts the grading limit, as the settings demand.
LEASE_SECONDS, GRADING_LIMIT_SECONDS, SWEEP_SECONDS = 4, 2, 1
GRADING_SECRET = "celery-tests-grading-secret-0123456789"
ATTEMPTS, RUNS = 200, 10
# 200 attempts over about 25 s: time for five faults, each recovered from before the next.
SUBMIT_EVERY_SECONDS = 0.125
EXERCISES = ("clamp-function", "square-function", "double-function", "exp-saves-output")


def submissions() -> list[tuple[str, str]]:
    """(exercise, code): each exercise's reference and its known mistakes."""
    found = []
    for slug in EXERCISES:
        folder = PROJECT_ROOT / "exercises" / slug
        for path in [folder / "reference.py", *sorted((folder / "wrong").glob("*.py"))]:
            found.append((slug, path.read_text()))
    return found


def worker_env(database_url: str, broker_url: str, metrics_dir: Path) -> dict[str, str]:
    return {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "ENV": "testing", "DATABASE_URL": database_url,
            "GRADING_BACKEND": "celery", "CELERY_BROKER_URL": broker_url, "GRADING_LEASE_SECONDS": str(LEASE_SECONDS),
            "GRADING_TIMEOUT_SECONDS": str(GRADING_LIMIT_SECONDS), "GRADING_SWEEP_SECONDS": str(SWEEP_SECONDS),
            "GRADING_MAX_TRIES": "10", "GRADING_SECRET": GRADING_SECRET, "WORKER_METRICS_BIND": "",
            # the delivery is under test, not custom ops: a restarted worker opens its judge in about 2 s, not 5
            "GRADING_CUSTOM_OPS": "false"}


def children_of(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class Workers:
    """`flask worker` processes (each: a supervisor, its Celery worker, the Celery worker's pool
    processes), each in its own process group, kept at `count`."""

    def __init__(self, env: dict[str, str], count: int, processes: int, log_dir: Path) -> None:
        self.env, self.processes, self.log_dir = env, processes, log_dir
        self.running: list[subprocess.Popen] = []
        self.groups: list[int] = []  # every supervisor's process group, with its orphans
        self.log_files: dict[int, Path] = {}
        for _ in range(count):
            self.start()

    def start(self) -> None:
        path = self.log_dir / f"worker-{len(self.groups) + 1}.log"
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "wsgi", "worker", "--processes", str(self.processes)],
            cwd=PROJECT_ROOT, env=self.env, stdout=path.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        self.running.append(supervisor)
        self.groups.append(supervisor.pid)
        self.log_files[supervisor.pid] = path

    def pool_processes(self, supervisor: subprocess.Popen) -> list[int]:
        return [pool for celery in children_of(supervisor.pid) for pool in children_of(celery)]

    def ready(self, supervisor: subprocess.Popen) -> bool:
        """Every pool process of the worker has its judge warm."""
        pools = self.pool_processes(supervisor)
        warm = set(map(int, re.findall(r"pool process (\d+) ready", self.log_files[supervisor.pid].read_text())))
        return len(pools) == self.processes and set(pools) <= warm

    def all_ready(self) -> bool:
        return all(self.ready(w) for w in self.running)

    def wait_until_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not self.all_ready():
            assert time.monotonic() < deadline, self.logs()
            time.sleep(0.1)

    def kill_one_at_random(self, rng: random.Random) -> str:
        """SIGKILL one pool process (Celery starts another), one Celery worker (its supervisor
        starts another) or a whole machine's worth (supervisor and all: a new one is started)."""
        supervisor = rng.choice(self.running)
        target = rng.choice(["pool process", "celery worker", "whole worker"])
        if target == "pool process":
            os.kill(rng.choice(self.pool_processes(supervisor)), signal.SIGKILL)
        elif target == "celery worker":
            os.kill(children_of(supervisor.pid)[0], signal.SIGKILL)
        else:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()
            self.running.remove(supervisor)
            self.start()
        return target

    def stop(self) -> None:
        for supervisor in self.running:
            supervisor.terminate()
        for supervisor in self.running:
            try:
                supervisor.wait(timeout=30)
            except subprocess.TimeoutExpired:
                supervisor.kill()
        for group in self.groups:  # pool processes orphaned by a killed worker
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.running.clear()

    def logs(self) -> str:
        return "\n".join(path.read_text()[-3000:] for path in self.log_files.values())


@pytest.fixture
def postgres_url():
    """A new PostgreSQL database at the migration head, with the exercises synced."""
    from service import migrate
    from tests.conftest import _postgres_database

    source = _postgres_database()
    url = next(source)
    migrate.upgrade(url)
    yield url
    next(source, None)


@pytest.fixture(params=["redis", "rabbitmq"])
def broker(request, tmp_path):
    broker = PrivateRedis(tmp_path) if request.param == "redis" else RabbitVhost()
    broker.start()
    yield broker
    broker.stop()


def web_app(database_url: str, **settings):
    from service.auth import create_client
    from service.catalog import load_catalog, sync_catalog
    from service.models import Role

    app = create_app({"database_url": database_url, "env": "testing", "grading_secret": GRADING_SECRET, **settings})
    with app.app_context():
        sync_catalog(db_session(), load_catalog(PROJECT_ROOT / "exercises")[0])
        _client, key = create_client(db_session(), f"lms-{uuid.uuid4().hex[:6]}", Role.CLIENT)
        db_session().commit()
    return app, key


def drop_database_connections(database_url: str) -> int:
    """Terminate every other connection to the test database, as a failover or restart would."""
    engine = create_engine(Settings.from_env({}, database_url=database_url).sqlalchemy_url)
    with engine.connect() as conn:
        dropped = conn.scalar(text(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
    engine.dispose()
    return dropped


def without_timings(result: dict) -> dict:
    return {key: value for key, value in result.items() if key != "timings"}


def test_every_attempt_is_graded_once_through_kills_and_restarts(postgres_url, broker, tmp_path):  # noqa: C901
    app, key = web_app(postgres_url, grading_backend="celery", celery_broker_url=broker.url)
    client = app.test_client()
    workers = Workers(worker_env(postgres_url, broker.url, tmp_path / "metrics"), count=2, processes=2, log_dir=tmp_path)
    workers.wait_until_ready()
    rng = random.Random(5)
    work = submissions()
    submitted: dict[str, int] = {}  # attempt id -> index into `work`
    runs: list[str] = []
    faults: list[str] = []
    try:
        def post(path: str, body: dict, idempotency_key: str | None = None):
            """As an LMS would: a 503 (the database dropped the connection) is retried, with the
            same Idempotency-Key, so a retry never makes a second attempt."""
            headers = {**bearer(key), **({"Idempotency-Key": idempotency_key} if idempotency_key else {})}
            for _ in range(20):
                response = client.post(path, headers=headers, json=body)
                if response.status_code != 503:
                    return response
                faults.append(f"{path} answered 503, retried")
                time.sleep(0.2)
            return response

        # Submitting goes on until every fault of the plan has been applied and the workers had
        # a lease's time to recover from the last one, however fast the API answers.
        faults_over = threading.Event()

        def submit_all() -> None:
            n = 0
            while n < ATTEMPTS or not faults_over.is_set():
                slug, code = work[n % len(work)]
                response = post(f"/api/v1/exercises/{slug}/attempts", {"learner": f"learner-{n % 40}", "code": code},
                                idempotency_key=f"attempt-{n}")
                assert response.status_code == 202, response.json
                submitted[response.json["id"]] = n % len(work)
                if n % (ATTEMPTS // RUNS) == 0:
                    runs.append(post("/api/v1/runs", {"code": "print(6 * 7)", "wait": 0}).json["id"])
                n += 1
                time.sleep(SUBMIT_EVERY_SECONDS)

        def submit_all_or_record(errors: list[BaseException]) -> None:
            try:
                submit_all()
            except BaseException as exc:  # re-raised by the test's own thread
                errors.append(exc)

        submit_errors: list[BaseException] = []
        submitter = threading.Thread(target=submit_all_or_record, args=(submit_errors,))
        submitter.start()
        # One fault at a time, each once every worker is ready again, far enough apart that no
        # attempt meets two: a broker restart loses what Redis held, and a kill what a worker held.
        plan = ["kill", "broker", "database", "kill", "kill"]
        next_fault = time.monotonic() + 1
        give_up = time.monotonic() + 300
        while submitter.is_alive():
            if plan and time.monotonic() >= next_fault and workers.all_ready():
                fault = plan.pop(0)
                if fault == "broker":
                    broker.restart()
                    faults.append("broker restarted")
                elif fault == "database":
                    faults.append(f"database dropped {drop_database_connections(postgres_url)} connections")
                else:
                    faults.append(f"killed: {workers.kill_one_at_random(rng)}")
                next_fault = time.monotonic() + (1 if fault == "database" else LEASE_SECONDS + 1)
            if (not plan and time.monotonic() >= next_fault) or time.monotonic() > give_up:
                faults_over.set()  # give_up: workers that never get ready again fail the plan == [] check
            time.sleep(0.05)
        submitter.join()
        if submit_errors:
            raise submit_errors[0]
        assert len(submitted) >= ATTEMPTS and plan == [], faults

        deadline = time.monotonic() + 120
        engine = create_engine(Settings.from_env({}, database_url=postgres_url).sqlalchemy_url)
        with engine.connect() as conn:
            while time.monotonic() < deadline:
                unfinished = conn.scalar(
                    select(func.count()).select_from(Attempt).where(Attempt.status.in_(["queued", "running"])))
                unfinished += conn.scalar(select(func.count()).select_from(Run).where(Run.status.in_(["queued", "running"])))
                if unfinished == 0:
                    break
                time.sleep(0.5)
                conn.rollback()
        engine.dispose()
        assert unfinished == 0, f"{unfinished} jobs unfinished after {faults}\n{workers.logs()}"
    finally:
        workers.stop()

    with app.app_context():
        session = db_session()
        attempts = session.scalars(select(Attempt)).all()
        assert len(attempts) == len(submitted)
        assert {a.status for a in attempts} == {"graded"}, faults
        events = dict(session.execute(select(AttemptEvent.attempt_id, func.count()).where(AttemptEvent.type == GRADED_EVENT)
                                      .group_by(AttemptEvent.attempt_id)).all())
        assert len(events) == len(submitted) and set(events.values()) == {1}, "each attempt graded exactly once"
        # Submitted to graded within a few recoveries (a dead worker's lease runs out, the next
        # sweep sends the job again, it is graded within the limit): a job is never left waiting.
        # Not a tight timing check: on a shared 2-core machine one recovery took 6.2 s and 8.6 s
        # against 6 s. The late ones' history if not.
        bound = 3 * (LEASE_SECONDS + SWEEP_SECONDS + GRADING_LIMIT_SECONDS)
        late = [(a.id, a.created_at.time(), a.dispatched_at, a.started_at.time(), a.graded_at.time(), a.tries)
                for a in attempts if (a.graded_at - a.created_at).total_seconds() > bound]
        assert not late, (faults, late[:5], workers.logs())
        # A run has no Idempotency-Key: a 503 answered after its commit leaves one run more.
        run_rows = session.scalars(select(Run)).all()
        assert {r.status for r in run_rows} == {"graded"} and set(runs) <= {str(r.id) for r in run_rows}
        assert {r.result["output"]["stdout"] for r in run_rows} == {"42\n"}
        celery_results = {}  # index into `work` -> (the learner of one of its attempts, that attempt's result)
        for attempt in attempts:
            celery_results.setdefault(submitted[str(attempt.id)], (attempt.learner, without_timings(attempt.result)))

    # The embedded backend grades the same submissions, by the same learners (hidden inputs are
    # each learner's own: service/variants.py): same results.
    embedded_app, _embedded_key = web_app(postgres_url, grading_backend="database")
    embedded_client = embedded_app.test_client()
    ids = {}
    for index, (slug, code) in enumerate(work):
        ids[index] = embedded_client.post(f"/api/v1/exercises/{slug}/attempts", headers=bearer(key),
                                          json={"learner": celery_results[index][0], "code": code}).json["id"]
    settings = Settings.from_env(worker_env(postgres_url, broker.url, tmp_path / "metrics"), grading_backend="database")
    with open_judge(settings) as judge:
        worker = Worker(settings, judge)
        while worker.run_once():
            pass
    with embedded_app.app_context():
        for index, attempt_id in ids.items():
            embedded = db_session().get(Attempt, uuid.UUID(attempt_id))
            assert without_timings(embedded.result) == celery_results[index][1], work[index][0]


SLOW_REFERENCE = "import time\ntime.sleep(1.5)\n" + (PROJECT_ROOT / "exercises" / "clamp-function" / "reference.py").read_text()


def test_a_grade_killed_mid_way_is_graded_again_once(postgres_url, broker, tmp_path):
    """SIGKILL of the pool process grading it (Celery hands the task back at once), then of the
    Celery worker itself (the broker hands it out again, or the sweeper sends it after the lease).
    How long that takes is the fault test's business: here the one pool process must warm up again."""
    app, key = web_app(postgres_url, grading_backend="celery", celery_broker_url=broker.url)
    client = app.test_client()
    workers = Workers(worker_env(postgres_url, broker.url, tmp_path / "metrics"), count=1, processes=1, log_dir=tmp_path)
    try:
        workers.wait_until_ready()
        supervisor = workers.running[0]
        victims = {"pool process": lambda: workers.pool_processes(supervisor)[0],
                   "celery worker": lambda: children_of(supervisor.pid)[0]}
        for name, victim in victims.items():
            request_id = "celery-" + name.replace(" ", "-")
            attempt_id = uuid.UUID(client.post("/api/v1/exercises/clamp-function/attempts",
                                               headers={**bearer(key), "X-Request-Id": request_id},
                                               json={"learner": "ada", "code": SLOW_REFERENCE}).json["id"])
            wait_for_attempt(app, attempt_id, lambda a: a.status == "running", timeout=30)
            os.kill(victim(), signal.SIGKILL)
            graded = wait_for_attempt(app, attempt_id, lambda a: a.finished, timeout=60)
            assert (graded.status, graded.score, graded.tries) == ("graded", 1.0, 2), name
            with app.app_context():
                events = db_session().scalar(select(func.count()).select_from(AttemptEvent)
                                             .where(AttemptEvent.attempt_id == attempt_id))
            assert events == 1, name
            # The pool process that graded it logged the grade under the submission's request id.
            lines = [json.loads(line) for path in workers.log_files.values()
                     for line in path.read_text().splitlines() if line.startswith("{")]
            assert any(line["request_id"] == request_id and f"attempt {attempt_id} graded" in line["message"]
                       for line in lines), name
            workers.wait_until_ready()
    finally:
        workers.stop()


def wait_for_attempt(app, attempt_id: uuid.UUID, predicate, timeout: float) -> Attempt:
    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            attempt = db_session().get(Attempt, attempt_id, populate_existing=True)
        if predicate(attempt):
            return attempt
        assert time.monotonic() < deadline, (attempt.status, attempt.tries)
        time.sleep(0.05)
