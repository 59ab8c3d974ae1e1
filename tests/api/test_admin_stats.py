"""Statistics per exercise and progress per learner: the counter_rows the workers fold every attempt
event into (quiz answers, code grades stored by the workers, regrades, overrides) match a full
recount once caught up, and the endpoints report them (and how far behind they are); only
instructors and admins may read them."""

from __future__ import annotations

import threading
import time as time_module
import uuid
from datetime import UTC, datetime, time, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy import Column, MetaData, Table, Uuid, create_engine, select

from service import migrate
from service.auth import create_client
from service.config import Settings
from service.extensions import db_session
from service.jobs import db_lease
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import (
    GRADED_EVENT,
    OVERRIDDEN_EVENT,
    REGRADED_EVENT,
    ApiClient,
    Attempt,
    Base,
    Exercise,
    Role,
)
from service.models.base import JSONType, utcnow
from service.services import progress
from service.services.events import record_attempt_event
from tests.api.support import LEASE, assert_counters_equal_a_rebuild, catch_up, code_report, grade_next
from tests.helpers import bearer, correct_answer

QUIZ = "backward-none-for-bounds"  # single choice
CODE = "clamp-function"
ADMIN = "/api/v1/admin"


@pytest.fixture
def instructor_key(app) -> str:
    with app.app_context():
        _client, key = create_client(db_session(), "teacher", Role.INSTRUCTOR)
        db_session().commit()
    return key




def exercise_stats(client, key, slug):
    catch_up(client.application)
    response = client.get(f"{ADMIN}/exercises/{slug}/stats", headers=bearer(key))
    assert response.status_code == 200, response.json
    return response.json


def learner_progress(client, key, learner, client_name=None):
    query = f"?client={client_name}" if client_name else ""
    catch_up(client.application)
    response = client.get(f"{ADMIN}/learners/{learner}/progress{query}", headers=bearer(key))
    assert response.status_code == 200, response.json
    return response.json


def overview_of(client, key, slug):
    catch_up(client.application)
    response = client.get(f"{ADMIN}/stats", headers=bearer(key))
    assert response.status_code == 200, response.json
    return next(e for e in response.json if e["exercise"] == slug)


def answer(client, key, learner, value):
    response = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(key),
                           json={"learner": learner, "answer": value})
    assert response.status_code == 201, response.json
    return response.json


def wrong_choice(spec):
    return next(c["id"] for c in spec["choices"] if not c["correct"])






# ------------------------------------------------------------------------------ quiz answers


def test_quiz_attempts_through_the_api_are_counted(app, client, client_key, other_client_key, instructor_key,
                                                   quiz_catalog):
    spec = quiz_catalog[QUIZ]
    right, wrong = correct_answer(spec), wrong_choice(spec)
    for value in (wrong, wrong, right, wrong):
        answer(client, client_key, "ada", value)
    answer(client, client_key, "bob", wrong)
    answer(client, other_client_key, "ada", right)  # another client's ada: another learner

    stats = exercise_stats(client, instructor_key, QUIZ)
    assert {k: stats[k] for k in ("exercise", "kind", "attempts", "graded", "passed_attempts", "learners",
                                  "passed_learners")} == {
        "exercise": QUIZ, "kind": "single_choice", "attempts": 6, "graded": 6, "passed_attempts": 2, "learners": 3,
        "passed_learners": 2}
    assert stats["pass_rate"] == pytest.approx(2 / 3)
    assert stats["attempt_pass_rate"] == pytest.approx(2 / 6)
    assert [b["count"] for b in stats["score_histogram"]] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    assert stats["mean_best_score"] == pytest.approx(2 / 3)  # best scores 1, 0 and 1
    assert stats["median_attempts_to_first_pass"] == 2.0  # ada: 3, the other ada: 1
    assert stats["median_seconds_to_first_pass"] >= 0
    assert stats["failing_checks"] == [] and stats["likely_causes"] == []
    today = utcnow().date().isoformat()
    assert stats["attempts_by_day"][-1] == {"day": today, "attempts": 6, "passed": 2}
    assert sum(d["attempts"] for d in stats["attempts_by_day"]) == 6

    assert overview_of(client, instructor_key, QUIZ) | {"title": None} == {
        "exercise": QUIZ, "title": None, "kind": "single_choice", "published": True, "attempts": 6, "learners": 3,
        "passed_learners": 2, "pass_rate": pytest.approx(2 / 3)}
    untouched = overview_of(client, instructor_key, CODE)
    assert (untouched["attempts"], untouched["learners"], untouched["pass_rate"]) == (0, 0, None)

    ada = learner_progress(client, instructor_key, "ada", "lms-one")
    assert ada["learner"] == "ada" and ada["client"] == "lms-one"
    [entry] = ada["exercises"]
    assert {k: entry[k] for k in ("exercise", "client", "attempts", "best_score", "latest_score", "passed",
                                  "attempts_to_first_pass")} == {
        "exercise": QUIZ, "client": "lms-one", "attempts": 4, "best_score": 1.0, "latest_score": 0.0, "passed": True,
        "attempts_to_first_pass": 3}
    assert entry["first_attempt_at"] < entry["first_passed_at"] <= entry["last_graded_at"]
    both = learner_progress(client, instructor_key, "ada")
    assert both["client"] is None
    assert [(e["client"], e["attempts"], e["attempts_to_first_pass"]) for e in both["exercises"]] == [
        ("lms-one", 4, 3), ("lms-two", 1, 1)]
    bob = learner_progress(client, instructor_key, "bob", "lms-one")["exercises"]
    assert [(e["passed"], e["best_score"], e["first_passed_at"], e["attempts_to_first_pass"]) for e in bob] == [
        (False, 0.0, None, None)]
    assert learner_progress(client, instructor_key, "nobody")["exercises"] == []
    assert_counters_equal_a_rebuild(app)


