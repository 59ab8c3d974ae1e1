"""The staff API for grades: overrides with their audit log, regrades (a dry run graded by the
workers, then applied), and publishing exercises (which a catalog sync respects)."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest
from sqlalchemy import func, select

from service.config import PROJECT_ROOT, Settings
from service.extensions import db_session
from service.jobs import dispatch
from service.jobs.dispatch import REGRADE_QUEUE, TASK_NAMES, CeleryDispatcher
from service.jobs.worker import Worker
from service.learner_tokens import INSTRUCTOR, LearnerScope, issue_learner_token
from service.models import (
    OVERRIDDEN_EVENT,
    REGRADED_EVENT,
    ApiClient,
    Attempt,
    AttemptEvent,
    Exercise,
    GradeOverride,
    Regrade,
    RegradeItem,
    Role,
    WebhookDelivery,
)
from service.models.base import utcnow
from service.outbound.webhooks import register_endpoint
from service.services import regrades
from tests.api.support import copy_exercise, grade_regrade_items, set_correct, sync_folder
from tests.helpers import bearer, count_rows

SOURCE = PROJECT_ROOT / "exercises"
QUIZ = "backward-none-for-bounds"  # single_choice; "none-each" is the correct choice
CLAMP = "clamp-function"
REFERENCE = (SOURCE / CLAMP / "reference.py").read_text()
WRONG = (SOURCE / CLAMP / "wrong" / "forgot_grad_output.py").read_text()


@pytest.fixture
def staff_key(app, client_key_for) -> str:
    return client_key_for(app, "prof", Role.INSTRUCTOR)


def answer(client, key, learner, choice, slug=QUIZ):
    response = client.post(f"/api/v1/exercises/{slug}/attempts", json={"learner": learner, "answer": choice},
                           headers=bearer(key))
    assert response.status_code == 201, response.json
    return response.json["id"]


def submit_code(client, key, learner, code):
    response = client.post(f"/api/v1/exercises/{CLAMP}/attempts", json={"learner": learner, "code": code},
                           headers=bearer(key))
    assert response.status_code == 202, response.json
    return response.json["id"]


def attempt_row(app, attempt_id) -> Attempt:
    with app.app_context():
        return db_session().get(Attempt, uuid.UUID(str(attempt_id)), populate_existing=True)


def events(app, type_: str, attempt_id=None) -> list[AttemptEvent]:
    with app.app_context():
        stmt = select(AttemptEvent).where(AttemptEvent.type == type_).order_by(AttemptEvent.id)
        if attempt_id is not None:
            stmt = stmt.where(AttemptEvent.attempt_id == uuid.UUID(str(attempt_id)))
        return list(db_session().scalars(stmt))










def learner_token(app, client_name="lms-one") -> str:
    with app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == client_name))
    scope = LearnerScope(client_id=client_id, learner="ada", exercise=QUIZ, role=INSTRUCTOR, link_id=None)
    return issue_learner_token(app.config["SETTINGS"].secret_key, scope, 600)


# --- overrides --------------------------------------------------------------------------------


def test_an_override_changes_the_score_keeps_the_graders_and_is_logged(app, client, client_key, staff_key):
    attempt_id = answer(client, client_key, "ada", "zero-number")
    with app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
        register_endpoint(db_session(), client_id, "http://127.0.0.1:9/hook", "", app.config["SETTINGS"].secret_key)
        db_session().commit()

    response = client.post(f"/api/v1/admin/attempts/{attempt_id}/override", headers=bearer(staff_key),
                           json={"score": 0.75, "reason": "The question was ambiguous."})
    assert response.status_code == 201, response.json
    body = response.json
    assert (body["attempt"], body["actor"], body["old_score"], body["new_score"]) == (attempt_id, "prof", 0.0, 0.75)
    assert (body["reason"], body["exercise"], body["learner"]) == ("The question was ambiguous.", QUIZ, "ada")

    row = attempt_row(app, attempt_id)
    assert (row.score, row.grader_score, row.overridden, row.correct) == (0.75, 0.0, True, False)
    # The attempt's history, and what webhooks and the LMS are sent: one overridden event.
    [event] = events(app, OVERRIDDEN_EVENT, attempt_id)
    assert event.data == {"status": "graded", "score": 0.75, "correct": False}
    with app.app_context():
        assert db_session().scalar(select(func.count()).select_from(WebhookDelivery)
                                   .where(WebhookDelivery.event_id == event.id)) == 1
    # The learner's client reads the score that counts.
    assert client.get(f"/api/v1/attempts/{attempt_id}", headers=bearer(client_key)).json["score"] == 0.75

    # Overriding again, even back to the grader's score, is recorded too; the log is newest first.
    again = client.post(f"/api/v1/admin/attempts/{attempt_id}/override", headers=bearer(staff_key),
                        json={"score": 0.0, "reason": "Checked with the class: the key was right."})
    assert again.status_code == 201 and again.json["old_score"] == 0.75
    row = attempt_row(app, attempt_id)
    assert (row.score, row.grader_score, row.overridden) == (0.0, 0.0, True)
    log = client.get(f"/api/v1/admin/overrides?attempt={attempt_id}", headers=bearer(staff_key))
    assert log.status_code == 200
    assert [(e["old_score"], e["new_score"]) for e in log.json] == [(0.75, 0.0), (0.0, 0.75)]
    assert '"total": 2' in log.headers["X-Pagination"]
    assert len(events(app, OVERRIDDEN_EVENT, attempt_id)) == 2


def test_the_audit_log_filters_by_exercise(app, client, client_key, staff_key):
    quiz = answer(client, client_key, "ada", "none-each")
    client.post(f"/api/v1/admin/attempts/{quiz}/override", headers=bearer(staff_key),
                json={"score": 0.5, "reason": "x"})
    assert [e["attempt"] for e in client.get(f"/api/v1/admin/overrides?exercise={QUIZ}",
                                             headers=bearer(staff_key)).json] == [quiz]
    assert client.get(f"/api/v1/admin/overrides?exercise={CLAMP}", headers=bearer(staff_key)).json == []
    assert client.get("/api/v1/admin/overrides?exercise=no-such", headers=bearer(staff_key)).status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"score": 0.5}, "json.reason"),
    ({"score": 0.5, "reason": ""}, "json.reason"),
    ({"score": 0.5, "reason": "   "}, "json.reason"),
    ({"score": 0.5, "reason": "x" * 2001}, "json.reason"),
    ({"reason": "why"}, "json.score"),
    ({"score": 1.5, "reason": "why"}, "json.score"),
    ({"score": -0.1, "reason": "why"}, "json.score"),
    ({"score": "high", "reason": "why"}, "json.score"),
    ({"score": 0.5, "reason": "why", "learner_comment": "  "}, "json.learner_comment"),
    ({"score": 0.5, "reason": "why", "learner_comment": "x" * 2001}, "json.learner_comment"),
    ({"score": 0.5, "reason": "why", "learner_comment": 7}, "json.learner_comment"),
])
def test_an_override_needs_a_score_from_0_to_1_and_a_reason(app, client, client_key, staff_key, body, field):
    attempt_id = answer(client, client_key, "ada", "zero-number")
    response = client.post(f"/api/v1/admin/attempts/{attempt_id}/override", headers=bearer(staff_key), json=body)
    assert response.status_code == 422 and response.content_type == "application/problem+json"
    assert field in [e["field"] for e in response.json["errors"]], response.json
    assert count_rows(app, GradeOverride) == 0
    assert attempt_row(app, attempt_id).overridden is False


def test_only_a_graded_attempt_can_be_overridden(app, client, client_key, staff_key):
    queued = submit_code(client, client_key, "ada", REFERENCE)  # no worker: it stays queued
    response = client.post(f"/api/v1/admin/attempts/{queued}/override", headers=bearer(staff_key),
                           json={"score": 1.0, "reason": "trust me"})
    assert response.status_code == 409 and response.content_type == "application/problem+json"
    assert "queued" in response.json["detail"]
    missing = client.post(f"/api/v1/admin/attempts/{uuid.uuid4()}/override", headers=bearer(staff_key),
                          json={"score": 1.0, "reason": "trust me"})
    assert missing.status_code == 404
    assert count_rows(app, GradeOverride) == 0 and events(app, OVERRIDDEN_EVENT) == []


# --- regrades ---------------------------------------------------------------------------------


@pytest.fixture
def changed_answer_key(app, tmp_path):
    """Make the quiz's answer key change: "single-none" becomes the correct choice (version 2)."""

    def change():
        root, spec = copy_exercise(tmp_path, QUIZ)
        text = set_correct(set_correct(spec.read_text(), "none-each", False), "single-none", True)
        spec.write_text(text)
        assert QUIZ in sync_folder(app, root).updated

    return change


