"""Assessment rules (issue 17): attempts, penalties, dates, extensions, when the explanation shows,
runs; set by staff through the admin API or in exercise.toml, enforced on every attempt."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.learner_tokens import INSTRUCTOR, LearnerScope, issue_learner_token
from service.models import ApiClient, Attempt, AttemptStatus, Run
from service.models.base import utcnow
from tests.api.support import assert_counters_equal_a_rebuild, copy_exercise, grade_regrade_items, set_correct, sync_folder
from tests.helpers import bearer, count_rows

QUIZ, RIGHT, WRONG = "backward-none-for-bounds", "none-each", "zero-number"
CODE = "square-function"


@pytest.fixture
def staff_key(app, client_key_for) -> str:
    from service.models import Role

    return client_key_for(app, "prof", Role.INSTRUCTOR)


@pytest.fixture
def client_id(app, client_key) -> int:
    with app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))


def rules_url(client_id: int, slug: str = QUIZ) -> str:
    return f"/api/v1/admin/exercises/{slug}/clients/{client_id}/rules"


def set_rules(client, staff_key, client_id, slug=QUIZ, **rules):
    response = client.put(rules_url(client_id, slug), headers=bearer(staff_key), json=rules)
    assert response.status_code == 200, response.json
    return response.json


def answer(client, key, learner="ada", choice=RIGHT, slug=QUIZ):
    return client.post(f"/api/v1/exercises/{slug}/attempts", headers=bearer(key),
                       json={"learner": learner, "answer": choice})


def iso(moment: datetime) -> str:
    return moment.isoformat()


def test_max_attempts_refuses_the_next_attempt_with_its_reason_and_writes_nothing(app, client, client_key, staff_key,
                                                                                  client_id):
    set_rules(client, staff_key, client_id, max_attempts=2)
    first = answer(client, client_key, choice=WRONG).json
    assert (first["attempt_number"], first["standing"]["attempts_used"], first["standing"]["attempts_left"]) == (1, 1, 1)
    assert answer(client, client_key).status_code == 201
    refused = answer(client, client_key)
    assert refused.status_code == 409 and refused.content_type == "application/problem+json"
    assert refused.json["type"] == "/problems/attempt-refused/no-attempts-left"
    assert "all 2 attempts" in refused.json["detail"]
    assert (refused.json["standing"]["attempts_used"], refused.json["standing"]["attempts_left"]) == (2, 0)
    assert count_rows(app, Attempt) == 2
    # Another learner of the same client has their own attempts.
    assert answer(client, client_key, learner="bob").status_code == 201


def test_an_attempt_the_grader_failed_on_is_not_counted(app, client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, max_attempts=1)
    first = answer(client, client_key, choice=WRONG).json
    with app.app_context():
        db_session().get(Attempt, uuid.UUID(first["id"])).status = AttemptStatus.ERROR.value
        db_session().commit()
    again = answer(client, client_key)
    assert again.status_code == 201, again.json
    # Numbers are never reused, so two racing requests can never both take one.
    assert again.json["attempt_number"] == 2 and again.json["standing"]["attempts_used"] == 1


@pytest.mark.parametrize(("rules", "scores"), [
    ({"attempt_penalty": 0.25}, [1.0, 0.75, 0.5, 0.25, 0.0]),
    ({"attempt_maxima": [1, 0.8, 0.5]}, [1.0, 0.8, 0.5, 0.5, 0.5]),
])
def test_penalties_per_attempt_lower_the_score_that_counts_and_keep_the_raw_score(client, client_key, staff_key,
                                                                                  client_id, rules, scores):
    set_rules(client, staff_key, client_id, **rules)
    bodies = [answer(client, client_key).json for _ in scores]
    assert [body["score"] for body in bodies] == pytest.approx(scores)
    assert {body["raw_score"] for body in bodies} == {1.0}
    assert bodies[0]["penalties"] is None
    assert bodies[1]["penalties"] == [{"reason": "attempt", "factor": pytest.approx(scores[1])}]
    assert bodies[-1]["standing"]["next_penalties"] == [{"reason": "attempt", "factor": pytest.approx(scores[-1])}]
    history = client.get(f"/api/v1/learners/ada/attempts?exercise={QUIZ}", headers=bearer(client_key)).json
    assert history["best_scores"][0]["best_score"] == 1.0


def test_the_standing_before_any_attempt(app, client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, max_attempts=2, attempt_penalty=0.5)
    url = f"/api/v1/exercises/{QUIZ}/standing"
    missing = client.get(url, headers=bearer(client_key))
    assert missing.status_code == 422 and missing.json["errors"][0]["field"] == "query.learner"
    fresh = client.get(url, query_string={"learner": "ada"}, headers=bearer(client_key)).json
    assert (fresh["attempts_used"], fresh["attempts_left"], fresh["next_penalties"], fresh["refused"]) == (0, 2, [], None)
    answer(client, client_key)
    token = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                        json={"learner": "ada", "exercises": [QUIZ]}).json["token"]
    seen = client.get(url, headers=bearer(token)).json
    assert (seen["attempts_used"], seen["attempts_left"], seen["passed"]) == (1, 1, True)
    assert seen["next_penalties"] == [{"reason": "attempt", "factor": 0.5}]


def test_statistics_show_raw_and_counted_scores_apart(app, client, client_key, staff_key, client_id):

    set_rules(client, staff_key, client_id, attempt_penalty=0.5)
    answer(client, client_key, choice=WRONG)
    assert answer(client, client_key).json["score"] == 0.5  # ada: right at her second attempt
    answer(client, client_key, learner="bob")  # bob: right at once
    assert_counters_equal_a_rebuild(app)
    stats = client.get(f"/api/v1/admin/exercises/{QUIZ}/stats", headers=bearer(staff_key)).json
    assert stats["mean_best_score"] == pytest.approx(0.75) and stats["mean_best_raw_score"] == pytest.approx(1.0)


def test_the_learners_exercise_detail_carries_their_standing(client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, max_attempts=3)
    answer(client, client_key)
    shared = client.get(f"/api/v1/exercises/{QUIZ}").json
    assert "standing" not in shared
    mine = client.get(f"/api/v1/exercises/{QUIZ}?learner=ada", headers=bearer(client_key)).json
    assert (mine["standing"]["attempts_used"], mine["standing"]["attempts_left"]) == (1, 2)
    token = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                        json={"learner": "bob", "exercises": [QUIZ]}).json["token"]
    bobs = client.get(f"/api/v1/exercises/{QUIZ}", headers=bearer(token)).json
    assert (bobs["learner"], bobs["standing"]["attempts_left"]) == ("bob", 3)


def test_dates_open_close_and_grace(app, client, client_key, staff_key, client_id):
    now = utcnow()
    set_rules(client, staff_key, client_id, available_from=iso(now + timedelta(hours=1)),
              due_at=iso(now + timedelta(days=1)))
    early = answer(client, client_key)
    assert (early.status_code, early.json["type"]) == (403, "/problems/attempt-refused/not-open-yet")

    set_rules(client, staff_key, client_id, due_at=iso(now - timedelta(minutes=1)), grace_minutes=10)
    on_time = answer(client, client_key)
    assert on_time.status_code == 201 and on_time.json["late"] is False

    set_rules(client, staff_key, client_id, due_at=iso(now - timedelta(hours=1)))
    late = answer(client, client_key)
    assert (late.status_code, late.json["type"]) == (403, "/problems/attempt-refused/past-due")
    assert late.json["standing"]["late"] is True and late.json["standing"]["refused"]["reason"] == "past-due"
    assert count_rows(app, Attempt) == 1


def test_late_work_accepted_with_its_penalty(client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, due_at=iso(utcnow() - timedelta(hours=1)), late="accept", late_penalty=0.3,
              attempt_penalty=0.5)
    body = answer(client, client_key).json
    assert body["late"] is True and body["score"] == pytest.approx(0.7)
    assert body["penalties"] == [{"reason": "late", "factor": pytest.approx(0.7)}]
    second = answer(client, client_key).json
    assert second["score"] == pytest.approx(0.5 * 0.7) and [p["reason"] for p in second["penalties"]] == ["attempt", "late"]


def test_an_extension_wins_for_its_learner_only(client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, due_at=iso(utcnow() - timedelta(hours=1)), max_attempts=1)
    extension = client.put(f"/api/v1/admin/exercises/{QUIZ}/clients/{client_id}/extensions/ada",
                           headers=bearer(staff_key),
                           json={"rules": {"due_at": iso(utcnow() + timedelta(days=2)), "max_attempts": 2},
                                 "note": "Medical note"})
    assert extension.status_code == 200, extension.json
    [listed] = extension.json["extensions"]
    assert (listed["learner"], listed["note"], listed["updated_by"], listed["in_force"]["max_attempts"]) == (
        "ada", "Medical note", "prof", 2)
    assert [answer(client, client_key).status_code for _ in range(3)] == [201, 201, 409]
    assert answer(client, client_key, learner="bob").status_code == 403
    removed = client.delete(f"/api/v1/admin/exercises/{QUIZ}/clients/{client_id}/extensions/ada",
                            headers=bearer(staff_key))
    assert removed.status_code == 204
    assert client.get(rules_url(client_id), headers=bearer(staff_key)).json["extensions"] == []


def test_rules_are_validated_and_a_bad_body_changes_nothing(client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, max_attempts=3)
    for body, field in [({"max_attempts": 0}, "json.max_attempts"),
                        ({"attempt_penalty": 0.1, "attempt_maxima": [1, 0.5]}, "json.attempt_maxima"),
                        ({"due_at": "2026-12-24T12:00:00"}, "json.due_at"),
                        ({"available_from": "2026-12-25T00:00:00Z", "due_at": "2026-12-24T00:00:00Z"},
                         "json.available_from"),
                        ({"late": "sometimes"}, "json.late"), ({"unlimited": True}, "json.unlimited")]:
        response = client.put(rules_url(client_id), headers=bearer(staff_key), json=body)
        assert response.status_code == 422 and response.content_type == "application/problem+json", body
        assert field in {error["field"] for error in response.json["errors"]}, (body, response.json)
    current = client.get(rules_url(client_id), headers=bearer(staff_key)).json
    assert current["assignment"] == {"max_attempts": 3} and current["in_force"]["max_attempts"] == 3
    assert client.put(rules_url(client_id), headers=bearer(client_key), json={"max_attempts": 9}).status_code == 403


@pytest.mark.parametrize(("show", "after_wrong", "after_right"), [
    ("always", True, True), ("after_pass", False, True), ("after_attempts", False, True), ("after_due", False, False)])
def test_the_explanation_and_the_missed_answer_show_as_the_rules_say(client, client_key, staff_key, client_id, show,
                                                                    after_wrong, after_right):
    set_rules(client, staff_key, client_id, show_explanation=show, max_attempts=2)
    wrong = answer(client, client_key, choice=WRONG).json
    assert (wrong["explanation"] is not None) is after_wrong
    # The correct choice the learner missed names the answer: hidden with the explanation.
    assert any(f["choice"] == RIGHT for f in wrong["feedback"]) is after_wrong
    assert [f["choice"] for f in wrong["feedback"] if f["selected"]] == [WRONG]
    # The second (last allowed) attempt, right: passed, and no attempt left.
    right = answer(client, client_key).json
    assert (right["explanation"] is not None) is after_right
    # Read back, the earlier attempt shows what the learner's standing shows now.
    again = client.get(f"/api/v1/attempts/{wrong['id']}", headers=bearer(client_key)).json
    assert (again["explanation"] is not None) is after_right
    assert again["standing"]["explanation_shown"] is after_right
    history = client.get(f"/api/v1/learners/ada/attempts?exercise={QUIZ}", headers=bearer(client_key)).json
    assert [(a["explanation"] is not None) for a in history["attempts"]] == [after_right, after_right]


def test_after_due_shows_the_explanation_once_the_due_date_passed(client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, show_explanation="after_due", due_at=iso(utcnow() - timedelta(minutes=5)),
              late="accept")
    assert answer(client, client_key, choice=WRONG).json["explanation"] is not None


def test_a_regrade_scores_an_attempt_under_the_penalties_it_was_made_under(app, client, client_key, staff_key,
                                                                           client_id, database_url, tmp_path):
    set_rules(client, staff_key, client_id, attempt_penalty=0.5)
    answer(client, client_key, choice=RIGHT)
    second = answer(client, client_key, choice="single-none").json
    assert (second["score"], second["raw_score"]) == (0.0, 0.0)
    # Penalties are off now, and the answer key changes: the second attempt becomes right.
    client.delete(rules_url(client_id), headers=bearer(staff_key))
    root, spec = copy_exercise(tmp_path, QUIZ)
    spec.write_text(set_correct(set_correct(spec.read_text(), RIGHT, False), "single-none", True))
    assert QUIZ in sync_folder(app, root).updated
    regrade = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"attempt": second["id"]}).json
    grade_regrade_items(database_url)
    applied = client.post(f"/api/v1/admin/regrades/{regrade['id']}/apply", headers=bearer(staff_key))
    assert applied.status_code == 200, applied.json
    after = client.get(f"/api/v1/attempts/{second['id']}", headers=bearer(client_key)).json
    assert (after["raw_score"], after["score"]) == (1.0, 0.5)


@pytest.mark.backends("postgresql")
def test_two_simultaneous_attempts_at_the_last_allowed_one_make_one(app, client_key, staff_key, client_id):
    http = app.test_client()
    set_rules(http, staff_key, client_id, max_attempts=1)
    for round_ in range(5):
        learner = f"racer-{round_}"
        start = threading.Barrier(2)
        statuses: list[int] = []

        def submit(learner=learner, start=start, statuses=statuses) -> None:
            own = app.test_client()
            start.wait()
            statuses.append(answer(own, client_key, learner=learner).status_code)

        threads = [threading.Thread(target=submit) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [201, 409], statuses
        with app.app_context():
            assert len(db_session().scalars(select(Attempt.id).where(Attempt.learner == learner)).all()) == 1


def test_exercise_toml_sets_the_defaults_and_staff_override_them(app, client, client_key, staff_key, client_id,
                                                                  tmp_path):
    root, spec = copy_exercise(tmp_path, QUIZ)
    spec.write_text(spec.read_text() + '\n[rules]\nmax_attempts = 1\nshow_explanation = "always"\n'
                                       "due_at = 2099-01-01T00:00:00Z\n")
    assert QUIZ in sync_folder(app, root).updated
    first = answer(client, client_key, choice=WRONG).json
    assert first["explanation"] is not None
    assert first["standing"]["rules"]["due_at"].startswith("2099-01-01T00:00:00")
    assert answer(client, client_key).status_code == 409
    described = set_rules(client, staff_key, client_id, max_attempts=3, due_at=None)
    assert described["defaults"]["max_attempts"] == 1 and described["in_force"]["max_attempts"] == 3
    assert described["in_force"]["due_at"] is None
    assert answer(client, client_key).status_code == 201


def test_an_instructor_trying_the_exercise_out_is_not_bound(app, client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, max_attempts=1, due_at=iso(utcnow() - timedelta(days=1)))
    scope = LearnerScope(client_id=client_id, learner="prof-1", exercise=QUIZ, role=INSTRUCTOR)
    token = issue_learner_token(app.config["SECRET_KEY"], scope, 600)
    assert [answer(client, token, learner="prof-1").status_code for _ in range(3)] == [201, 201, 201]
    assert answer(client, client_key, learner="ada").status_code == 403


def test_runs_follow_the_rules(app, client, client_key, staff_key, client_id):
    token = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                        json={"learner": "ada", "exercises": [CODE]}).json["token"]

    def run():
        return client.post("/api/v1/runs", headers=bearer(token), json={"code": "x = 1", "exercise": CODE, "wait": 0})

    set_rules(client, staff_key, client_id, CODE, runs=False)
    off = run()
    assert (off.status_code, off.json["type"]) == (403, "/problems/attempt-refused/runs-not-allowed")
    set_rules(client, staff_key, client_id, CODE, max_runs=1)
    assert run().status_code == 202
    spent = run()
    assert (spent.status_code, spent.json["type"]) == (409, "/problems/attempt-refused/no-runs-left")
    # The key itself (a frontend's server) names no learner: nothing to count.
    assert client.post("/api/v1/runs", headers=bearer(client_key),
                       json={"code": "x = 1", "exercise": CODE, "wait": 0}).status_code == 202


def test_a_learner_tokens_free_run_follows_the_rules_of_the_exercises_it_reaches(app, client, client_key, staff_key,
                                                                                 client_id):
    """Issue 33: a free run (its own entry point and inputs, no `exercise`) can try any exercise's
    Function; it passed `runs = false` and a used-up `max_runs`."""
    one = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                      json={"learner": "ada", "exercises": [CODE]}).json["token"]
    several = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                          json={"learner": "ada", "exercises": [CODE, "double-function", QUIZ]}).json["token"]
    free = {"code": "x = 1", "entry_point": "SquareFn", "inputs": [{"name": "x", "shape": [3]}], "wait": 0}

    def run(token, **body):
        return client.post("/api/v1/runs", headers=bearer(token), json={**free, **body})

    set_rules(client, staff_key, client_id, CODE, runs=False)
    off = run(one)
    assert (off.status_code, off.json["type"]) == (403, "/problems/attempt-refused/runs-not-allowed")
    assert off.mimetype == "application/problem+json" and count_rows(app, Run) == 0
    # A token of several code exercises runs while one of them allows runs, counting at none.
    elsewhere = run(several)
    assert elsewhere.status_code == 202 and elsewhere.json["exercise"] is None
    set_rules(client, staff_key, client_id, "double-function", runs=False)
    assert run(several).status_code == 403 and count_rows(app, Run) == 1

    set_rules(client, staff_key, client_id, CODE, max_runs=2)
    counted = run(one)
    assert counted.status_code == 202 and counted.json["exercise"] == CODE
    plain = client.post("/api/v1/runs", headers=bearer(one), json={"code": "print(1)", "wait": 0})
    assert plain.status_code == 202 and plain.json["exercise"] == CODE  # no Function: a run all the same
    spent = run(one)
    assert (spent.status_code, spent.json["type"]) == (409, "/problems/attempt-refused/no-runs-left")
    page_run = client.post("/api/v1/runs", headers=bearer(one), json={"code": "x = 1", "exercise": CODE, "wait": 0})
    assert page_run.status_code == 409  # the free runs spent the exercise's runs
    # The client's key (a frontend's server) is trusted with its learners: its free runs stay free.
    assert client.post("/api/v1/runs", headers=bearer(client_key), json=free).status_code == 202


def test_two_simultaneous_runs_at_the_last_allowed_one_make_one(app, client, client_key, staff_key, client_id,
                                                                 monkeypatch):
    from service.resources import runs

    set_rules(client, staff_key, client_id, CODE, max_runs=1)
    token = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                        json={"learner": "ada", "exercises": [CODE]}).json["token"]
    # Each request waits after reading the standing until the other has read it too (or for a
    # second, when the other cannot read it yet): without a lock both see no run used.
    both_read = threading.Barrier(2)
    read_standing = runs.learner_standing

    def standing_then_wait(*args, **kwargs):
        standing = read_standing(*args, **kwargs)
        try:
            both_read.wait(timeout=1)
        except threading.BrokenBarrierError:
            pass
        return standing

    monkeypatch.setattr(runs, "learner_standing", standing_then_wait)
    statuses: list[int] = []

    def run() -> None:
        statuses.append(app.test_client().post("/api/v1/runs", headers=bearer(token),
                                               json={"code": "x = 1", "exercise": CODE, "wait": 0}).status_code)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [202, 409], statuses


def test_links_are_listed_for_staff(client, staff_key):
    assert client.get("/api/v1/admin/links", headers=bearer(staff_key)).json == []
    assert client.get("/api/v1/admin/links/12345/rules", headers=bearer(staff_key)).status_code == 404



def test_a_code_attempt_graded_by_a_worker_counts_under_its_penalties(app, client, client_key, staff_key, client_id,
                                                                      worker):
    from service.config import PROJECT_ROOT

    reference = (PROJECT_ROOT / "exercises" / "clamp-function" / "reference.py").read_text()
    set_rules(client, staff_key, client_id, "clamp-function", attempt_maxima=[1, 0.6])
    bodies = []
    for _ in range(2):
        queued = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                             json={"learner": "ada", "code": reference})
        assert queued.status_code == 202, queued.json
        bodies.append(client.get(queued.headers["Location"] + "?wait=20", headers=bearer(client_key)).json)
    assert [(b["status"], b["raw_score"], b["score"]) for b in bodies] == [("graded", 1.0, 1.0), ("graded", 1.0, 0.6)]
    assert bodies[1]["penalties"] == [{"reason": "attempt", "factor": 0.6}]


def test_the_scoring_policy_makes_the_grade_of_a_wrong_backward(app, client, client_key, staff_key, client_id, worker):
    """Issue 35: ClampFn whose backward forgets grad_output scored 58%, one that overwrites it in place
    95%. Under the default gate a wrong backward earns at most the forward's weight (0.3); staff's
    rules for the assignment switch the policy to partial credit, or to all or nothing."""
    from service.config import PROJECT_ROOT

    wrong = PROJECT_ROOT / "exercises" / "clamp-function" / "wrong"

    def graded(learner, name):
        queued = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                             json={"learner": learner, "code": (wrong / f"{name}.py").read_text()})
        assert queued.status_code == 202, queued.json
        body = client.get(queued.headers["Location"] + "?wait=30", headers=bearer(client_key)).json
        assert (body["status"], body["correct"]) == ("graded", False), body
        return body

    forgot, inplace = graded("ada", "forgot_grad_output"), graded("ada", "inplace_grad_output")
    assert (forgot["raw_score"], forgot["score"], forgot["report"]["score"]) == (0.3, 0.3, pytest.approx(11 / 19))
    assert forgot["scoring"] == {"policy": "gate", "cap": 0.3, "capped": True, "checks_score": pytest.approx(11 / 19)}
    assert (inplace["raw_score"], inplace["scoring"]["capped"], inplace["scoring"]["checks_score"]) == (
        0.3, True, pytest.approx(18 / 19))

    set_rules(client, staff_key, client_id, "clamp-function", scoring="partial")
    partial = graded("bob", "forgot_grad_output")  # the score it had before policies
    assert (partial["raw_score"], partial["score"]) == (pytest.approx(11 / 19), pytest.approx(11 / 19))
    assert partial["scoring"] == {"policy": "partial", "cap": None, "capped": False,
                                  "checks_score": pytest.approx(11 / 19)}

    set_rules(client, staff_key, client_id, "clamp-function", scoring="all_or_nothing")
    nothing = graded("cy", "forgot_grad_output")
    assert (nothing["raw_score"], nothing["score"], nothing["scoring"]["policy"], nothing["scoring"]["capped"]) == (
        0.0, 0.0, "all_or_nothing", True)
    # Each attempt keeps the policy it was submitted under.
    again = client.get(f"/api/v1/attempts/{forgot['id']}", headers=bearer(client_key)).json
    assert (again["raw_score"], again["scoring"]["policy"]) == (0.3, "gate")


def test_a_quiz_scores_all_or_nothing_and_a_regrade_keeps_the_attempts_policy(app, client, client_key, staff_key,
                                                                              client_id, database_url):
    """A multiple-choice answer with two of the right choices: half credit under partial (and under
    gate: a quiz has no backward), 0 under all_or_nothing; a regrade after the rules changed scores
    it under the policy it was submitted under."""
    slug, half = "gradcheck-what-it-needs", ["finite-differences", "double"]
    set_rules(client, staff_key, client_id, slug, scoring="all_or_nothing")
    strict = answer(client, client_key, choice=half, slug=slug).json
    assert (strict["raw_score"], strict["score"], strict["correct"]) == (0.0, 0.0, False)
    assert strict["scoring"] == {"policy": "all_or_nothing", "cap": None, "capped": True, "checks_score": 0.5}
    client.delete(rules_url(client_id, slug), headers=bearer(staff_key))
    gated = answer(client, client_key, learner="bob", choice=half, slug=slug).json
    assert (gated["raw_score"], gated["scoring"]) == (0.5, {"policy": "gate", "cap": None, "capped": False,
                                                            "checks_score": 0.5})

    regrade = client.post("/api/v1/admin/regrades", headers=bearer(staff_key), json={"attempt": strict["id"]}).json
    grade_regrade_items(database_url)
    ready = client.get(f"/api/v1/admin/regrades/{regrade['id']}", headers=bearer(staff_key)).json
    assert (ready["status"], ready["summary"]) == ("ready", {"up": 0, "down": 0, "unchanged": 1})
    assert client.post(f"/api/v1/admin/regrades/{regrade['id']}/apply", headers=bearer(staff_key)).status_code == 200
    after = client.get(f"/api/v1/attempts/{strict['id']}", headers=bearer(client_key)).json
    assert (after["raw_score"], after["scoring"]["policy"]) == (0.0, "all_or_nothing")