# ----------------------------------------------------------------------- code graded by workers




def submit_code(client, key, learner):
    response = client.post(f"/api/v1/exercises/{CODE}/attempts", headers=bearer(key),
                           json={"learner": learner, "code": "class ClampFn: pass\n"})
    assert response.status_code == 202, response.json
    return uuid.UUID(response.json["id"])




def grade_code_attempts(app, client, client_key):
    """cy: failed (wrong_sign), then passed; dee: the grader failed on it. Returns cy's ids."""
    first, second = submit_code(client, client_key, "cy"), submit_code(client, client_key, "cy")
    submit_code(client, client_key, "dee")
    assert grade_next(app, code_report("failed", 0.5, ("gradcheck", "gradient"), "wrong_sign")) == first
    assert grade_next(app, code_report("passed", 1.0)) == second
    with app.app_context():
        job = db_lease.claim(db_session(), Attempt, "test-worker", LEASE, max_tries=1)
        assert db_lease.give_up_or_retry(db_session(), Attempt, job.id, "test-worker", max_tries=1) == "error"
    return first, second


def test_code_grades_stored_by_the_workers_are_counted(app, client, client_key, instructor_key):
    submit_code(client, client_key, "cy")
    queued = exercise_stats(client, instructor_key, CODE)
    assert (queued["attempts"], queued["graded"], queued["learners"], queued["pass_rate"]) == (1, 0, 0, None)
    assert queued["median_attempts_to_first_pass"] is None and queued["attempt_pass_rate"] is None
    assert [b["count"] for b in queued["score_histogram"]] == [0] * 10

    assert grade_next(app, code_report("failed", 0.5, ("gradcheck", "gradient"), "wrong_sign"))
    submit_code(client, client_key, "cy")
    submit_code(client, client_key, "dee")
    assert grade_next(app, code_report("passed", 1.0))
    with app.app_context():  # dee's: the grader gives up on it (not the learner's outcome)
        job = db_lease.claim(db_session(), Attempt, "test-worker", LEASE, max_tries=1)
        assert db_lease.give_up_or_retry(db_session(), Attempt, job.id, "test-worker", max_tries=1) == "error"

    stats = exercise_stats(client, instructor_key, CODE)
    assert (stats["attempts"], stats["graded"], stats["passed_attempts"], stats["learners"],
            stats["passed_learners"]) == (3, 2, 1, 1, 1)
    assert stats["failing_checks"] == [{"name": "gradcheck", "count": 1}, {"name": "gradient", "count": 1}]
    assert stats["likely_causes"] == [{"name": "wrong_sign", "count": 1}]
    assert stats["median_attempts_to_first_pass"] == 2.0
    assert [b["count"] for b in stats["score_histogram"]] == [0] * 9 + [1]
    assert overview_of(client, instructor_key, CODE)["attempts"] == 3
    [cy] = learner_progress(client, instructor_key, "cy", "lms-one")["exercises"]
    assert (cy["attempts"], cy["best_score"], cy["latest_score"], cy["passed"], cy["attempts_to_first_pass"]) == (
        2, 1.0, 1.0, True, 2)
    assert learner_progress(client, instructor_key, "dee", "lms-one")["exercises"] == []
    assert_counters_equal_a_rebuild(app)


