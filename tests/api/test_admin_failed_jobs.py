"""Admins list the jobs the grader gave up on and send them back to the workers."""

from __future__ import annotations

import uuid

from service.config import PROJECT_ROOT, Settings
from service.grading.errors import GraderFault
from service.jobs.worker import Worker
from tests.helpers import bearer

REFERENCE = (PROJECT_ROOT / "exercises" / "clamp-function" / "reference.py").read_text()


class FaultyJudge:
    def has_reference(self, exercise, *, variant=None):
        return True

    def grade(self, exercise, code, **_options):
        raise GraderFault("zygote died")

    def run(self, code, entry_point, inputs, *, options=()):
        raise GraderFault("zygote died")


def grade_all(database_url: str, judge) -> None:
    worker = Worker(Settings.from_env({}, database_url=database_url, grading_max_tries=2), judge, "admin-test")
    while worker.run_once():
        pass


def test_admins_list_failed_jobs_and_retry_them(client, client_key, admin_key, database_url, grading_judge):
    attempt_id = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                             json={"learner": "ada", "code": REFERENCE}).json["id"]
    run_id = client.post("/api/v1/runs", headers=bearer(client_key), json={"code": "print(1)", "wait": 0}).json["id"]
    grade_all(database_url, FaultyJudge())

    listed = client.get("/api/v1/admin/failed-jobs", headers=bearer(admin_key))
    assert listed.status_code == 200
    by_id = {job["id"]: job for job in listed.json}
    assert set(by_id) == {attempt_id, run_id}
    attempt = by_id[attempt_id]
    assert (attempt["kind"], attempt["exercise"], attempt["learner"], attempt["client"], attempt["tries"]) == \
        ("attempt", "clamp-function", "ada", "lms-one", 2)
    assert "grader failed" in attempt["message"] and attempt["failed_at"]
    only_runs = client.get("/api/v1/admin/failed-jobs?kind=run", headers=bearer(admin_key)).json
    assert [job["id"] for job in only_runs] == [run_id]

    retried = client.post(f"/api/v1/admin/failed-jobs/{attempt_id}/retry", headers=bearer(admin_key))
    assert retried.status_code == 202
    assert (retried.json["status"], retried.json["tries"]) == ("queued", 0)
    grade_all(database_url, grading_judge)
    body = client.get(f"/api/v1/attempts/{attempt_id}", headers=bearer(client_key)).json
    assert (body["status"], body["score"]) == ("graded", 1.0)
    assert [job["id"] for job in client.get("/api/v1/admin/failed-jobs", headers=bearer(admin_key)).json] == [run_id]

    again = client.post(f"/api/v1/admin/failed-jobs/{attempt_id}/retry", headers=bearer(admin_key))
    assert again.status_code == 409 and again.content_type == "application/problem+json"
    missing = client.post(f"/api/v1/admin/failed-jobs/{uuid.uuid4()}/retry", headers=bearer(admin_key))
    assert missing.status_code == 404


def test_only_admins_see_or_retry_failed_jobs(client, client_key):
    some_id = uuid.uuid4()
    for method, path in (("get", "/api/v1/admin/failed-jobs"), ("post", f"/api/v1/admin/failed-jobs/{some_id}/retry")):
        anonymous = getattr(client, method)(path)
        assert anonymous.status_code == 401
        not_admin = getattr(client, method)(path, headers=bearer(client_key))
        assert not_admin.status_code == 403 and not_admin.content_type == "application/problem+json"
