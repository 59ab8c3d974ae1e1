"""Code attempts: 202 queued, graded by a worker that claims it with a lease, read back with ?wait."""

from datetime import timedelta

import pytest

from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.grading.errors import GraderFault
from service.grading.spec import wrong_file_expectations
from service.jobs import db_lease
from service.jobs.worker import Worker
from service.models import Attempt, Run
from tests.helpers import bearer, count_rows

CLAMP = "clamp-function"
EXERCISE_DIR = PROJECT_ROOT / "exercises" / CLAMP
REFERENCE = (EXERCISE_DIR / "reference.py").read_text()


def submit(client, key, code, slug=CLAMP, **extra):
    return client.post(f"/api/v1/exercises/{slug}/attempts", json={"learner": "ada", "code": code},
                       headers={**bearer(key), **extra})


def test_code_is_queued_then_graded(client, client_key, worker):
    queued = submit(client, client_key, REFERENCE)
    assert queued.status_code == 202
    assert queued.json["status"] in ("queued", "running", "graded")
    assert queued.json["score"] is None or queued.json["status"] == "graded"
    graded = client.get(queued.headers["Location"] + "?wait=20", headers=bearer(client_key))
    body = graded.json
    assert body["status"] == "graded", body
    assert body["score"] == 1.0 and body["correct"] is True
    assert body["report"]["status"] == "passed"
    assert {c["name"] for c in body["report"]["checks"]} >= {"gradcheck", "forward", "backward_arity"}
    assert body["created_at"] <= body["started_at"] <= body["graded_at"]
    assert body["explanation"] and body["code"] == REFERENCE and body["feedback"] == []
    assert body["diagnosis"] == {"passed": True, "headline": "Every check passed.", "cause": None, "example": None,
                                 "failed_checks": []}
    assert queued.json["diagnosis"] is None or queued.json["status"] == "graded"


@pytest.mark.parametrize("wrong", sorted(p.name for p in (EXERCISE_DIR / "wrong").glob("*.py")))
def test_known_wrong_versions_fail_through_the_api(client, client_key, worker, wrong):
    source = (EXERCISE_DIR / "wrong" / wrong).read_text()
    cause, _ = wrong_file_expectations(source)
    queued = submit(client, client_key, source)
    body = client.get(queued.headers["Location"] + "?wait=20", headers=bearer(client_key)).json
    assert body["status"] == "graded", body
    assert body["score"] < 1.0 and body["correct"] is False
    assert cause in body["report"]["likely_causes"], body["report"]
    # The result opens with the diagnosis (service/grading/diagnosis.py), the declared cause's
    assert body["diagnosis"]["cause"]["name"] == cause and body["diagnosis"]["example"]
    assert body["diagnosis"]["headline"].startswith("Not yet")
    # The explanation walks through the reference: a failed attempt must not reveal it.
    assert body["explanation"] is None


def test_wait_returns_early_when_nothing_grades(client, client_key):
    # No worker: the attempt stays queued, and ?wait gives up after the time asked for.
    queued = submit(client, client_key, REFERENCE)
    response = client.get(queued.headers["Location"] + "?wait=0.3", headers=bearer(client_key))
    assert response.status_code == 200 and response.json["status"] == "queued"


@pytest.mark.parametrize("wait", ["31", "-1", "soon"])
def test_wait_is_bounded(client, client_key, wait):
    queued = submit(client, client_key, REFERENCE)
    response = client.get(queued.headers["Location"] + f"?wait={wait}", headers=bearer(client_key))
    assert response.status_code == 422 and response.json["errors"][0]["field"] == "query.wait"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"learner": "ada", "answer": "x"}, "json.answer"), ({"learner": "ada"}, "json.code"),
     ({"learner": "ada", "code": ""}, "json.code"), ({"learner": "ada", "code": "x" * 70000}, "json.code")],
)
def test_code_exercise_refuses_other_shapes(app, client, client_key, body, field):
    response = client.post(f"/api/v1/exercises/{CLAMP}/attempts", json=body, headers=bearer(client_key))
    assert response.status_code == 422 and field in [e["field"] for e in response.json["errors"]]
    assert count_rows(app, Attempt) == 0


def test_code_exercise_detail_shows_starter_not_reference(client):
    body = client.get(f"/api/v1/exercises/{CLAMP}").json
    assert body["kind"] == "code"
    assert body["code"]["entry_point"] == "ClampFn"
    assert body["code"]["starter"] == (EXERCISE_DIR / "starter.py").read_text()
    text = client.get(f"/api/v1/exercises/{CLAMP}").get_data(as_text=True)
    assert "reference" not in body["code"] and "grad_output * mask, None, None" not in text
    for wrong in (EXERCISE_DIR / "wrong").glob("*.py"):
        assert wrong.read_text().strip()[:200] not in text


def _claim(app, model, worker_id, now=None, lease=timedelta(seconds=30)):
    with app.app_context():
        job = db_lease.claim(db_session(), model, worker_id, lease, max_tries=3, now=now)
        return job.id if job else None