def test_workers_grading_at_once_lose_no_count(app, client, client_key, instructor_key):
    """Four workers store grades at the same time, several of the same learner: every count is kept."""
    for n in range(24):
        submit_code(client, client_key, f"learner-{n % 3}")
    errors = []

    def work(worker_id):
        try:
            with app.app_context():
                session = db_session()
                while (job := db_lease.claim(session, Attempt, worker_id, LEASE, max_tries=3)) is not None:
                    values = (code_report("passed", 1.0) if job.id.int % 3 == 0
                              else code_report("failed", 0.5, ("gradient",), "wrong_sign"))
                    assert db_lease.complete(session, Attempt, job.id, worker_id, values)
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(f"worker-{n}",)) for n in range(4)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=60)
    assert errors == []
    stats = exercise_stats(client, instructor_key, CODE)
    assert (stats["attempts"], stats["graded"], stats["learners"]) == (24, 24, 3)
    assert stats["likely_causes"][0]["count"] == 24 - stats["passed_attempts"]
    assert sum(d["attempts"] for d in stats["attempts_by_day"]) == 24
    kept = assert_counters_equal_a_rebuild(app)
    assert sorted(row[3] for row in kept["learners"]) == [8, 8, 8]


def store_grade(session, attempt_id, values):
    """A worker's grade, stored with its event, in the session's open transaction."""
    attempt = session.get(Attempt, attempt_id)
    for name, value in values.items():
        setattr(attempt, name, value)
    attempt.status, attempt.graded_at = "graded", utcnow()
    record_attempt_event(session, attempt_id=attempt_id, client_id=attempt.client_id, lti_link_id=None,
                         type=GRADED_EVENT, at=attempt.graded_at, data={})


def test_a_grade_stored_while_another_of_the_same_learner_commits_counts_both(app, client, client_key,
                                                                                instructor_key):
    """The second transaction's recount must see the first one's attempt, or the learner's row
    would say one attempt where there are two."""
    first, second = submit_code(client, client_key, "eve"), submit_code(client, client_key, "eve")
    errors = []

    def later():
        try:
            with app.app_context():
                store_grade(db_session(), second, code_report("passed", 1.0))
                db_session().commit()
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)

    with app.app_context():
        session = db_session()
        store_grade(session, first, code_report("failed", 0.5, ("gradient",), "wrong_sign"))
        thread = threading.Thread(target=later)
        thread.start()
        thread.join(timeout=0.5)  # the other transaction gets as far as it can before this commits
        session.commit()
    thread.join(timeout=30)
    assert errors == []
    [eve] = learner_progress(client, instructor_key, "eve", "lms-one")["exercises"]
    assert (eve["attempts"], eve["best_score"], eve["passed"], eve["attempts_to_first_pass"]) == (2, 1.0, True, 2)
    assert_counters_equal_a_rebuild(app)


# ------------------------------------------------------------- the folder: lag and catching up


def test_a_grade_is_counted_by_the_folder_not_the_request_and_the_lag_is_reported(app, client, client_key,
                                                                                 instructor_key, quiz_catalog):
    catch_up(app)
    answer(client, client_key, "ada", correct_answer(quiz_catalog[QUIZ]))
    path = f"{ADMIN}/exercises/{QUIZ}/stats"
    behind = client.get(path, headers=bearer(instructor_key)).json  # nothing has folded it yet
    assert behind["graded"] == 0 and behind["counters_as_of"] is not None
    assert client.get(f"{ADMIN}/learners/ada/progress", headers=bearer(instructor_key)).json["counters_as_of"]
    assert catch_up(app) == 1
    caught_up = client.get(path, headers=bearer(instructor_key)).json
    assert (caught_up["graded"], caught_up["passed_learners"], caught_up["counters_as_of"]) == (1, 1, None)
    assert catch_up(app) == 0  # each event is folded once
    assert_counters_equal_a_rebuild(app)


