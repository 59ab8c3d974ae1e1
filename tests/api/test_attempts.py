"""Submitting quiz attempts, reading them back, idempotent retries."""

import json
import threading

import pytest

from service.models import Attempt, IdempotencyRecord
from tests.helpers import bearer, correct_answer, count_rows

SLUG = "backward-none-for-bounds"


def post(client, key, slug=SLUG, headers=None, **body):
    return client.post(f"/api/v1/exercises/{slug}/attempts", json=body, headers={**bearer(key), **(headers or {})})


def test_every_quiz_kind_is_graded_and_stored(app, client, client_key, quiz_catalog):
    for slug, spec in quiz_catalog.items():
        response = post(client, client_key, slug, learner="ada", answer=correct_answer(spec))
        assert response.status_code == 201, (slug, response.json)
        body = response.json
        assert (body["score"], body["correct"], body["status"]) == (1.0, True, "graded"), slug
        assert body["explanation"] == spec["explanation"]
        assert response.headers["Location"] == f"/api/v1/attempts/{body['id']}"
        stored = client.get(response.headers["Location"], headers=bearer(client_key))
        assert stored.status_code == 200 and stored.json == body
    assert count_rows(app, Attempt) == len(quiz_catalog)


def test_wrong_choice_gets_its_misconception(client, client_key, quiz_catalog):
    spec = quiz_catalog[SLUG]
    wrong = next(c for c in spec["choices"] if not c["correct"])
    body = post(client, client_key, learner="ada", answer=wrong["id"]).json
    assert body["score"] == 0.0 and body["correct"] is False
    picked = next(f for f in body["feedback"] if f["selected"])
    assert picked["feedback"] == wrong["feedback"]
    assert body["exercise"] == SLUG and body["exercise_version"] == 1 and body["learner"] == "ada"


def test_a_client_sees_only_its_own_learners(client, client_key, other_client_key, admin_key):
    location = post(client, client_key, learner="ada", answer="x-not-a-choice")
    assert location.status_code == 422
    created = post(client, client_key, learner="ada", answer=correct_answer_for(client))
    url = created.headers["Location"]
    assert client.get(url, headers=bearer(other_client_key)).status_code == 404
    assert client.get(url, headers=bearer(admin_key)).status_code == 200
    # The same learner id under another client is another learner.
    history = client.get("/api/v1/learners/ada/attempts", headers=bearer(other_client_key)).json
    assert history["attempts"] == [] and history["best_scores"] == []


def correct_answer_for(client, slug=SLUG):
    body = client.get(f"/api/v1/exercises/{slug}").json
    return body["choices"][0]["id"]


def test_unknown_attempt_and_malformed_id(client, client_key):
    assert client.get("/api/v1/attempts/00000000-0000-4000-8000-000000000000", headers=bearer(client_key)).status_code == 404
    response = client.get("/api/v1/attempts/not-a-uuid", headers=bearer(client_key))
    assert response.status_code == 404 and response.content_type == "application/problem+json"


def test_learner_history_newest_first_with_best_scores(client, client_key, quiz_catalog):
    spec = quiz_catalog[SLUG]
    wrong = next(c["id"] for c in spec["choices"] if not c["correct"])
    ids = [post(client, client_key, learner="ada", answer=a).json["id"]
           for a in (wrong, correct_answer(spec), wrong)]
    other = next(s for s, e in quiz_catalog.items() if e["kind"] == "numeric")
    other_id = post(client, client_key, other, learner="ada", answer=correct_answer(quiz_catalog[other])).json["id"]
    post(client, client_key, learner="bob", answer=wrong)

    response = client.get("/api/v1/learners/ada/attempts?page_size=2", headers=bearer(client_key))
    assert response.status_code == 200
    body = response.json
    assert [a["id"] for a in body["attempts"]] == [other_id, ids[2]]
    assert json.loads(response.headers["X-Pagination"])["total"] == 4
    best = {b["exercise"]: b for b in body["best_scores"]}
    assert best[SLUG] == {"exercise": SLUG, "attempts": 3, "best_score": 1.0, "passed": True}
    assert best[other]["attempts"] == 1

    filtered = client.get(f"/api/v1/learners/ada/attempts?exercise={SLUG}", headers=bearer(client_key)).json
    assert [a["id"] for a in filtered["attempts"]] == ids[::-1]
    assert [b["exercise"] for b in filtered["best_scores"]] == [SLUG]
    missing = client.get("/api/v1/learners/ada/attempts?exercise=nope", headers=bearer(client_key))
    assert missing.status_code == 404


def test_idempotent_retry_returns_the_first_answer_and_stores_nothing(app, client, client_key):
    headers = {"Idempotency-Key": "retry-1"}
    first = post(client, client_key, headers=headers, learner="ada", answer="none-each")
    again = post(client, client_key, headers=headers, learner="ada", answer="none-each")
    assert first.status_code == again.status_code == 201
    assert again.json == first.json
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert count_rows(app, Attempt) == 1


def test_same_key_with_another_body_is_refused(app, client, client_key, other_client_key):
    headers = {"Idempotency-Key": "retry-2"}
    post(client, client_key, headers=headers, learner="ada", answer="none-each")
    reused = post(client, client_key, headers=headers, learner="ada", answer="zero-number")
    assert reused.status_code == 422
    assert reused.content_type == "application/problem+json"
    assert reused.json["type"] == "/problems/idempotency-key-reused"
    # Keys are scoped per client: another client may use the same key.
    assert post(client, other_client_key, headers=headers, learner="ada", answer="zero-number").status_code == 201
    assert count_rows(app, Attempt) == 2


def test_a_failed_request_does_not_use_up_its_key(app, client, client_key):
    headers = {"Idempotency-Key": "retry-3"}
    assert post(client, client_key, headers=headers, learner="ada", answer=["none-each"]).status_code == 422
    assert count_rows(app, IdempotencyRecord) == 0
    assert post(client, client_key, headers=headers, learner="ada", answer="none-each").status_code == 201


@pytest.mark.parametrize("key", ["", "x" * 256, "with space", "tab\tkey"])
def test_malformed_idempotency_key(app, client, client_key, key):
    response = post(client, client_key, headers={"Idempotency-Key": key}, learner="ada", answer="none-each")
    assert response.status_code == 400 and response.content_type == "application/problem+json"
    assert count_rows(app, Attempt) == 0


def test_concurrent_retries_store_one_attempt(app, database_url, client_key):
    # Two requests with one key racing: one attempt, both answered with it.
    results = []

    def submit():
        with app.test_client() as c:
            results.append(post(c, client_key, headers={"Idempotency-Key": "race"}, learner="ada", answer="none-each"))

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in results] == [201] * 4
    assert len({r.json["id"] for r in results}) == 1
    assert count_rows(app, Attempt) == 1