def test_a_quiz_regrade_is_a_dry_run_until_applied(app, client, client_key, staff_key, database_url,
                                                  changed_answer_key):
    ids = {learner: answer(client, client_key, learner, choice) for learner, choice in
           [("ada", "none-each"), ("bob", "zero-number"), ("cy", "single-none"), ("dee", "none-each")]}
    overridden = client.post(f"/api/v1/admin/attempts/{ids['dee']}/override", headers=bearer(staff_key),
                             json={"score": 0.9, "reason": "Explained it well in class."})
    assert overridden.status_code == 201
    changed_answer_key()
    before = {learner: attempt_row(app, attempt_id) for learner, attempt_id in ids.items()}

    response = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"exercise": QUIZ})
    assert response.status_code == 202, response.json
    regrade = response.json
    assert (regrade["status"], regrade["total"], regrade["graded"], regrade["exercise_version"]) == ("dry_run", 4, 0, 2)
    assert regrade["requested_by"] == "prof"
    location = response.headers["Location"]
    assert location.endswith(f"/api/v1/admin/regrades/{regrade['id']}")
    # Not graded in the request: the workers grade the items.
    assert count_rows(app, RegradeItem) == 4
    with app.app_context():
        assert set(db_session().scalars(select(RegradeItem.status))) == {"queued"}
    not_ready = client.post(f"{location}/apply", headers=bearer(staff_key))
    assert not_ready.status_code == 409 and not_ready.content_type == "application/problem+json"

    # Quiz grading is instant: one claim grades the whole batch, in one transaction.
    assert grade_regrade_items(database_url) == 1
    with app.app_context():
        assert set(db_session().scalars(select(RegradeItem.status))) == {"graded"}
    ready = client.get(location, headers=bearer(staff_key)).json
    assert (ready["status"], ready["graded"], ready["errors"]) == ("ready", 4, 0)
    assert ready["summary"] == {"up": 1, "down": 2, "unchanged": 1}
    assert {c["learner"]: (c["old_score"], c["new_score"], c["overridden"]) for c in ready["changes"]} == {
        "ada": (1.0, 0.0, False), "cy": (0.0, 1.0, False), "dee": (1.0, 0.0, True)}
    assert {c["new_verdict"] for c in ready["changes"] if c["learner"] == "cy"} == {"passed"}
    # A dry run changes nothing on the attempts and tells no one.
    for learner, attempt_id in ids.items():
        row = attempt_row(app, attempt_id)
        assert (row.score, row.grader_score, row.verdict, row.correct, row.result) == (
            before[learner].score, before[learner].grader_score, before[learner].verdict, before[learner].correct,
            before[learner].result)
    assert events(app, REGRADED_EVENT) == []

    applied = client.post(f"{location}/apply", headers=bearer(staff_key))
    assert applied.status_code == 200, applied.json
    body = applied.json
    assert (body["status"], body["applied"], body["kept_overrides"], body["applied_by"]) == ("applied", 3, 1, "prof")
    assert body["applied_at"] is not None
    ada, bob, cy, dee = (attempt_row(app, ids[name]) for name in ("ada", "bob", "cy", "dee"))
    assert (ada.score, ada.grader_score, ada.correct, ada.verdict) == (0.0, 0.0, False, "failed")
    assert (cy.score, cy.grader_score, cy.correct, cy.verdict) == (1.0, 1.0, True, "passed")
    assert {f["choice"]: f["correct"] for f in cy.result["feedback"]} == {"single-none": True}
    # The override stands; the grader's new opinion is kept beside it.
    assert (dee.score, dee.grader_score, dee.overridden, dee.correct) == (0.9, 0.0, True, False)
    assert (bob.score, bob.grader_score) == (before["bob"].score, before["bob"].grader_score)
    regraded = {event.attempt_id: event.data for event in events(app, REGRADED_EVENT)}
    assert regraded == {ada.id: {"status": "graded", "score": 0.0, "correct": False},
                        cy.id: {"status": "graded", "score": 1.0, "correct": True},
                        dee.id: {"status": "graded", "score": 0.9, "correct": False}}
    # The learner's client sees the new grade.
    assert client.get(f"/api/v1/attempts/{ids['cy']}", headers=bearer(client_key)).json["score"] == 1.0

    # Applying again is harmless.
    again = client.post(f"{location}/apply", headers=bearer(staff_key))
    assert again.status_code == 200 and again.json["status"] == "applied"
    assert len(events(app, REGRADED_EVENT)) == 3
    listed = client.get(f"/api/v1/admin/regrades?exercise={QUIZ}", headers=bearer(staff_key))
    assert [(r["id"], r["status"], r["applied"]) for r in listed.json] == [(regrade["id"], "applied", 3)]