def test_folders_running_at_once_neither_lose_nor_double_a_count(app, client, client_key, instructor_key):
    """Two workers' folders (one per host) take batches at the same time, several of one learner's
    attempts among them, while grades go on being stored."""
    for n in range(30):
        submit_code(client, client_key, f"learner-{n % 4}")
    errors: list[Exception] = []

    def grade_all(worker_id):
        try:
            with app.app_context():
                session = db_session()
                while (job := db_lease.claim(session, Attempt, worker_id, LEASE, max_tries=3)) is not None:
                    values = (code_report("passed", 1.0) if job.id.int % 2
                              else code_report("failed", 0.5, ("gradient",), "wrong_sign"))
                    assert db_lease.complete(session, Attempt, job.id, worker_id, values)
        except Exception as exc:  # reported below, in the test's thread
            errors.append(exc)

    def fold(stop):
        try:
            with app.app_context():
                while not stop.is_set():
                    progress.fold_pending(db_session(), limit=3)
                    db_session().commit()
        except Exception as exc:
            errors.append(exc)

    stop = threading.Event()
    threads = [threading.Thread(target=grade_all, args=("worker-a",)), threading.Thread(target=fold, args=(stop,)),
               threading.Thread(target=fold, args=(stop,))]
    for thread in threads:
        thread.start()
    threads[0].join(timeout=60)
    stop.set()
    for thread in threads[1:]:
        thread.join(timeout=60)
    assert errors == []
    stats = exercise_stats(client, instructor_key, CODE)
    assert (stats["graded"], stats["learners"], stats["counters_as_of"]) == (30, 4, None)
    assert sum(d["attempts"] for d in stats["attempts_by_day"]) == 30
    assert_counters_equal_a_rebuild(app)


def test_a_rebuild_counts_the_events_not_yet_folded_once(app, client, client_key, instructor_key, quiz_catalog):
    catch_up(app)
    spec = quiz_catalog[QUIZ]
    for learner in ("ada", "bob", "ada"):
        answer(client, client_key, learner, correct_answer(spec))
    with app.app_context():
        progress.rebuild(db_session())
        db_session().commit()
    assert catch_up(app) == 0  # the recount included them
    stats = exercise_stats(client, instructor_key, QUIZ)
    assert (stats["graded"], stats["learners"], stats["counters_as_of"]) == (3, 2, None)


def test_the_workers_folder_thread_catches_up_within_its_interval(app, client, client_key, instructor_key,
                                                                    quiz_catalog, database_url):
    from service.jobs.counters import CounterFolder

    catch_up(app)
    settings = Settings(database_url=database_url, counters_fold_seconds=0.05)
    stop = threading.Event()
    thread = CounterFolder(settings).start_thread(stop)
    try:
        for learner in ("ada", "bob"):
            answer(client, client_key, learner, correct_answer(quiz_catalog[QUIZ]))
        path = f"{ADMIN}/exercises/{QUIZ}/stats"
        deadline = time_module.monotonic() + 10
        while (stats := client.get(path, headers=bearer(instructor_key)).json)["counters_as_of"] is not None:
            assert time_module.monotonic() < deadline, "the folder did not catch up"
            time_module.sleep(0.02)
        assert (stats["graded"], stats["learners"]) == (2, 2)
    finally:
        stop.set()
        thread.join(timeout=10)


# ----------------------------------------------------------------- regrades and overrides


def change_grade(app, attempt_id, event_type, **values):
    """What a regrade or an override does: snapshot the grade, change it, record the event."""
    with app.app_context():
        session = db_session()
        attempt = session.get(Attempt, attempt_id)
        previous = progress.grade_snapshot(attempt)
        for name, value in values.items():
            setattr(attempt, name, value)
        record_attempt_event(session, attempt_id=attempt.id, client_id=attempt.client_id, lti_link_id=None,
                             type=event_type, at=utcnow(), previous=previous,
                             data={"status": attempt.status, "score": attempt.score, "correct": attempt.correct})
        session.commit()