def test_lease_expiry_regrades_and_the_late_result_is_dropped(app, client, client_key):
    attempt_id = submit(client, client_key, REFERENCE).json["id"]
    first = _claim(app, Attempt, "worker-a")
    assert str(first) == attempt_id
    assert _claim(app, Attempt, "worker-b") is None  # leased: nobody else takes it
    later = db_lease.utcnow() + timedelta(seconds=31)
    assert str(_claim(app, Attempt, "worker-b", now=later)) == attempt_id
    with app.app_context():
        session = db_session()
        assert db_lease.complete(session, Attempt, first, "worker-a", {"score": 0.0, "correct": False, "result": {}}) is False
        assert db_lease.complete(session, Attempt, first, "worker-b",
                                 {"score": 1.0, "correct": True, "result": {"status": "passed"}})
        assert db_lease.complete(session, Attempt, first, "worker-b", {"score": 0.0, "correct": False, "result": {}}) is False
    body = client.get(f"/api/v1/attempts/{attempt_id}", headers=bearer(client_key)).json
    assert (body["status"], body["score"]) == ("graded", 1.0)


class FaultyJudge:
    def __init__(self):
        self.calls = 0

    def has_reference(self, exercise, *, variant=None):
        return True

    def grade(self, exercise, code, **_options):
        self.calls += 1
        raise GraderFault("zygote died")


def test_grader_faults_are_retried_then_stored_as_internal_error(app, database_url, client, client_key):
    from service.config import Settings

    attempt_id = submit(client, client_key, REFERENCE).json["id"]
    judge = FaultyJudge()
    worker = Worker(Settings.from_env({}, database_url=database_url, grading_max_tries=3), judge, "faulty")
    while worker.run_once():
        pass
    assert judge.calls == 3
    body = client.get(f"/api/v1/attempts/{attempt_id}", headers=bearer(client_key)).json
    assert body["status"] == "error"
    assert body["score"] is None and body["correct"] is None  # never a learner's zero
    assert body["report"]["status"] == "internal_error"


def test_try_it_yourself_runs_code_with_gradcheck(client, client_key, worker):
    response = client.post("/api/v1/runs", headers=bearer(client_key), json={
        "code": REFERENCE + "\nprint('hello from the sandbox')\n", "entry_point": "ClampFn",
        "inputs": [{"type": "tensor", "value": [-2.0, -0.5, 0.3, 2.0]}, {"type": "float", "value": -1.0},
                   {"type": "float", "value": 1.0}], "wait": 20})
    assert response.status_code == 200, response.json
    body = response.json
    assert body["status"] == "finished"
    result = body["result"]
    assert "hello from the sandbox" in result["output"]["stdout"]
    assert result["gradcheck"]["passed"] is True
    assert result["forward"]["outputs"][0]["values"] == [-1.0, -0.5, 0.3, 1.0]
    assert result["gradients"]["input 0"] == [0.0, 1.0, 1.0, 0.0]
    assert body["diagnosis"]["passed"] is True and body["diagnosis"]["headline"] == "Every check passed on these inputs."
    assert client.get(response.headers["Location"], headers=bearer(client_key)).json["id"] == body["id"]


def test_run_reports_the_learners_exception(client, client_key, worker):
    body = client.post("/api/v1/runs", headers=bearer(client_key),
                       json={"code": "x = 1\nraise ValueError('boom')\n", "wait": 20}).json
    assert body["status"] == "finished"
    error = body["result"]["error"]
    assert (error["type"], error["message"], error["line"]) == ("ValueError", "boom", 2)
    assert body["diagnosis"]["headline"] == "Not yet: your file raised an exception when it was loaded."
    assert body["diagnosis"]["example"] == "Your file raised ValueError when it was loaded: boom."
    assert "service" not in error["traceback"] and "harness" not in error["traceback"]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"code": "pass", "entry_point": "F"}, "json.inputs"),
     ({"code": "pass", "inputs": [{"type": "float", "value": 1.0}]}, "json.entry_point"),
     ({"code": "pass", "entry_point": "F", "inputs": [{"type": "tensor", "shape": [-1]}]}, "json.inputs[0]"),
     ({"code": "pass", "entry_point": "not valid"}, "json.entry_point"),
     ({"code": "pass", "wait": 99}, "json.wait")],
)
def test_bad_runs_are_refused(app, client, client_key, body, field):
    response = client.post("/api/v1/runs", json=body, headers=bearer(client_key))
    assert response.status_code == 422
    assert any(e["field"].startswith(field) for e in response.json["errors"]), response.json
    assert count_rows(app, Run) == 0


def test_runs_are_rate_limited_per_client(make_app, client_key_for):
    app = make_app(runs_rate_limit="2/minute")
    key, other = client_key_for(app, "one"), client_key_for(app, "two")
    client = app.test_client()
    for _ in range(2):
        assert client.post("/api/v1/runs", json={"code": "pass", "wait": 0}, headers=bearer(key)).status_code == 202
    limited = client.post("/api/v1/runs", json={"code": "pass", "wait": 0}, headers=bearer(key))
    assert limited.status_code == 429 and limited.content_type == "application/problem+json"
    assert int(limited.headers["Retry-After"]) >= 1
    assert client.post("/api/v1/runs", json={"code": "pass", "wait": 0}, headers=bearer(other)).status_code == 202


def test_a_client_sees_only_its_own_runs(client, client_key, other_client_key):
    location = client.post("/api/v1/runs", json={"code": "pass", "wait": 0}, headers=bearer(client_key)).headers["Location"]
    assert client.get(location, headers=bearer(other_client_key)).status_code == 404
    assert client.get(location, headers=bearer(client_key)).status_code == 200
