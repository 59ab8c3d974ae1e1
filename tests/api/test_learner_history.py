"""The learner history's attempts as written and as the rules show them now: its page is read as
rows and, on PostgreSQL, an attempt's dump is kept per version of its row (issue 37)."""

from __future__ import annotations

import uuid

from sqlalchemy import update

from service.extensions import db_session
from service.models import Attempt
from tests.api.test_rules import QUIZ, RIGHT, WRONG, answer, client_id, set_rules, staff_key
from tests.helpers import bearer

__all__ = ["client_id", "staff_key"]  # fixtures of test_rules, used here

HISTORY = f"/api/v1/learners/ada/attempts?exercise={QUIZ}"


def history(client, key) -> list[dict]:
    response = client.get(HISTORY, headers=bearer(key))
    assert response.status_code == 200, response.json
    return response.json["attempts"]


def test_an_attempt_written_since_the_last_read_shows_as_written_and_a_new_one_shows(app, client, client_key):
    first = answer(client, client_key, choice=WRONG).json
    assert [(a["id"], a["score"]) for a in history(client, client_key)] == [(first["id"], 0.0)]
    assert [(a["id"], a["score"]) for a in history(client, client_key)] == [(first["id"], 0.0)]  # read again
    # Written behind the process's back (another worker, a grading worker, an instructor).
    with app.app_context():
        session = db_session()
        session.execute(update(Attempt).where(Attempt.id == uuid.UUID(first["id"])).values(score=0.25))
        session.commit()
    assert [(a["id"], a["score"]) for a in history(client, client_key)] == [(first["id"], 0.25)]
    second = answer(client, client_key, choice=RIGHT).json
    assert [(a["id"], a["score"]) for a in history(client, client_key)] == [(second["id"], 1.0), (first["id"], 0.25)]


def test_an_unchanged_attempt_shows_its_explanation_as_the_rules_say_now(client, client_key, staff_key, client_id):
    set_rules(client, staff_key, client_id, show_explanation="after_pass")
    wrong = answer(client, client_key, choice=WRONG).json
    (listed,) = history(client, client_key)
    assert listed["id"] == wrong["id"] and listed["explanation"] is None
    assert [f["choice"] for f in listed["feedback"]] == [WRONG]  # the missed right choice is not named
    set_rules(client, staff_key, client_id, show_explanation="always")  # the attempt's row is not written
    (listed,) = history(client, client_key)
    assert listed["explanation"] is not None and RIGHT in {f["choice"] for f in listed["feedback"]}
    set_rules(client, staff_key, client_id, show_explanation="after_pass")
    (listed,) = history(client, client_key)
    assert listed["explanation"] is None and [f["choice"] for f in listed["feedback"]] == [WRONG]


def test_learner_tokens_of_one_shape_share_the_historys_statements_and_each_reads_its_own(app, client, client_key):
    from service.database import window_of_built_once
    from service.services.attempts import _best_scores_select, _learner_attempts_select

    def token(learner: str) -> str:
        response = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                               json={"learner": learner, "exercises": [QUIZ]})
        assert response.status_code == 200, response.json
        return response.json["token"]

    mine = {learner: answer(client, client_key, learner=learner, choice=choice).json["id"]
            for learner, choice in (("ada", WRONG), ("grace", RIGHT))}
    tokens = {learner: token(learner) for learner in mine}
    read = {learner: client.get(f"/api/v1/learners/{learner}/attempts", headers=bearer(tokens[learner])).json
            for learner in mine}  # the first builds the statements of this shape
    built = _learner_attempts_select.cache_info().misses, _best_scores_select.cache_info().misses
    pages = window_of_built_once.cache_info().hits
    # The same statements, each learner's values: each reads their own attempt alone.
    for learner in ("grace", "ada", "grace"):
        body = client.get(f"/api/v1/learners/{learner}/attempts", headers=bearer(tokens[learner])).json
        assert body == read[learner] and [a["id"] for a in body["attempts"]] == [mine[learner]]
        assert [b["attempts"] for b in body["best_scores"]] == [1]
    assert (_learner_attempts_select.cache_info().misses, _best_scores_select.cache_info().misses) == built
    assert window_of_built_once.cache_info().hits == pages + 3  # the page's statement too, once per shape
