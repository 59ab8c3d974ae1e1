"""Learner tokens for frontends without an LMS (POST /api/v1/learner-tokens) and their renewal
(POST /api/v1/learner-tokens/refresh): what a token may do, and every way one is refused."""

from __future__ import annotations

import time
from datetime import datetime

import jwt
import pytest
from sqlalchemy import select, update

from service.extensions import db_session
from service.learner_tokens import (
    LEARNER,
    LearnerScope,
    mint_learner_token,
    read_learner_token,
)
from service.models import ApiClient, Attempt
from service.models.base import utcnow
from tests.helpers import bearer, count_rows

QUIZ, OTHER_QUIZ = "backward-none-for-bounds", "squarefn-forward-value"
RIGHT = "none-each"
TOKENS, REFRESH = "/api/v1/learner-tokens", "/api/v1/learner-tokens/refresh"
HOUR = 3600


def issue(client, key, learner="ada", exercises=(QUIZ,)):
    body = {"learner": learner, "exercises": None if exercises is None else list(exercises)}
    return client.post(TOKENS, headers=bearer(key), json=body)


def submit(client, token, slug=QUIZ, **body):
    return client.post(f"/api/v1/exercises/{slug}/attempts", headers=bearer(token), json={"answer": RIGHT, **body})


def _time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _client_id(app, name="lms-one") -> int:
    from sqlalchemy import select

    with app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == name))


def test_a_client_key_issues_a_token_that_acts_for_one_learner_at_its_exercises(app, client, client_key,
                                                                                other_client_key):
    response = issue(client, client_key, exercises=[QUIZ, OTHER_QUIZ])
    assert response.status_code == 200, response.json
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json
    assert (body["learner"], body["exercises"], body["role"], body["token_type"]) == (
        "ada", [QUIZ, OTHER_QUIZ], "learner", "Bearer")
    now = time.time()
    assert body["expires_in"] == HOUR and abs(_time(body["expires_at"]) - (now + HOUR)) < 5
    assert abs(_time(body["session_expires_at"]) - (now + 12 * HOUR)) < 5
    token = body["token"]

    # It submits for its learner (the body may leave `learner` out) at its exercises...
    attempt = submit(client, token)
    assert attempt.status_code == 201 and attempt.json["learner"] == "ada"
    # ...and is refused another learner, another exercise, and every key-only endpoint.
    assert submit(client, token, learner="bob").status_code == 403
    refused = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(token), json={"code": "pass"})
    assert refused.status_code == 403 and refused.content_type == "application/problem+json"
    assert client.get("/api/v1/learners/bob/attempts", headers=bearer(token)).status_code == 403
    assert client.get("/api/v1/learners/ada/attempts?exercise=clamp-function", headers=bearer(token)).status_code == 403
    assert client.get("/api/v1/webhooks", headers=bearer(token)).status_code == 403
    assert issue(client, token).status_code == 403  # a token never issues tokens
    # Its learner is the client's own: the attempt is the client's, not another client's ada.
    history = client.get("/api/v1/learners/ada/attempts", headers=bearer(token)).json
    assert [a["id"] for a in history["attempts"]] == [attempt.json["id"]]
    assert client.get(attempt.headers["Location"], headers=bearer(client_key)).status_code == 200
    assert client.get(attempt.headers["Location"], headers=bearer(other_client_key)).status_code == 404


