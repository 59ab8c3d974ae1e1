"""JSON log lines, and the request id that follows an attempt from its request to its worker."""

from __future__ import annotations

import io
import json
import logging
import time
import uuid
from datetime import UTC, datetime

import pytest

from service.extensions import db_session
from service.logs import log_handler
from service.models import Attempt
from tests.api.support import CLAMP_REFERENCE, attempt_state, start_worker, wait_for
from tests.helpers import bearer

CODE_URL = "/api/v1/exercises/clamp-function/attempts"
QUIZ_URL = "/api/v1/exercises/backward-none-for-bounds/attempts"


@pytest.fixture
def json_log():
    """The JSON lines every logger writes during the test, as the web process writes them."""
    stream = io.StringIO()
    handler = log_handler("json", "web", stream)
    root = logging.getLogger()
    previous_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def lines() -> list[dict]:
        return [json.loads(line) for line in stream.getvalue().splitlines()]

    yield lines
    root.removeHandler(handler)
    root.setLevel(previous_level)


def test_every_response_names_its_request(client):
    first, second = client.get("/api/v1/exercises"), client.get("/api/v1/nowhere")
    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]
    assert second.status_code == 404 and second.headers["X-Request-Id"]


@pytest.mark.parametrize(("sent", "kept"), [
    ("lb-7f3a.42", True),
    ("x" * 65, False),          # too long for a log field
    ("a b", False),             # spaces would split a text log line
    ("id\u00e9", False),
])
def test_a_proxys_request_id_is_kept_only_if_plain(client, sent, kept):
    returned = client.get("/api/v1/exercises", headers={"X-Request-Id": sent}).headers["X-Request-Id"]
    assert (returned == sent) is kept
    assert 1 <= len(returned) <= 64


def test_log_lines_are_json_with_the_request_id(client, client_key, json_log):
    response = client.post(QUIZ_URL, json={"learner": "ada", "answer": "none-each"},
                           headers={**bearer(client_key), "X-Request-Id": "req-quiz-1"})
    assert response.status_code == 201
    access = [line for line in json_log() if line["logger"] == "gradquiz.access"]
    assert len(access) == 1
    assert access[0] | {"time": None, "duration_ms": None} == {
        "time": None, "level": "INFO", "logger": "gradquiz.access", "message": f"POST {QUIZ_URL} 201",
        "request_id": "req-quiz-1", "process": access[0]["process"], "service": "gradquiz-web",
        "method": "POST", "path": QUIZ_URL, "status": 201, "duration_ms": None,
        "client_id": access[0]["client_id"]}
    assert access[0]["client_id"] is not None and access[0]["duration_ms"] >= 0
    assert client_key not in "".join(map(json.dumps, json_log()))


def test_the_request_id_follows_an_attempt_to_its_worker(app, client, client_key, admin_key, worker, json_log):
    request_id = f"trace-{uuid.uuid4().hex[:8]}"
    response = client.post(CODE_URL, json={"learner": "ada", "code": CLAMP_REFERENCE},
                           headers={**bearer(client_key), "X-Request-Id": request_id})
    assert response.status_code == 202 and response.headers["X-Request-Id"] == request_id
    attempt_id = uuid.UUID(response.json["id"])
    with app.app_context():
        assert db_session().get(Attempt, attempt_id).request_id == request_id
    # The dashboard's attempt view shows it, for the operator looking for its log lines.
    assert client.get(f"/api/v1/admin/attempts/{attempt_id}", headers=bearer(admin_key)).json["request_id"] == request_id
    wait_for(lambda: attempt_state(app, attempt_id)[0] == "graded", 60)
    wait_for(lambda: any(line["logger"] == "gradquiz.worker" for line in json_log()), 10)
    graded = [line for line in json_log() if line["logger"] == "gradquiz.worker"]
    assert [line["request_id"] for line in graded] == [request_id]
    assert str(attempt_id) in graded[0]["message"]


def test_a_worker_process_logs_json_under_the_attempts_request_id(app, client, client_key, database_url):
    request_id = f"trace-{uuid.uuid4().hex[:8]}"
    attempt_id = uuid.UUID(client.post(CODE_URL, json={"learner": "ada", "code": CLAMP_REFERENCE},
                                       headers={**bearer(client_key), "X-Request-Id": request_id}).json["id"])
    process = start_worker(database_url)
    try:
        wait_for(lambda: attempt_state(app, attempt_id)[0] == "graded", 90)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert lines and all(line["service"] == "gradquiz-worker" for line in lines)
    about_the_attempt = [line for line in lines if str(attempt_id) in line["message"]]
    assert about_the_attempt and all(line["request_id"] == request_id for line in about_the_attempt)
    # Lines about no job (start-up, readiness) carry no request id.
    assert any(line["request_id"] is None for line in lines)


def test_a_json_line_carries_the_exception_the_extras_and_its_own_second():
    stream = io.StringIO()
    handler = log_handler("json", "worker", stream)
    logger = logging.getLogger("gradquiz.test-json-line")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise ValueError("no such version")
        except ValueError:
            logger.exception("grading %s failed", "ab12", extra={"when": datetime(2026, 1, 2, tzinfo=UTC), "tries": 3})
        record = logging.makeLogRecord({"name": "x", "levelname": "INFO", "msg": "later", "created": 1_800_000_000.5})
        handler.handle(record)
        record.created += 1  # the next second: the time formatted once a second must move on
        handler.handle(record)
    finally:
        logger.removeHandler(handler)
    failed, later, next_second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert failed["message"] == "grading ab12 failed" and failed["level"] == "ERROR"
    assert failed["service"] == "gradquiz-worker" and failed["request_id"] is None
    assert failed["exc_info"].startswith("Traceback") and "ValueError: no such version" in failed["exc_info"]
    assert failed["when"] == "2026-01-02T00:00:00+00:00" and failed["tries"] == 3
    assert later["time"] == time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(1_800_000_000))
    assert next_second["time"] == time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(1_800_000_001))