def test_an_apply_that_failed_half_way_resumes_without_applying_twice(app, client, client_key, staff_key,
                                                                     database_url, changed_answer_key, monkeypatch):
    for learner, choice in [("ada", "none-each"), ("bob", "none-each"), ("cy", "single-none")]:
        answer(client, client_key, learner, choice)
    changed_answer_key()
    location = client.post("/api/v1/admin/regrades", headers=bearer(staff_key),
                           json={"exercise": QUIZ}).headers["Location"]
    grade_regrade_items(database_url)

    real_record = regrades.record_attempt_event
    calls = []

    def crash_on_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the web process died")
        return real_record(*args, **kwargs)

    monkeypatch.setattr(regrades, "record_attempt_event", crash_on_the_second)
    with app.app_context():
        session = db_session()
        regrade = session.scalar(select(Regrade))
        with pytest.raises(RuntimeError):
            regrades.apply(session, regrade, "prof", chunk=1)
        session.rollback()
    monkeypatch.setattr(regrades, "record_attempt_event", real_record)
    halfway = client.get(location, headers=bearer(staff_key)).json
    assert (halfway["status"], halfway["applied"]) == ("applying", 1)
    assert len(events(app, REGRADED_EVENT)) == 1

    resumed = client.post(f"{location}/apply", headers=bearer(staff_key))
    assert resumed.status_code == 200 and resumed.json["status"] == "applied"
    assert resumed.json["applied"] == 3
    regraded = [e.attempt_id for e in events(app, REGRADED_EVENT)]
    assert len(regraded) == len(set(regraded)) == 3  # one event per changed attempt, none twice


