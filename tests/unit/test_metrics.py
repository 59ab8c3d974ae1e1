"""Metrics without a database: several processes summed in multiprocess mode, the worker's server."""

import json
import logging
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service import metrics
from service.config import PROJECT_ROOT


def run_script(source: str) -> dict:
    """Run `source` in a fresh interpreter (prometheus_client not yet imported); its last line is JSON.

    A bare environment: no PROMETHEUS_MULTIPROC_DIR, METRICS_TOKEN or ENV of the caller leaks in.
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def samples_of(page: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(page) for s in family.samples}


def test_worker_processes_are_summed_on_the_workers_metrics_server():
    # As `flask worker` does: the app is built first, then the directory is set, then the
    # processes that grade are started.
    out = run_script("""
        import json, multiprocessing, sys, urllib.request
        from service import create_app, metrics
        create_app({"database_url": "sqlite://", "env": "testing"})
        imported_early = "prometheus_client" in sys.modules
        directory = metrics.use_multiprocess_dir()

        def grade(seconds):
            metrics.observe_job("attempt", "clamp-function", seconds, "passed")
            metrics.observe_job("run", "run", 0.01, "timeout")

        children = [multiprocessing.get_context("fork").Process(target=grade, args=(s,)) for s in (0.25, 0.5)]
        for child in children:
            child.start()
        for child in children:
            child.join()
        server = metrics.serve_worker_metrics("127.0.0.1:0")
        page = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read().decode()
        server.stop()
        print(json.dumps({"page": page, "directory": directory, "imported_early": imported_early}))
    """)
    assert out["imported_early"] is False
    samples = samples_of(out["page"])
    clamp = frozenset({("exercise", "clamp-function")})
    assert samples[("gradquiz_grading_duration_seconds_count", clamp)] == 2
    assert samples[("gradquiz_grading_duration_seconds_sum", clamp)] == pytest.approx(0.75)
    assert samples[("gradquiz_grading_duration_seconds_bucket", clamp | {("le", "0.25")})] == 1
    assert samples[("gradquiz_sandbox_verdicts_total", frozenset({("kind", "attempt"), ("verdict", "passed")}))] == 2
    assert samples[("gradquiz_sandbox_verdicts_total", frozenset({("kind", "run"), ("verdict", "timeout")}))] == 2
    # The temporary directory went with the process that made it.
    assert not Path(out["directory"]).exists()


def test_gunicorn_workers_are_summed_on_the_api_metrics():
    out = run_script("""
        import json, os, runpy, types
        from pathlib import Path
        config = runpy.run_path("gunicorn.conf.py")  # as gunicorn loads it, before preload_app
        from service import create_app
        client = create_app({"database_url": "sqlite://", "env": "testing"}).test_client()
        pid = os.fork()
        if pid == 0:
            client.get("/healthz")
            os._exit(0)
        os.waitpid(pid, 0)
        client.get("/healthz")
        page = client.get("/metrics").get_data(as_text=True)
        live_gauge = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"], f"gauge_livesum_{pid}.db")
        live_gauge.write_bytes(b"")
        config["child_exit"](None, types.SimpleNamespace(pid=pid))
        print(json.dumps({"page": page, "dead_worker_gauge_kept": live_gauge.exists()}))
    """)
    healthz = frozenset({("route", "/healthz"), ("method", "GET"), ("status", "200")})
    assert samples_of(out["page"])[("gradquiz_http_request_duration_seconds_count", healthz)] == 2
    assert out["dead_worker_gauge_kept"] is False


def test_the_directory_must_be_set_before_prometheus_client_is_imported(monkeypatch):
    import prometheus_client  # noqa: F401  (as any earlier metric would have)

    monkeypatch.delenv(metrics.MULTIPROC_ENV, raising=False)
    with pytest.raises(RuntimeError, match="call it first"):
        metrics.use_multiprocess_dir()


def test_a_directory_given_in_the_environment_is_kept(monkeypatch, tmp_path):
    wanted = tmp_path / "shared-metrics"
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(wanted))
    assert metrics.use_multiprocess_dir() == str(wanted) and wanted.is_dir()


def test_worker_metrics_server_serves_and_stops():
    metrics.observe_job("attempt", "unit-test-exercise", 0.02, "syntax_error")
    server = metrics.serve_worker_metrics("127.0.0.1:0")
    url = f"http://127.0.0.1:{server.port}/metrics"
    page = urllib.request.urlopen(url, timeout=5).read().decode()
    server.stop()
    assert 'gradquiz_grading_duration_seconds_count{exercise="unit-test-exercise"}' in page
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


def test_worker_metrics_off_busy_or_malformed_never_raise(caplog):
    assert metrics.serve_worker_metrics("") is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.WARNING, logger="service.metrics"):
            assert metrics.serve_worker_metrics(f"127.0.0.1:{port}") is None
            assert metrics.serve_worker_metrics("127.0.0.1:not-a-port") is None
    assert caplog.text.count("worker metrics not served") == 2