def test_regrades_and_overrides_move_the_counters(app, client, client_key, instructor_key):
    first, second = grade_code_attempts(app, client, client_key)

    passing = code_report("passed", 1.0)  # the grader changed: cy's first attempt passes now
    change_grade(app, first, REGRADED_EVENT, score=1.0, grader_score=1.0, correct=True, verdict="passed",
                 likely_cause=None, result=passing["result"])
    stats = exercise_stats(client, instructor_key, CODE)
    assert (stats["graded"], stats["passed_attempts"], stats["learners"], stats["passed_learners"]) == (2, 2, 1, 1)
    assert stats["failing_checks"] == [] and stats["likely_causes"] == []
    assert stats["attempts_by_day"][-1]["passed"] == 2
    assert stats["median_attempts_to_first_pass"] == 1.0
    assert_counters_equal_a_rebuild(app)

    change_grade(app, second, OVERRIDDEN_EVENT, score=0.4, overridden=True)  # verdict stays: still passed
    [cy] = learner_progress(client, instructor_key, "cy", "lms-one")["exercises"]
    assert (cy["best_score"], cy["latest_score"], cy["passed"], cy["attempts_to_first_pass"]) == (1.0, 0.4, True, 1)
    assert_counters_equal_a_rebuild(app)

    failing = code_report("failed", 0.25, ("forward", "gradient", "boundary"), "forgot_grad_output")
    change_grade(app, first, REGRADED_EVENT, score=0.25, grader_score=0.25, correct=False, verdict="failed",
                 likely_cause="forgot_grad_output", result=failing["result"])
    change_grade(app, second, REGRADED_EVENT, correct=False, verdict="failed", likely_cause="wrong_sign",
                 result=code_report("failed", 0.5, ("gradient",), "wrong_sign")["result"])
    stats = exercise_stats(client, instructor_key, CODE)
    assert (stats["graded"], stats["passed_attempts"], stats["learners"], stats["passed_learners"]) == (2, 0, 1, 0)
    assert stats["pass_rate"] == 0.0 and stats["median_attempts_to_first_pass"] is None
    assert stats["failing_checks"] == [{"name": "gradient", "count": 2}, {"name": "boundary", "count": 1},
                                       {"name": "forward", "count": 1}]
    assert stats["likely_causes"] == [{"name": "forgot_grad_output", "count": 1}, {"name": "wrong_sign", "count": 1}]
    [cy] = learner_progress(client, instructor_key, "cy", "lms-one")["exercises"]
    assert (cy["best_score"], cy["latest_score"], cy["passed"], cy["attempts_to_first_pass"]) == (0.4, 0.4, False, None)
    assert_counters_equal_a_rebuild(app)


# ----------------------------------------------------------- medians and the histogram, by hand


def test_medians_histogram_and_days_on_a_hand_made_data_set(app, client, client_key, instructor_key):
    today = utcnow().date()
    noon = datetime.combine(today - timedelta(days=3), time(12), tzinfo=UTC)
    # learner: [(seconds after noon three days ago, score, passed)]
    learners = {
        "a": [(0, 0.0, False), (60, 0.5, False), (120, 1.0, True)],  # passed at the 3rd, after 120 s
        "b": [(10, 1.0, True)],  # 1st, 0 s
        "c": [(0, 0.2, False), (600, 1.0, True)],  # 2nd, 600 s
        "d": [(5, 0.35, False)],
        "e": [(5, 0.3, False), (6, 0.1, False)],  # best 0.3: the [0.3, 0.4) bucket
        "f": [(5, 0.7, False)],
        "g": [(5, 0.0, False)],
        "h": [(0, 0.99, False), (86400, 1.0, True)],  # 2nd, a day later
        "i": [(-37 * 86400, 0.0, False)],  # before the last 30 days
    }
    with app.app_context():
        session = db_session()
        exercise = session.scalar(select(Exercise).where(Exercise.slug == QUIZ))
        client_id = session.scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
        for learner, attempts in learners.items():
            for seconds, score, passed in attempts:
                at = noon + timedelta(seconds=seconds)
                attempt = Attempt(id=uuid.uuid4(), client_id=client_id, learner=learner, exercise_id=exercise.id,
                                  exercise_version_id=exercise.version.id, answer="x", status="graded", score=score,
                                  grader_score=score, correct=passed, verdict="passed" if passed else "failed",
                                  result={"feedback": []}, created_at=at, graded_at=at)
                session.add(attempt)
                record_attempt_event(session, attempt_id=attempt.id, client_id=client_id, lti_link_id=None,
                                     type=GRADED_EVENT, at=at, data={})
        session.commit()

    stats = exercise_stats(client, instructor_key, QUIZ)
    assert (stats["graded"], stats["passed_attempts"], stats["learners"], stats["passed_learners"]) == (14, 4, 9, 4)
    assert stats["pass_rate"] == pytest.approx(4 / 9) and stats["attempt_pass_rate"] == pytest.approx(4 / 14)
    assert stats["score_histogram"][3] == {"from": 0.3, "to": 0.4, "count": 2}
    assert [b["count"] for b in stats["score_histogram"]] == [2, 0, 0, 2, 0, 0, 0, 1, 0, 4]
    assert stats["mean_best_score"] == pytest.approx((4 * 1.0 + 0.35 + 0.3 + 0.7) / 9)  # g and i: 0
    assert stats["median_attempts_to_first_pass"] == 2.0  # of 1, 2, 2, 3
    assert stats["median_seconds_to_first_pass"] == pytest.approx(360.0)  # of 0, 120, 600, 86400
    days = stats["attempts_by_day"]
    assert len(days) == 30 and days[-1]["day"] == today.isoformat()
    assert days[-4] == {"day": (today - timedelta(days=3)).isoformat(), "attempts": 12, "passed": 3}
    assert days[-3] == {"day": (today - timedelta(days=2)).isoformat(), "attempts": 1, "passed": 1}
    assert sum(d["attempts"] for d in days) == 13  # i's is older than 30 days
    [h] = learner_progress(client, instructor_key, "h", "lms-one")["exercises"]
    assert (h["attempts"], h["best_score"], h["latest_score"], h["attempts_to_first_pass"]) == (2, 1.0, 1.0, 2)
    assert datetime.fromisoformat(h["first_passed_at"]) - datetime.fromisoformat(h["first_attempt_at"]) == \
        timedelta(days=1)
    assert_counters_equal_a_rebuild(app)


