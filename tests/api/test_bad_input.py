"""Bad input gets a clear 4xx problem+json, and nothing is written."""

from datetime import UTC

import pytest

from service.models import Attempt, IdempotencyRecord
from tests.helpers import bearer, count_rows

URL = "/api/v1/exercises/backward-none-for-bounds/attempts"
NUMERIC_URL = "/api/v1/exercises/clampfn-gradient-vector/attempts"


def assert_problem(response, status, field=None):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.content_type == "application/problem+json"
    body = response.json
    assert body["status"] == status and body["title"] and body["type"]
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body
    return body


@pytest.fixture
def nothing_written(app):
    yield
    assert count_rows(app, Attempt) == 0
    assert count_rows(app, IdempotencyRecord) == 0


@pytest.mark.usefixtures("nothing_written")
class TestNothingIsWritten:
    def test_malformed_json(self, client, client_key):
        response = client.post(URL, data='{"learner": "ada", "answer": ', headers={
            **bearer(client_key), "Content-Type": "application/json"})
        assert_problem(response, 400)

    def test_not_json(self, client, client_key):
        response = client.post(URL, data="learner=ada&answer=x", headers={
            **bearer(client_key), "Content-Type": "application/x-www-form-urlencoded"})
        body = assert_problem(response, 415)
        assert "application/json" in body["detail"]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"answer": "none-each"}, "json.learner"),
            ({"learner": 7, "answer": "none-each"}, "json.learner"),
            ({"learner": "", "answer": "none-each"}, "json.learner"),
            ({"learner": "a/b", "answer": "none-each"}, "json.learner"),
            ({"learner": "x" * 256, "answer": "none-each"}, "json.learner"),
            ({"learner": "ada", "answer": "none-each", "score": 1.0}, "json.score"),
            ({"learner": "ada", "answer": None}, "json.answer"),
            ([{"learner": "ada"}], "json.(body)"),
            ("just a string", "json.(body)"),
        ],
    )
    def test_wrong_types_and_unknown_fields(self, client, client_key, body, field):
        assert_problem(client.post(URL, json=body, headers=bearer(client_key)), 422, field)

    @pytest.mark.parametrize(
        ("url", "answer"),
        [(URL, ["none-each"]), (URL, "no-such-choice"), (URL, 1), (NUMERIC_URL, [0, 1, 1]),
         (NUMERIC_URL, "0, 1, 1, 0"), (NUMERIC_URL, [0, 1, True, 0])],
    )
    def test_answer_of_the_wrong_shape_for_the_kind(self, client, client_key, url, answer):
        body = assert_problem(client.post(url, json={"learner": "ada", "answer": answer}, headers=bearer(client_key)),
                              422, "json.answer")
        assert body["type"] == "/problems/invalid-answer"

    def test_missing_answer(self, client, client_key):
        assert_problem(client.post(URL, json={"learner": "ada"}, headers=bearer(client_key)), 422, "json.answer")

    def test_code_for_a_quiz(self, client, client_key):
        response = client.post(URL, json={"learner": "ada", "code": "print(1)"}, headers=bearer(client_key))
        assert_problem(response, 422, "json.code")

    def test_unknown_exercise(self, client, client_key):
        response = client.post("/api/v1/exercises/no-such/attempts", json={"learner": "ada", "answer": "a"},
                               headers=bearer(client_key))
        assert_problem(response, 404)

    def test_body_over_the_size_limit(self, make_app, client_key):
        small = make_app(max_request_bytes=1024).test_client()
        response = small.post(URL, json={"learner": "ada", "answer": "x" * 2000}, headers=bearer(client_key))
        assert_problem(response, 413)

    @pytest.mark.parametrize(
        "headers",
        [{}, {"Authorization": "Bearer"}, {"Authorization": "Basic dXNlcjpwYXNz"},
         {"Authorization": "Bearer gq_not-a-real-key"}],
    )
    def test_missing_or_wrong_key(self, client, headers):
        response = client.post(URL, json={"learner": "ada", "answer": "none-each"}, headers=headers)
        assert_problem(response, 401)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")

    def test_key_is_checked_before_the_body(self, client):
        response = client.post(URL, data="{", headers={"Content-Type": "application/json"})
        assert_problem(response, 401)


def test_revoked_key_is_refused(app, client, client_key):
    from datetime import datetime

    from service.extensions import db_session
    from service.models import ApiClient

    with app.app_context():
        db_session().query(ApiClient).update({"revoked_at": datetime.now(UTC)})
        db_session().commit()
    assert_problem(client.get("/api/v1/learners/ada/attempts", headers=bearer(client_key)), 401)


@pytest.mark.parametrize("path", ["/api/v1/attempts/00000000-0000-4000-8000-000000000000", "/api/v1/learners/ada/attempts"])
def test_reading_attempts_needs_a_key(client, path):
    assert_problem(client.get(path), 401)
