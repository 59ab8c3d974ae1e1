"""Grading backends side by side, in one run: the embedded (database) backend, and Celery on
Redis with one and with two worker processes.

Each configuration runs `flask worker` against the same fresh PostgreSQL database and grades the
ClampFn reference:
- burst: ATTEMPTS code attempts submitted at once through the API; throughput is attempts
  graded per second from the first submission to the last grade (p50/p99: submit to graded,
  queueing included);
- paced: PACED attempts at PACED_RATE per second, under capacity; p50/p99 submit to graded.
Ratios are against the embedded backend with one worker process, measured in the same run.

    .venv/bin/python bench/backends.py [attempts]

Needs the local PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379; database 11 is emptied).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, select, text  # noqa: E402

from service import create_app, migrate  # noqa: E402
from service.auth import create_client  # noqa: E402
from service.catalog import load_catalog, sync_catalog  # noqa: E402
from service.extensions import db_session  # noqa: E402
from service.models import Attempt, AttemptEvent, Role  # noqa: E402

from grading import stats  # noqa: E402  (bench/grading.py: p50 and p99 as every benchmark here reports them)

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BROKER = "redis://127.0.0.1:6379/11"
CODE = (ROOT / "exercises" / "clamp-function" / "reference.py").read_text()
PACED, PACED_RATE = 60, 10
CONFIGURATIONS = [("embedded, 1 process", "database", 1), ("celery, 1 process", "celery", 1),
                  ("celery, 2 processes", "celery", 2)]


class Deployment:
    """A fresh PostgreSQL database with the catalog and an API client, and the web app on it."""

    def __init__(self, migrated: bool = True) -> None:
        """`migrated`: upgraded to this checkout's schema (not for another checkout's code to migrate)."""
        self.name = f"gradquiz_bench_{uuid.uuid4().hex[:8]}"
        self.admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))
        self.url = ADMIN_URL.rsplit("/", 1)[0] + f"/{self.name}"
        if migrated:
            migrate.upgrade(self.url)

    def app(self, backend: str):
        app = create_app({"database_url": self.url, "env": "testing", "grading_backend": backend,
                          "celery_broker_url": BROKER})
        with app.app_context():
            sync_catalog(db_session(), load_catalog(ROOT / "exercises")[0])  # idempotent
            _client, key = create_client(db_session(), f"bench-{uuid.uuid4().hex[:6]}", Role.CLIENT)
            for table in (AttemptEvent.__table__, Attempt.__table__):  # each configuration starts empty
                db_session().execute(table.delete())
            db_session().commit()
        return app, key

    def drop(self) -> None:
        from service.database import dispose_engines

        dispose_engines()
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        self.admin.dispose()


def start_workers(deployment: Deployment, backend: str, processes: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "ENV": "testing", "DATABASE_URL": deployment.url, "GRADING_BACKEND": backend,
           "CELERY_BROKER_URL": BROKER, "WORKER_METRICS_BIND": "",
           "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="gradquiz-bench-metrics-")}
    worker = subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "worker", "--processes", str(processes)],
                              cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    ready = "pool process" if backend == "celery" else "worker ready"
    deadline = time.monotonic() + 120
    while log.read_text().count(ready) < processes:
        if time.monotonic() > deadline or worker.poll() is not None:
            raise RuntimeError(f"workers did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return worker


def submit(client, key: str) -> uuid.UUID:
    response = client.post("/api/v1/exercises/clamp-function/attempts", json={"learner": "bench", "code": CODE},
                           headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 202, response.json
    return uuid.UUID(response.json["id"])


def wait_graded(app, ids: list[uuid.UUID], timeout: float = 600) -> list[Attempt]:
    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            rows = db_session().scalars(select(Attempt).where(Attempt.id.in_(ids))).all()
            if all(row.finished for row in rows) and len(rows) == len(ids):
                assert {row.status for row in rows} == {"graded"}, {row.status for row in rows}
                return rows
        if time.monotonic() > deadline:
            raise RuntimeError("attempts not graded in time")
        time.sleep(0.1)


def latencies(rows: list[Attempt]) -> list[float]:
    return [(row.graded_at - row.created_at).total_seconds() * 1000 for row in rows]


def measure(deployment: Deployment, backend: str, processes: int, attempts: int, log: Path) -> dict:
    app, key = deployment.app(backend)
    client = app.test_client()
    worker = start_workers(deployment, backend, processes, log)
    try:
        wait_graded(app, [submit(client, key) for _ in range(10)])  # warm: connections, first grades
        burst = wait_graded(app, [submit(client, key) for _ in range(attempts)])
        span = (max(r.graded_at for r in burst) - min(r.created_at for r in burst)).total_seconds()
        paced_ids = []
        for _ in range(PACED):
            paced_ids.append(submit(client, key))
            time.sleep(1 / PACED_RATE)
        paced = wait_graded(app, paced_ids)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    burst_ms, paced_ms = stats(latencies(burst)), stats(latencies(paced))
    return {"throughput": attempts / span, "burst_p50": burst_ms["p50_ms"], "burst_p99": burst_ms["p99_ms"],
            "paced_p50": paced_ms["p50_ms"], "paced_p99": paced_ms["p99_ms"]}


def main() -> None:
    attempts = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    deployment = Deployment()
    logs = Path(tempfile.mkdtemp(prefix="gradquiz-bench-backends-"))
    results = {}
    try:
        for name, backend, processes in CONFIGURATIONS:
            results[name] = measure(deployment, backend, processes, attempts, logs / f"{backend}-{processes}.log")
    finally:
        deployment.drop()
    base = results[CONFIGURATIONS[0][0]]
    print(f"{attempts} burst attempts, {PACED} paced at {PACED_RATE}/s; PostgreSQL; Celery on Redis "
          f"(cpus: {os.cpu_count()})")
    print(f"{'configuration':<22}{'graded/s':>10}{'x base':>8}{'burst p50':>11}{'burst p99':>11}"
          f"{'paced p50':>11}{'paced p99':>11}{'p50 x base':>12}")
    for name, r in results.items():
        print(f"{name:<22}{r['throughput']:>10.1f}{r['throughput'] / base['throughput']:>8.2f}"
              f"{r['burst_p50']:>9.0f}ms{r['burst_p99']:>9.0f}ms{r['paced_p50']:>9.1f}ms{r['paced_p99']:>9.1f}ms"
              f"{r['paced_p50'] / base['paced_p50']:>12.2f}")


if __name__ == "__main__":
    main()