# ------------------------------------------------------------------------------ who may read


def test_only_instructors_and_admins_read_statistics(app, client, client_key, admin_key, instructor_key):
    paths = [f"{ADMIN}/stats", f"{ADMIN}/exercises/{QUIZ}/stats", f"{ADMIN}/learners/ada/progress"]
    with app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
    token = issue_learner_token(app.config["SECRET_KEY"], LearnerScope(client_id, "ada", QUIZ, LEARNER, None), 600)
    for path in paths:
        assert client.get(path).status_code == 401
        assert client.get(path, headers=bearer("gq_not-a-key")).status_code == 401
        for key in (client_key, token):
            response = client.get(path, headers=bearer(key))
            assert response.status_code == 403 and response.mimetype == "application/problem+json"
        for key in (instructor_key, admin_key):
            assert client.get(path, headers=bearer(key)).status_code == 200

    missing = client.get(f"{ADMIN}/exercises/no-such-exercise/stats", headers=bearer(instructor_key))
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
    unknown_client = client.get(f"{ADMIN}/learners/ada/progress?client=nope", headers=bearer(instructor_key))
    assert unknown_client.status_code == 404
    assert client.get(f"{ADMIN}/learners/ada/progress?client=", headers=bearer(instructor_key)).status_code == 422

    spec = client.get("/api/v1/openapi.json").json
    for path, status in [("/api/v1/admin/stats", "403"), ("/api/v1/admin/exercises/{slug}/stats", "404"),
                         ("/api/v1/admin/learners/{learner}/progress", "404")]:
        assert {"200", "401", "403", status} <= set(spec["paths"][path]["get"]["responses"])


# --------------------------------------------------------------------------- migration 0007