def test_a_big_apply_answers_at_once_and_the_workers_finish_it(app, client, client_key, staff_key, database_url,
                                                              changed_answer_key, monkeypatch):
    ids = [answer(client, client_key, f"l{i}", "none-each") for i in range(5)]
    changed_answer_key()
    location = client.post("/api/v1/admin/regrades", headers=bearer(staff_key),
                           json={"exercise": QUIZ}).headers["Location"]
    grade_regrade_items(database_url)
    monkeypatch.setattr(regrades, "APPLY_REQUEST_SECONDS", 0)  # one chunk, then answer
    monkeypatch.setattr(regrades, "APPLY_CHUNK", 2)
    monkeypatch.setattr(regrades, "APPLY_WORKER_SECONDS", 0)
    response = client.post(f"{location}/apply", headers=bearer(staff_key))
    assert response.status_code == 202, response.json
    assert (response.json["status"], response.json["applied"]) == ("applying", 2)
    assert response.json["applied_by"] == "prof" and response.json["applied_at"] is None
    # A grading worker with nothing to grade goes on, a chunk at a time, until it is applied.
    worker = Worker(Settings.from_env({}, database_url=database_url, env="testing"), None, "test-applier")
    rounds = 0
    while worker.run_once():
        rounds += 1
    assert rounds == 3  # two more chunks, then the empty one that marks it applied
    body = client.get(location, headers=bearer(staff_key)).json
    assert (body["status"], body["applied"]) == ("applied", 5) and body["applied_at"] is not None
    assert sorted(str(e.attempt_id) for e in events(app, REGRADED_EVENT)) == sorted(ids)
    assert worker.run_once() is False