def test_a_token_for_every_exercise_reads_the_learners_whole_history(client, client_key):
    one = submit(client, issue(client, client_key, exercises=[QUIZ]).json["token"])
    assert one.status_code == 201
    everywhere = issue(client, client_key, exercises=None)
    assert everywhere.status_code == 200 and everywhere.json["exercises"] is None
    token = everywhere.json["token"]
    other = client.post(f"/api/v1/exercises/{OTHER_QUIZ}/attempts", headers=bearer(token),
                        json={"answer": 1.0})
    assert other.status_code == 201, other.json
    history = client.get("/api/v1/learners/ada/attempts", headers=bearer(token)).json
    assert {a["exercise"] for a in history["attempts"]} == {QUIZ, OTHER_QUIZ}
    # A token for one exercise sees the history there only.
    scoped = issue(client, client_key, exercises=[QUIZ]).json["token"]
    history = client.get("/api/v1/learners/ada/attempts", headers=bearer(scoped)).json
    assert [a["exercise"] for a in history["attempts"]] == [QUIZ]
    assert [b["exercise"] for b in history["best_scores"]] == [QUIZ]
    assert client.get(other.headers["Location"], headers=bearer(scoped)).status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"exercises": [QUIZ]}, "json.learner"),
    ({"learner": "ada"}, "json.exercises"),  # 'every exercise' must be said: null
    ({"learner": "ada", "exercises": []}, "json.exercises"),
    ({"learner": "ada", "exercises": [QUIZ, "no-such-exercise"]}, "json.exercises[1]"),
    ({"learner": "ada", "exercises": [QUIZ, QUIZ]}, "json.exercises"),
    ({"learner": "ada", "exercises": ["Not A Slug"]}, "json.exercises"),
    ({"learner": "ada", "exercises": [f"e{i:03d}" for i in range(51)]}, "json.exercises"),
    ({"learner": "a/b", "exercises": [QUIZ]}, "json.learner"),
    ({"learner": "ada\n", "exercises": [QUIZ]}, "json.learner"),
    ({"learner": "", "exercises": [QUIZ]}, "json.learner"),
    ({"learner": "ada", "exercises": [QUIZ], "role": "instructor"}, "json.role"),
])
def test_bad_requests_for_a_token_are_refused_naming_the_field(client, client_key, body, field):
    response = client.post(TOKENS, headers=bearer(client_key), json=body)
    assert response.status_code == 422, response.json
    assert response.content_type == "application/problem+json"
    assert any(e["field"].startswith(field) for e in response.json["errors"]), response.json
    assert "token" not in response.json


def test_an_unpublished_exercise_gets_no_token(client, client_key, admin_key):
    assert client.post(f"/api/v1/admin/exercises/{OTHER_QUIZ}/unpublish", headers=bearer(admin_key)).status_code == 200
    response = issue(client, client_key, exercises=[OTHER_QUIZ])
    assert response.status_code == 422 and response.json["errors"][0]["field"] == "json.exercises[0]"


def test_issuing_needs_a_valid_key(client, client_key):
    assert client.post(TOKENS, json={"learner": "ada", "exercises": None}).status_code == 401
    assert issue(client, "gq_" + "x" * 43).status_code == 401


def test_refresh_gives_a_fresh_token_with_the_same_scope_and_session(app, client, client_key):
    first = issue(client, client_key, exercises=[QUIZ]).json
    renewed = client.post(REFRESH, headers=bearer(first["token"]))
    assert renewed.status_code == 200, renewed.json
    assert renewed.headers["Cache-Control"] == "no-store"
    body = renewed.json
    assert body["token"] != first["token"]
    assert (body["learner"], body["exercises"], body["role"]) == ("ada", [QUIZ], "learner")
    assert body["session_expires_at"] == first["session_expires_at"]  # the session does not restart
    assert _time(body["expires_at"]) >= _time(first["expires_at"])
    assert submit(client, body["token"]).status_code == 201
    assert submit(client, body["token"], slug=OTHER_QUIZ, answer=1.0).status_code == 403
    # Renewing the renewed token keeps the first session's start.
    again = client.post(REFRESH, headers=bearer(body["token"])).json
    assert again["session_expires_at"] == first["session_expires_at"]
    secret = app.config["SECRET_KEY"]
    assert read_learner_token(secret, again["token"]).session_started == \
        read_learner_token(secret, first["token"]).session_started


def test_a_renewed_token_never_outlives_its_session(app, client, client_key):
    # A session that began 12 hours minus 100 seconds ago: a renewal is good for 100 seconds.
    now = int(time.time())
    scope = LearnerScope(_client_id(app), "ada", [QUIZ], LEARNER, session_started=now - 12 * HOUR + 100)
    token = mint_learner_token(app.config["SECRET_KEY"], scope, 60, 24 * HOUR).token
    body = client.post(REFRESH, headers=bearer(token)).json
    assert 95 <= body["expires_in"] <= 100
    assert abs(_time(body["session_expires_at"]) - (now + 100)) < 2


def _problem_401(response) -> dict:
    assert response.status_code == 401, response.get_data(as_text=True)
    assert response.content_type == "application/problem+json"
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    return response.json