def test_attempts_made_before_0007_are_counted_by_its_backfill(empty_database):
    _backend, url = empty_database
    url = Settings.from_env({}, database_url=url).sqlalchemy_url
    migrate.upgrade(url, "0006")
    engine = create_engine(url)
    # The attempts and versions tables as they are at 0006, not as the model has them now (later
    # columns and their defaults); typed as the model types them (SQLite's reflection sees a CHAR, a TEXT).
    tables = dict(Base.metadata.tables)
    tables["attempts"] = Table("attempts", MetaData(), Column("id", Uuid, primary_key=True), autoload_with=engine)
    tables["exercise_versions"] = Table("exercise_versions", MetaData(), Column("content", JSONType),
                                        autoload_with=engine)
    now = utcnow()
    try:
        with engine.begin() as conn:
            client_id = conn.execute(tables["api_clients"].insert().values(
                name="lms", role="client", key_hash="0" * 64, key_prefix="gq_x", created_at=now)
            ).inserted_primary_key[0]
            ids = {}
            for slug, kind in (("quiz", "single_choice"), ("code", "code")):
                ids[slug] = conn.execute(tables["exercises"].insert().values(
                    slug=slug, kind=kind, title=slug, difficulty=1, published=True, current_version=1,
                    created_at=now, updated_at=now)).inserted_primary_key[0]
                conn.execute(tables["exercise_versions"].insert().values(
                    exercise_id=ids[slug], number=1, digest=slug.ljust(64, "0"), content={"spec": {}}, created_at=now))
            versions = dict(conn.execute(select(tables["exercise_versions"].c.exercise_id,
                                                tables["exercise_versions"].c.id)).all())
            report = {"status": "failed", "checks": [{"name": "gradient", "passed": False},
                                                     {"name": "forward", "passed": True}],
                      "likely_causes": ["wrong_sign"]}
            rows = [  # (learner, exercise, status, score, verdict, likely cause, result, minutes later)
                ("ada", "quiz", "graded", 0.0, "failed", None, {"feedback": []}, 0),
                ("ada", "quiz", "graded", 1.0, "passed", None, {"feedback": []}, 5),
                ("bob", "quiz", "graded", 0.0, "failed", None, {"feedback": []}, 1),
                ("ada", "code", "graded", 0.5, "failed", "wrong_sign", report, 2),
                ("ada", "code", "error", None, "internal_error", None, {"status": "internal_error"}, 3),
                ("bob", "code", "queued", None, None, None, None, 4),
            ]
            for learner, slug, status, score, verdict, cause, result, minutes in rows:
                at = now + timedelta(minutes=minutes)
                conn.execute(tables["attempts"].insert().values(
                    id=uuid.uuid4(), client_id=client_id, learner=learner, exercise_id=ids[slug],
                    exercise_version_id=versions[ids[slug]], status=status, score=score, grader_score=score,
                    correct=verdict == "passed", verdict=verdict, likely_cause=cause, result=result,
                    code="x" if slug == "code" else None, created_at=at, graded_at=at if status != "queued" else None,
                    tries=1, overridden=False))
        migrate.upgrade(url)
        with engine.connect() as conn:
            learners = {(r.learner, r.exercise_id): r for r in conn.execute(sa.text(
                "SELECT learner, exercise_id, attempts, best_score, latest_score, passed, attempts_to_first_pass "
                "FROM learner_progress"))}
            assert {k: (r.attempts, r.best_score, r.latest_score, bool(r.passed), r.attempts_to_first_pass)
                    for k, r in learners.items()} == {
                ("ada", ids["quiz"]): (2, 1.0, 1.0, True, 2), ("bob", ids["quiz"]): (1, 0.0, 0.0, False, None),
                ("ada", ids["code"]): (1, 0.5, 0.5, False, None)}
            totals = set(conn.execute(sa.text(
                "SELECT exercise_id, attempts, passed_attempts, learners, passed_learners FROM exercise_progress")))
            assert totals == {(ids["quiz"], 3, 1, 2, 1), (ids["code"], 1, 0, 1, 0)}
            outcomes = set(conn.execute(sa.text("SELECT exercise_id, kind, name, count FROM exercise_outcome_counts")))
            assert outcomes == {(ids["code"], "check", "gradient", 1), (ids["code"], "cause", "wrong_sign", 1)}
            by_exercise = {}  # summed over days: the minutes may straddle midnight
            for exercise_id, attempts, passed in conn.execute(sa.text(
                    "SELECT exercise_id, attempts, passed FROM exercise_daily_counts")):
                before = by_exercise.get(exercise_id, (0, 0))
                by_exercise[exercise_id] = (before[0] + attempts, before[1] + passed)
            assert by_exercise == {ids["quiz"]: (3, 1), ids["code"]: (1, 0)}
    finally:  # leave the shared database empty, as the other migration tests expect it
        existing = set(sa.inspect(engine).get_table_names())
        with engine.begin() as conn:
            for table in reversed(Base.metadata.sorted_tables):
                if table.name in existing:
                    conn.execute(table.delete())
        engine.dispose()
        migrate.downgrade(url, "base")