def test_a_regrade_of_one_attempt(app, client, client_key, staff_key, database_url, changed_answer_key):
    ada = answer(client, client_key, "ada", "none-each")
    answer(client, client_key, "bob", "none-each")
    changed_answer_key()
    response = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"attempt": ada})
    assert response.status_code == 202
    assert (response.json["total"], response.json["attempt"]) == (1, ada)
    grade_regrade_items(database_url)
    ready = client.get(response.headers["Location"], headers=bearer(staff_key)).json
    assert ready["summary"] == {"up": 0, "down": 1, "unchanged": 0}
    client.post(response.headers["Location"] + "/apply", headers=bearer(staff_key))
    assert [e.attempt_id for e in events(app, REGRADED_EVENT)] == [uuid.UUID(ada)]


def test_an_answer_the_new_version_cannot_grade_is_an_error_not_a_change(app, client, client_key, staff_key,
                                                                         database_url, tmp_path):
    bob = answer(client, client_key, "bob", "zero-number")
    answer(client, client_key, "ada", "none-each")
    root, spec = copy_exercise(tmp_path, QUIZ)
    text = spec.read_text()
    start = text.index('[[choices]]\nid = "zero-number"')
    spec.write_text(text[:start] + text[text.index("[[choices]]", start + 1):])  # the choice is gone
    sync_folder(app, root)
    location = client.post("/api/v1/admin/regrades", headers=bearer(staff_key),
                           json={"exercise": QUIZ}).headers["Location"]
    grade_regrade_items(database_url)
    body = client.get(location, headers=bearer(staff_key)).json
    assert (body["status"], body["errors"], body["summary"]) == ("ready", 1, {"up": 0, "down": 0, "unchanged": 1})
    [error] = body["error_items"]
    assert (error["attempt"], error["status"]) == (bob, "not_gradable")
    assert "zero-number" in error["message"]
    assert client.post(location + "/apply", headers=bearer(staff_key)).json["applied"] == 0
    assert attempt_row(app, bob).score == 0.0 and events(app, REGRADED_EVENT) == []


@pytest.mark.parametrize(("body", "status"), [
    ({}, 422), ({"exercise": QUIZ, "attempt": str(uuid.uuid4())}, 422), ({"exercise": "no-such"}, 404),
    ({"attempt": str(uuid.uuid4())}, 404), ({"exercise": QUIZ}, 409), ({"exercise": 7}, 422),
])
def test_bad_regrade_requests(app, client, staff_key, body, status):
    response = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json=body)
    assert response.status_code == status and response.content_type == "application/problem+json"
    assert count_rows(app, Regrade) == 0 and count_rows(app, RegradeItem) == 0


def test_a_regrade_of_an_ungraded_attempt_is_refused(app, client, client_key, staff_key):
    queued = submit_code(client, client_key, "ada", REFERENCE)
    response = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"attempt": queued})
    assert response.status_code == 409
    assert count_rows(app, Regrade) == 0
    assert client.get(f"/api/v1/admin/regrades/{uuid.uuid4()}", headers=bearer(staff_key)).status_code == 404
    assert client.post(f"/api/v1/admin/regrades/{uuid.uuid4()}/apply", headers=bearer(staff_key)).status_code == 404


def test_items_are_made_by_one_insert_for_every_graded_attempt(app, client_key, staff_key):
    # Many attempts, inserted directly: the regrade makes one item per graded attempt, no more.
    with app.app_context():
        session = db_session()
        exercise = session.scalar(select(Exercise).where(Exercise.slug == QUIZ))
        client_id = session.scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
        now = utcnow()
        session.add_all(Attempt(client_id=client_id, learner=f"l{i}", exercise_id=exercise.id,
                                exercise_version_id=exercise.version.id, answer="none-each",
                                status="graded" if i % 10 else "error", score=1.0, grader_score=1.0, correct=True,
                                verdict="passed", result={"feedback": []}, created_at=now)
                        for i in range(1000))
        session.commit()
    statements = []
    from sqlalchemy import event

    with app.app_context():
        engine = db_session().get_bind()
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        response = app.test_client().post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"exercise": QUIZ})
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert response.status_code == 202 and response.json["total"] == 900
    assert len([s for s in statements if s.lstrip().upper().startswith("INSERT INTO REGRADE_ITEMS")]) == 1
    with app.app_context():
        assert db_session().scalar(select(func.count(func.distinct(RegradeItem.id)))) == 900


