"""GET /api/v1/progress: a learner token's learner at every exercise it may see (issue 35)."""

from __future__ import annotations

from service.config import PROJECT_ROOT
from tests.helpers import add_course_exercise, bearer

QUIZ = "backward-none-for-bounds"  # single choice; "none-each" is right
RIGHT, WRONG = "none-each", "zero-number"
CODE = "clamp-function"
REFERENCE = (PROJECT_ROOT / "exercises" / CODE / "reference.py").read_text()


def _token(client, key: str, learner: str = "ada", exercises=None, course: str | None = None) -> dict[str, str]:
    body = {"learner": learner, "exercises": exercises, **({"course": course} if course else {})}
    issued = client.post("/api/v1/learner-tokens", headers=bearer(key), json=body)
    assert issued.status_code == 200, issued.json
    return bearer(issued.json["token"])


def _states(client, headers) -> dict[str, tuple[str, float | None]]:
    response = client.get("/api/v1/progress", headers=headers)
    assert response.status_code == 200, response.json
    assert response.headers["Cache-Control"] == "private, no-store"
    return {row["slug"]: (row["state"], row["best_score"]) for row in response.json["exercises"]}


def test_passed_tried_and_not_started_with_the_best_score(client, client_key):
    ada = _token(client, client_key)
    for answer in (WRONG, RIGHT, WRONG):  # a pass between two failures: passed, best 1
        assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=ada, json={"answer": answer}).status_code == 201
    # Code queued (no worker here): tried, nothing graded yet.
    assert client.post(f"/api/v1/exercises/{CODE}/attempts", headers=ada, json={"code": REFERENCE}).status_code == 202
    bob = _token(client, client_key, "bob")  # ada's attempts are not his

    response = client.get("/api/v1/progress", headers=ada)
    assert response.json["learner"] == "ada"
    slugs = [row["slug"] for row in response.json["exercises"]]
    catalog = [e["slug"] for e in client.get("/api/v1/exercises?page_size=100").json]
    assert slugs == catalog  # every published exercise of the catalog, in its order
    states = _states(client, ada)
    assert states[QUIZ] == ("passed", 1.0)
    assert states[CODE] == ("tried", None)
    assert states["double-function"] == ("not_started", None)
    assert _states(client, bob)[QUIZ] == ("not_started", None)


def test_a_wrong_graded_answer_is_tried_with_its_score(client, client_key):
    ada = _token(client, client_key)
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=ada, json={"answer": WRONG}).json["score"] == 0.0
    assert _states(client, ada)[QUIZ] == ("tried", 0.0)


def test_the_tokens_exercises_and_course_bound_what_it_lists(app, client, client_key, other_client_key):
    scoped = _token(client, client_key, exercises=[QUIZ, CODE])
    assert set(_states(client, scoped)) == {QUIZ, CODE}
    # A course's own exercise: listed to a token of that course alone, with its attempts there.
    course = client.post("/api/v1/courses", headers=bearer(client_key), json={"external_id": "x", "title": "X"}).json["id"]
    add_course_exercise(app, course, "x-own-quiz", QUIZ)
    in_course = _token(client, client_key, course="x")
    assert client.post("/api/v1/exercises/x-own-quiz/attempts", headers=in_course, json={"answer": RIGHT}).status_code == 201
    assert _states(client, in_course)["x-own-quiz"] == ("passed", 1.0)
    assert "x-own-quiz" not in _states(client, _token(client, client_key))
    # Learner ids belong to a client: B's ada has done nothing.
    assert "x-own-quiz" not in _states(client, _token(client, other_client_key))
    assert _states(client, _token(client, other_client_key))[QUIZ] == ("not_started", None)


def test_no_token_is_401_and_a_key_is_403_as_problems(client, client_key):
    for headers, status in (({}, 401), (bearer("gq_not-a-key"), 401), (bearer(client_key), 403)):
        response = client.get("/api/v1/progress", headers=headers)
        assert response.status_code == status and response.mimetype == "application/problem+json", response.json