def test_after_the_maximum_session_age_a_token_is_not_renewed(app, client, client_key):
    scope = LearnerScope(_client_id(app), "ada", [QUIZ], LEARNER, session_started=int(time.time()) - 12 * HOUR - 1)
    # Still valid (made with a longer session limit than this service's): it works, but is not renewed.
    token = mint_learner_token(app.config["SECRET_KEY"], scope, 600, 24 * HOUR).token
    assert submit(client, token).status_code == 201
    problem = _problem_401(client.post(REFRESH, headers=bearer(token)))
    assert "session is over" in problem["detail"]


def test_expired_foreign_and_broken_tokens_are_not_renewed(app, client, client_key):
    secret, cid = app.config["SECRET_KEY"], _client_id(app)
    scope = LearnerScope(cid, "ada", [QUIZ], LEARNER)
    expired = mint_learner_token(secret, scope, 600, now=int(time.time()) - 700).token  # expired 100 s ago
    foreign = mint_learner_token("another deployment's SECRET_KEY, not ours", scope, 600).token
    unsigned = jwt.encode({"iss": "gradquiz", "aud": "gradquiz-api", "sub": "ada", "cid": cid, "role": "learner",
                           "exercises": None, "iat": int(time.time()), "exp": int(time.time()) + 600}, None,
                          algorithm="none")
    for token in (expired, foreign, unsigned, "not-a-token", "a.b.c"):
        _problem_401(client.post(REFRESH, headers=bearer(token)))
    # A key is not a token to renew; no credential at all is a 401.
    refused = client.post(REFRESH, headers=bearer(client_key))
    assert refused.status_code == 403 and refused.content_type == "application/problem+json"
    assert client.post(REFRESH).status_code == 401


def test_a_revoked_client_revokes_its_tokens_and_their_renewal(app, client, client_key):
    token = issue(client, client_key).json["token"]
    with app.app_context():
        db_session().execute(update(ApiClient).where(ApiClient.name == "lms-one").values(revoked_at=utcnow()))
        db_session().commit()
    _problem_401(client.post(REFRESH, headers=bearer(token)))
    assert submit(client, token).status_code == 401
    assert count_rows(app, Attempt) == 0


def test_a_token_from_before_several_exercises_still_works(app, client, client_key):
    """Tokens issued before this change name one `exercise` and no session start."""
    secret, now = app.config["SECRET_KEY"], int(time.time())
    from service.learner_tokens import _token_key

    old = jwt.encode({"iss": "gradquiz", "aud": "gradquiz-api", "iat": now, "exp": now + 600, "sub": "ada",
                      "cid": _client_id(app), "exercise": QUIZ, "role": "learner", "link": None},
                     _token_key(secret), algorithm="HS256")
    scope = read_learner_token(secret, old)
    assert scope.exercises == (QUIZ,) and scope.session_started == now
    assert submit(client, old).status_code == 201
    assert submit(client, old, slug=OTHER_QUIZ, answer=1.0).status_code == 403
    # A token naming no exercise in any form is no token: never "every exercise" by omission.
    bare = jwt.encode({"iss": "gradquiz", "aud": "gradquiz-api", "iat": now, "exp": now + 600, "sub": "ada",
                       "cid": _client_id(app), "role": "learner"}, _token_key(secret), algorithm="HS256")
    assert read_learner_token(secret, bare) is None
    assert submit(client, bare).status_code == 401


def test_the_scope_needs_its_exercises_said():
    with pytest.raises(TypeError):
        LearnerScope(1, "ada")
    assert LearnerScope(1, "ada", exercise=QUIZ).exercises == (QUIZ,)
    assert LearnerScope(1, "ada", QUIZ).exercises == (QUIZ,)
    assert LearnerScope(1, "ada", None).allows("anything")
    assert not LearnerScope(1, "ada", [QUIZ]).allows(OTHER_QUIZ)


def _client_ids(app) -> dict[str, int]:
    with app.app_context():
        return dict(db_session().execute(select(ApiClient.name, ApiClient.id)).all())