def test_a_code_regrade_end_to_end_with_the_real_judge(app, client, client_key, staff_key, worker, tmp_path):
    # Submitted under partial credit (staff's rules), regraded once the rules are back to the default
    # gate: the regrade keeps the attempt's policy, so the new grader's score shows (under gate this
    # wrong backward would stay at the cap, 0.3, and the regrade would change nothing).
    with app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
    rules = f"/api/v1/admin/exercises/{CLAMP}/clients/{client_id}/rules"
    assert client.put(rules, headers=bearer(staff_key), json={"scoring": "partial"}).status_code == 200
    right, wrong = submit_code(client, client_key, "ada", REFERENCE), submit_code(client, client_key, "bob", WRONG)
    for attempt_id in (right, wrong):
        graded = client.get(f"/api/v1/attempts/{attempt_id}?wait=30", headers=bearer(client_key)).json
        assert graded["status"] == "graded", graded
    before = attempt_row(app, wrong)
    assert before.score == before.result["score"] == pytest.approx(11 / 19)  # partial: the checks score
    assert "gradcheck" in [c["name"] for c in before.result["checks"] if not c["passed"]]
    assert client.delete(rules, headers=bearer(staff_key)).status_code == 204

    # The grader changes: gradcheck no longer counts (a weight of 0 drops the check).
    root, spec = copy_exercise(tmp_path, CLAMP)
    spec.write_text(spec.read_text().replace("random_cases = 3\n", "random_cases = 3\nweights = { gradcheck = 0 }\n"))
    sync_folder(app, root)
    location = client.post("/api/v1/admin/regrades", headers=bearer(staff_key),
                           json={"exercise": CLAMP}).headers["Location"]
    deadline = time.monotonic() + 60
    while (body := client.get(location, headers=bearer(staff_key)).json)["status"] != "ready":
        assert time.monotonic() < deadline, body
        time.sleep(0.1)
    assert (body["total"], body["errors"], body["summary"]) == (2, 0, {"up": 1, "down": 0, "unchanged": 1})
    [change] = body["changes"]
    assert (change["attempt"], change["old_score"]) == (wrong, before.score)
    assert change["new_score"] > before.score and change["new_verdict"] == "failed"
    assert attempt_row(app, wrong).score == before.score  # the dry run changed nothing

    assert client.post(f"{location}/apply", headers=bearer(staff_key)).json["status"] == "applied"
    after = attempt_row(app, wrong)
    assert after.score == after.grader_score == change["new_score"]
    assert [c["weight"] for c in after.result["checks"] if c["name"] == "gradcheck"] in ([], [0], [0.0])
    assert after.verdict == "failed" and after.likely_cause == before.likely_cause
    assert [e.attempt_id for e in events(app, REGRADED_EVENT)] == [after.id]
    assert attempt_row(app, right).score == 1.0


# --- the Celery backend -----------------------------------------------------------------------


class RecordingDispatcher(CeleryDispatcher):
    def __init__(self) -> None:
        self.sent: list[tuple[type, uuid.UUID]] = []

    def publish(self, model, job_id) -> bool:
        self.sent.append((model, job_id))
        return True


def test_the_sweeper_sends_regrade_items_a_bounded_number_at_a_time(app, client, client_key, staff_key,
                                                                    database_url, monkeypatch):
    for i in range(5):
        answer(client, client_key, f"l{i}", "none-each")
    client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"exercise": QUIZ})
    monkeypatch.setattr(dispatch, "SWEEP_BATCH", 3)
    settings = Settings.from_env({}, database_url=database_url, env="testing", grading_backend="celery",
                                 celery_broker_url="redis://127.0.0.1:1/0", grading_sweep_seconds=5)
    sweeper = RecordingDispatcher()
    with app.app_context():
        session = db_session()
        created = session.scalar(select(RegradeItem.created_at))
        later = created + dispatch.timedelta(seconds=6)
        assert sweeper.sweep(session, settings, now=later) == 3
        # Three wait in the broker: no more until workers take them (or a lease passes).
        assert sweeper.sweep(session, settings, now=later + dispatch.timedelta(seconds=1)) == 0
        session.execute(RegradeItem.__table__.update().where(
            RegradeItem.id == sweeper.sent[0][1]).values(status="running"))
        session.commit()
        assert sweeper.sweep(session, settings, now=later + dispatch.timedelta(seconds=2)) == 1
    assert {model for model, _ in sweeper.sent} == {RegradeItem} and len(sweeper.sent) == 4
    assert dispatch.queue_for(RegradeItem) == REGRADE_QUEUE != dispatch.queue_for(Attempt)


def test_a_regrade_of_one_attempt_is_sent_at_once_on_the_regrade_queue(app, make_app, client_key, staff_key):
    import base64
    import json

    import redis

    broker_url = "redis://127.0.0.1:6379/13"
    connection = redis.Redis.from_url(broker_url)
    connection.flushdb()
    try:
        celery_app = make_app(grading_backend="celery", celery_broker_url=broker_url)
        client = celery_app.test_client()
        attempt_id = answer(client, client_key, "ada", "none-each")
        response = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"attempt": attempt_id})
        assert response.status_code == 202
        assert connection.llen("grading") == 0
        [raw] = connection.lrange(REGRADE_QUEUE, 0, -1)
        message = json.loads(raw)
        [item_id], _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        assert message["headers"]["task"] == TASK_NAMES[RegradeItem]
        with app.app_context():
            item = db_session().get(RegradeItem, uuid.UUID(item_id))
            assert str(item.attempt_id) == attempt_id and item.dispatched_at is not None
    finally:
        connection.flushdb()
        connection.close()


def test_the_celery_worker_has_a_task_for_every_job_sent():
    """A regrade item, and every other job the web sends (a course exercise's proof too), has its task."""
    from service.jobs.celery_worker import create_worker_app

    app = create_worker_app(Settings.from_env({}, grading_backend="celery", celery_broker_url="redis://127.0.0.1:1/0"))
    assert TASK_NAMES[RegradeItem] in app.tasks
    assert set(TASK_NAMES.values()) <= set(app.tasks)


# --- exercises --------------------------------------------------------------------------------


def run_cli(app, *args):
    return app.test_cli_runner().invoke(args=list(args))


def test_unpublish_survives_a_sync_until_published_again(bare_app, tmp_path, client_key_for):
    app = bare_app
    root = tmp_path / "exercises"
    for slug in (QUIZ, "squarefn-gradient-at-four"):
        shutil.copytree(SOURCE / slug, root / slug)
    assert run_cli(app, "exercises", "sync", "--dir", str(root)).exit_code == 0
    staff, learner_client = client_key_for(app, "prof", Role.INSTRUCTOR), client_key_for(app, "lms-one")
    client = app.test_client()
    answer(client, learner_client, "ada", "none-each")

    hidden = client.post(f"/api/v1/admin/exercises/{QUIZ}/unpublish", headers=bearer(staff))
    assert hidden.status_code == 200
    assert (hidden.json["published"], hidden.json["unpublished_by"], hidden.json["version"]) == (False, "prof", 1)
    assert client.post(f"/api/v1/admin/exercises/{QUIZ}/unpublish", headers=bearer(staff)).status_code == 200
    assert client.get(f"/api/v1/exercises/{QUIZ}").status_code == 404
    assert [e["slug"] for e in client.get("/api/v1/exercises").json] == ["squarefn-gradient-at-four"]
    refused = client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"learner": "ada", "answer": "none-each"},
                          headers=bearer(learner_client))
    assert refused.status_code == 404
    # Staff still see it, and its attempts stay readable.
    listed = {e["slug"]: e for e in client.get("/api/v1/admin/exercises", headers=bearer(staff)).json}
    assert listed[QUIZ]["published"] is False and listed["squarefn-gradient-at-four"]["published"] is True

    # A sync, even of new content, keeps it unpublished.
    assert "0 updated, 2 unchanged" in run_cli(app, "exercises", "sync", "--dir", str(root)).output
    spec = root / QUIZ / "exercise.toml"
    spec.write_text(spec.read_text().replace('title = "', 'title = "Revised: ', 1))
    assert "1 updated" in run_cli(app, "exercises", "sync", "--dir", str(root)).output
    assert client.get(f"/api/v1/exercises/{QUIZ}").status_code == 404
    with app.app_context():
        exercise = db_session().scalar(select(Exercise).where(Exercise.slug == QUIZ))
        assert (exercise.published, exercise.current_version, exercise.unpublished_by) == (False, 2, "prof")

    shown = client.post(f"/api/v1/admin/exercises/{QUIZ}/publish", headers=bearer(staff))
    assert shown.status_code == 200
    assert (shown.json["published"], shown.json["unpublished_by"], shown.json["version"]) == (True, None, 2)
    assert client.post(f"/api/v1/admin/exercises/{QUIZ}/publish", headers=bearer(staff)).json["published"] is True
    assert client.get(f"/api/v1/exercises/{QUIZ}").json["title"].startswith("Revised: ")
    assert "0 updated, 2 unchanged" in run_cli(app, "exercises", "sync", "--dir", str(root)).output
    assert client.get(f"/api/v1/exercises/{QUIZ}").status_code == 200
    answer(client, learner_client, "ada", "none-each")

    versions = client.get(f"/api/v1/admin/exercises/{QUIZ}/versions", headers=bearer(staff))
    assert versions.status_code == 200
    assert [(v["number"], v["attempts"], v["current"]) for v in versions.json] == [(2, 1, True), (1, 1, False)]
    assert all(len(v["digest"]) == 64 for v in versions.json)

    # A removed folder still unpublishes an exercise at the next sync.
    shutil.rmtree(root / QUIZ)
    assert "1 unpublished" in run_cli(app, "exercises", "sync", "--dir", str(root)).output
    with app.app_context():
        exercise = db_session().scalar(select(Exercise).where(Exercise.slug == QUIZ))
        assert (exercise.published, exercise.unpublished_by) == (False, None)