def test_an_admin_keys_token_belongs_to_the_client_it_names_and_reads_that_clients_data_alone(
        app, client, client_key, other_client_key, admin_key):
    """Issue 33: a token minted with an admin key was of the admin's client, which reads every
    client's attempts and runs: it read another client's attempt and run by id."""
    ids = _client_ids(app)
    theirs = submit(client, issue(client, other_client_key).json["token"])
    their_run = client.post("/api/v1/runs", headers=bearer(issue(client, other_client_key, exercises=None).json["token"]),
                            json={"code": "print(1)", "wait": 0})
    assert theirs.status_code == 201 and their_run.status_code == 202

    unnamed = issue(client, admin_key)
    assert unnamed.status_code == 422 and unnamed.json["errors"][0]["field"] == "json.client"
    for named in (ids["admin"], 999_999):  # an admin client, or none: no client of learners
        refused = client.post(TOKENS, headers=bearer(admin_key), json={"learner": "ada", "exercises": None,
                                                                        "client": named})
        assert refused.status_code == 422 and refused.json["errors"][0]["field"] == "json.client"
    # A client's own key names no other client.
    foreign = client.post(TOKENS, headers=bearer(client_key), json={"learner": "ada", "exercises": None,
                                                                     "client": ids["lms-two"]})
    assert foreign.status_code == 422 and foreign.json["errors"][0]["field"] == "json.client"

    made = client.post(TOKENS, headers=bearer(admin_key), json={"learner": "ada", "exercises": None,
                                                                 "client": ids["lms-one"]})
    assert made.status_code == 200, made.json
    token = made.json["token"]
    assert read_learner_token(app.config["SECRET_KEY"], token).client_id == ids["lms-one"]
    own = submit(client, token)
    assert own.status_code == 201
    assert client.get(f"/api/v1/attempts/{own.json['id']}", headers=bearer(client_key)).status_code == 200
    for path in (f"/api/v1/attempts/{theirs.json['id']}", their_run.headers["Location"]):
        refused = client.get(path, headers=bearer(token))
        assert refused.status_code == 404 and refused.mimetype == "application/problem+json", path
    # A token of the admin's own client (issued before this rule) is no longer valid anywhere.
    old = mint_learner_token(app.config["SECRET_KEY"], LearnerScope(ids["admin"], "ada", None), HOUR).token
    for path in (f"/api/v1/attempts/{theirs.json['id']}", their_run.headers["Location"], "/api/v1/learners/ada/attempts"):
        refused = client.get(path, headers=bearer(old))
        assert refused.status_code == 401 and refused.mimetype == "application/problem+json", path


def test_a_verified_token_is_kept_until_its_exp_and_only_its_own_bytes_are_found(app, client, client_key):
    from service.learner_tokens import VerifiedTokens

    token = issue(client, client_key).json["token"]
    expires = jwt.decode(token, options={"verify_signature": False})["exp"]
    tokens: VerifiedTokens = app.extensions["gradquiz.learner_tokens"]
    assert submit(client, token).status_code == 201
    assert tokens.entries[token][0].learner == "ada"  # verified once, kept
    # Another signature on the same claims is not the kept token: verified, and refused.
    head, claims, signature = token.split(".")
    forged = ".".join((head, claims, ("A" if signature[0] != "A" else "B") + signature[1:]))
    assert submit(client, forged).status_code == 401 and forged not in tokens.entries
    # At its exp the kept token is refused as jwt.decode would refuse it, and dropped.
    tokens.clock = lambda: expires
    response = submit(client, token)
    assert response.status_code == 401 and "not valid" in response.json["detail"]
    assert token not in tokens.entries
    tokens.clock = lambda: expires - 1
    assert submit(client, token).status_code == 201  # verified again (jwt's own clock: still valid)


def test_the_verified_tokens_are_bounded():
    from service.learner_tokens import VerifiedTokens

    secret = "s" * 32
    tokens = VerifiedTokens(secret, max_entries=2)
    minted = [issue_for(secret, learner) for learner in ("ada", "grace", "lin")]
    assert [tokens.read(t).learner for t in minted] == ["ada", "grace", "lin"]
    assert list(tokens.entries) == [minted[2]]  # full at the third: it started again
    assert tokens.read("not.a.token") is None and len(tokens.entries) == 1


def issue_for(secret: str, learner: str) -> str:
    return mint_learner_token(secret, LearnerScope(1, learner, exercises=None), 600).token