def test_unknown_exercises(client, staff_key):
    for path in ("/exercises/no-such/versions", "/exercises/no-such/publish", "/exercises/no-such/unpublish"):
        method = client.get if path.endswith("versions") else client.post
        response = method(f"/api/v1/admin{path}", headers=bearer(staff_key))
        assert response.status_code == 404 and response.content_type == "application/problem+json"


# --- who may ----------------------------------------------------------------------------------

ENDPOINTS = [
    ("post", "/api/v1/admin/regrades", {"exercise": QUIZ}),
    ("get", "/api/v1/admin/regrades", None),
    ("get", f"/api/v1/admin/regrades/{uuid.uuid4()}", None),
    ("post", f"/api/v1/admin/regrades/{uuid.uuid4()}/apply", None),
    ("post", f"/api/v1/admin/attempts/{uuid.uuid4()}/override", {"score": 1.0, "reason": "x"}),
    ("get", "/api/v1/admin/overrides", None),
    ("get", "/api/v1/admin/exercises", None),
    ("get", f"/api/v1/admin/exercises/{QUIZ}/versions", None),
    ("post", f"/api/v1/admin/exercises/{QUIZ}/publish", None),
    ("post", f"/api/v1/admin/exercises/{QUIZ}/unpublish", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_only_instructors_and_admins(app, client, client_key, admin_key, staff_key, method, path, body):
    send = getattr(client, method)
    kwargs = {"json": body} if body is not None else {}
    unauthenticated = send(path, **kwargs)
    assert unauthenticated.status_code == 401 and unauthenticated.content_type == "application/problem+json"
    for key in (client_key, learner_token(app)):
        refused = send(path, headers=bearer(key), **kwargs)
        assert refused.status_code == 403 and refused.content_type == "application/problem+json", refused.json
    for key in (staff_key, admin_key):
        assert send(path, headers=bearer(key), **kwargs).status_code not in (401, 403)


def test_the_endpoints_are_documented(client):
    spec = client.get("/api/v1/openapi.json").json
    override = spec["paths"]["/api/v1/admin/attempts/{attempt_id}/override"]["post"]
    assert {"201", "401", "403", "404", "409", "422"} <= set(override["responses"])
    apply = spec["paths"]["/api/v1/admin/regrades/{regrade_id}/apply"]["post"]
    assert "application/problem+json" in apply["responses"]["409"]["content"]
