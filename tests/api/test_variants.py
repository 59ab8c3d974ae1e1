"""A variant per learner through the API, on SQLite and PostgreSQL: the exercise detail in the
learner's variant (a learner token, or an API key and ?learner=), never in the shared cache;
quiz answers graded in it; numeric parameters kept with the attempt for its display and a regrade;
code graded and regraded on the learner's own hidden inputs; the learner's page in their variant."""

from __future__ import annotations

import json
import math
import re
import shutil
import tomllib
import uuid

import pytest
from sqlalchemy import select

from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.learn import render_exercise_page
from service.learner_tokens import INSTRUCTOR, LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient, Attempt, RegradeItem, Role
from service.variants import choice_order, draw_params, variant_key
from tests.api.support import grade_regrade_items
from tests.helpers import bearer

SOURCE = PROJECT_ROOT / "exercises"
MULTI = "apply-call-forms"          # multiple_choice, shuffled (the default)
SINGLE = "backward-none-for-bounds"  # single_choice
CODE = "clamp-function"
SQUARE = "squarefn-gradient-at-x"    # numeric with [params], made by the `square` fixture
LEARNERS = [f"learner-{k}" for k in range(12)]

SQUARE_TOML = '''title = "SquareFn: the gradient at x"
kind = "numeric"
prompt = """SquareFn's gradient at x = {x}, with grad_output {g}: what is `x.grad`?"""
topics = ["backward"]
difficulty = 2
hints = ["The derivative of x² at {x} is 2 × {x}."]
explanation = "Backward returns grad_output * 2 * x."

[params]
x = { min = 1, max = 9 }
g = { values = [1.0, 3.0] }

[answer]
value = "2 * x * g"
tolerance = 1e-6

[[answer.wrong]]
value = "x * x * g"
feedback = "That is the forward value at x = {x}, not its derivative."
'''


def client_id(app, name="lms-one") -> int:
    with app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == name))


def secret(app) -> str:
    return app.config["SECRET_KEY"]


def spec_of(slug: str) -> dict:
    exercises, _ = load_catalog(SOURCE)
    return next(e.spec for e in exercises if e.slug == slug)


def token(app, learner: str, exercises, role: str = LEARNER, client_name: str = "lms-one") -> str:
    scope = LearnerScope(client_id=client_id(app, client_name), learner=learner, exercises=exercises, role=role)
    return issue_learner_token(secret(app), scope, 600)


@pytest.fixture
def square(app, tmp_path):
    """The catalog plus a numeric item with parameters x and g."""
    root = tmp_path / "exercises"
    (root / SQUARE).mkdir(parents=True)
    (root / SQUARE / "exercise.toml").write_text(SQUARE_TOML)
    exercises, problems = load_catalog(root)
    assert not problems, problems
    with app.app_context():
        sync_catalog(db_session(), exercises, unpublish_missing=False)
        db_session().commit()
    return root


def version_digest(app, slug: str) -> str:
    from service.models import Exercise

    with app.app_context():
        return db_session().scalar(select(Exercise).where(Exercise.slug == slug)).version.digest


def drawn(app, slug: str, learner: str, cid: int) -> dict:
    """The parameters `learner` of client `cid` is drawn at the current version of `slug`."""
    spec = tomllib.loads(SQUARE_TOML) if slug == SQUARE else spec_of(slug)
    params = draw_params(secret(app), variant_key(cid, learner), slug, version_digest(app, slug), spec)
    assert params is not None
    return params


# --- the exercise detail -------------------------------------------------------------------------


def test_without_credentials_the_detail_is_the_shared_one(client):
    response = client.get(f"/api/v1/exercises/{MULTI}")
    assert response.status_code == 200
    body = response.json
    assert "learner" not in body and body["per_learner"] is True
    assert [c["id"] for c in body["choices"]] == [c["id"] for c in spec_of(MULTI)["choices"]]
    assert "Authorization" in response.headers["Vary"] and "private" not in response.headers.get("Cache-Control", "")
    assert client.get(f"/api/v1/exercises/{CODE}").json["per_learner"] is False


def test_an_api_key_and_a_learner_get_the_learners_order_stably(app, client, client_key):
    cid = client_id(app)
    orders = {}
    for learner in LEARNERS:
        response = client.get(f"/api/v1/exercises/{MULTI}?learner={learner}", headers=bearer(client_key))
        assert response.status_code == 200, response.json
        assert response.headers["Cache-Control"] == "private, no-store"
        assert "Authorization" in response.headers["Vary"]
        body = response.json
        assert body["learner"] == learner
        orders[learner] = [c["id"] for c in body["choices"]]
        assert tuple(orders[learner]) == choice_order(secret(app), variant_key(cid, learner), MULTI, spec_of(MULTI))
    assert len({tuple(order) for order in orders.values()}) > 1  # some pair of learners differs
    again = client.get(f"/api/v1/exercises/{MULTI}?learner={LEARNERS[0]}", headers=bearer(client_key)).json
    assert [c["id"] for c in again["choices"]] == orders[LEARNERS[0]]
    # An API key without ?learner= reads the shared detail.
    shared = client.get(f"/api/v1/exercises/{MULTI}", headers=bearer(client_key)).json
    assert "learner" not in shared


def test_a_learners_variant_never_enters_the_shared_cache(make_app, client_key_for):
    from tests.conftest import EXERCISES_DIR

    app = make_app(exercise_cache_seconds=60)
    with app.app_context():
        sync_catalog(db_session(), load_catalog(EXERCISES_DIR)[0])
        db_session().commit()
    key = client_key_for(app)
    client = app.test_client()
    for learner in LEARNERS[:4]:
        assert client.get(f"/api/v1/exercises/{MULTI}?learner={learner}", headers=bearer(key)).json["learner"] == learner
    shared = client.get(f"/api/v1/exercises/{MULTI}")
    assert "learner" not in shared.json
    cache = app.extensions["gradquiz.exercise_details"]
    assert list(cache.entries) == [MULTI]
    assert cache.entries[MULTI][1] == shared.get_data()  # the one body kept: the shared one
    assert [c["id"] for c in shared.json["choices"]] == [c["id"] for c in spec_of(MULTI)["choices"]]


def test_a_learner_token_gets_its_own_learners_variant(app, client, client_key):
    cid = client_id(app)
    for learner in LEARNERS[:3]:
        response = client.get(f"/api/v1/exercises/{MULTI}", headers=bearer(token(app, learner, [MULTI])))
        assert response.status_code == 200 and response.headers["Cache-Control"] == "private, no-store"
        assert response.json["learner"] == learner
        assert tuple(c["id"] for c in response.json["choices"]) == choice_order(
            secret(app), variant_key(cid, learner), MULTI, spec_of(MULTI))
    # An instructor's token may look at a learner's variant; a learner's token only at its own.
    ada = token(app, "ada", [MULTI])
    assert client.get(f"/api/v1/exercises/{MULTI}?learner=bob", headers=bearer(ada)).status_code == 403
    prof = token(app, "prof", [MULTI], role=INSTRUCTOR)
    assert client.get(f"/api/v1/exercises/{MULTI}?learner=bob", headers=bearer(prof)).json["learner"] == "bob"
    # A token for another exercise, a bad token, ?learner= without credentials.
    other = client.get(f"/api/v1/exercises/{MULTI}", headers=bearer(token(app, "ada", [SINGLE])))
    assert other.status_code == 403 and other.content_type == "application/problem+json"
    # Credentials that are not valid get the shared detail, as none do (the detail is public)...
    shared = client.get(f"/api/v1/exercises/{MULTI}", headers=bearer("not-a-token"))
    assert shared.status_code == 200 and "learner" not in shared.json
    # ...but not a learner's variant.
    assert client.get(f"/api/v1/exercises/{MULTI}?learner=ada", headers=bearer("not-a-token")).status_code == 401
    anonymous = client.get(f"/api/v1/exercises/{MULTI}?learner=ada")
    assert anonymous.status_code == 401 and anonymous.content_type == "application/problem+json"
    assert client.get(f"/api/v1/exercises/{MULTI}?learner=a/b", headers=bearer(ada)).status_code == 422
    assert client.get("/api/v1/exercises/no-such-exercise", headers=bearer(ada)).status_code in (403, 404)


def test_shuffle_false_shows_everyone_the_written_order(app, client, client_key, tmp_path):
    root = tmp_path / "exercises"
    shutil.copytree(SOURCE / MULTI, root / MULTI)
    toml = root / MULTI / "exercise.toml"
    toml.write_text("shuffle = false\n" + toml.read_text())
    exercises, problems = load_catalog(root)
    assert not problems, problems
    with app.app_context():
        sync_catalog(db_session(), exercises, unpublish_missing=False)
        db_session().commit()
    written = [c["id"] for c in spec_of(MULTI)["choices"]]
    for learner in LEARNERS[:4]:
        body = client.get(f"/api/v1/exercises/{MULTI}?learner={learner}", headers=bearer(client_key)).json
        assert [c["id"] for c in body["choices"]] == written and body["per_learner"] is False


# --- quiz answers in the learner's variant -------------------------------------------------------


def test_a_choice_attempts_feedback_follows_the_learners_order(app, client, client_key):
    spec = spec_of(MULTI)
    every = [c["id"] for c in spec["choices"]]
    for learner in LEARNERS[:4]:
        response = client.post(f"/api/v1/exercises/{MULTI}/attempts", headers=bearer(client_key),
                               json={"learner": learner, "answer": every})
        assert response.status_code == 201, response.json
        shown = [c["id"] for c in client.get(f"/api/v1/exercises/{MULTI}?learner={learner}",
                                             headers=bearer(client_key)).json["choices"]]
        assert [f["choice"] for f in response.json["feedback"]] == shown
        with app.app_context():
            row = db_session().get(Attempt, uuid.UUID(response.json["id"]))
            assert row.result["order"] == shown


def test_numeric_parameters_are_the_learners_own(app, client, client_key, square):
    cid = client_id(app)
    params = {learner: drawn(app, SQUARE, learner, cid) for learner in LEARNERS}
    assert len({tuple(sorted(p.items())) for p in params.values()}) > 1
    ada = LEARNERS[0]
    other = next(learner for learner in LEARNERS if 2 * params[learner]["x"] * params[learner]["g"] !=
                 2 * params[ada]["x"] * params[ada]["g"])
    # The detail: the prompt and hints with the learner's values; the shared one with placeholders.
    shared = client.get(f"/api/v1/exercises/{SQUARE}").json
    assert "{x}" in shared["prompt"] and shared["per_learner"] is True and "params" not in shared
    mine = client.get(f"/api/v1/exercises/{SQUARE}?learner={ada}", headers=bearer(client_key)).json
    x, g = params[ada]["x"], params[ada]["g"]
    assert mine["params"] == params[ada]
    assert f"x = {x}, with grad_output {g:g}" in mine["prompt"] and "{x}" not in mine["prompt"]
    assert mine["hints"] == [f"The derivative of x² at {x} is 2 × {x}."]

    def answer(learner, value):
        response = client.post(f"/api/v1/exercises/{SQUARE}/attempts", headers=bearer(client_key),
                               json={"learner": learner, "answer": value})
        assert response.status_code == 201, response.json
        return response.json

    right = answer(ada, 2 * x * g)
    assert (right["correct"], right["score"]) == (True, 1.0)
    assert right["feedback"][0]["params"] == params[ada]
    # Another learner's answer is not this learner's.
    theirs = 2 * params[other]["x"] * params[other]["g"]
    assert answer(ada, theirs)["correct"] is False
    assert answer(other, theirs)["correct"] is True
    assert answer(other, 2 * x * g)["correct"] is False
    # A known mistake, with its feedback written for the learner's values.
    if not math.isclose(x * x * g, 2 * x * g):
        mistake = answer(ada, x * x * g)
        assert f"at x = {x}, not its derivative" in mistake["feedback"][-1]["feedback"]
    # The attempt keeps its values: its display (the stored result) and a regrade read them there.
    with app.app_context():
        row = db_session().get(Attempt, uuid.UUID(right["id"]))
        assert row.result["params"] == params[ada]
    shown = client.get(f"/api/v1/attempts/{right['id']}", headers=bearer(client_key)).json
    assert shown["feedback"][0]["feedback"] == f"Your values: x = {x}, g = {g:g}."


def test_a_quiz_regrade_grades_in_the_values_the_attempt_was_made_with(app, client, client_key, client_key_for,
                                                                       square, database_url):

    cid = client_id(app)
    ids = {}
    for learner in LEARNERS[:6]:
        p = drawn(app, SQUARE, learner, cid)
        ids[learner] = client.post(f"/api/v1/exercises/{SQUARE}/attempts", headers=bearer(client_key),
                                   json={"learner": learner, "answer": 2 * p["x"] * p["g"]}).json["id"]
    before = {learner: drawn(app, SQUARE, learner, cid) for learner in ids}
    # A new version (its digest draws other values for some learners)...
    toml = square / SQUARE / "exercise.toml"
    toml.write_text(toml.read_text().replace('explanation = "Backward', 'explanation = "Its backward'))
    with app.app_context():
        sync_catalog(db_session(), load_catalog(square)[0], unpublish_missing=False)
        db_session().commit()
    after = {learner: drawn(app, SQUARE, learner, cid) for learner in ids}
    assert after != before
    staff = client_key_for(app, "prof", Role.INSTRUCTOR)
    response = client.post("/api/v1/admin/regrades", headers=bearer(staff), json={"exercise": SQUARE})
    assert response.status_code == 202, response.json
    grade_regrade_items(database_url)
    with app.app_context():
        items = list(db_session().scalars(select(RegradeItem)))
        assert len(items) == len(ids)
        # ...yet every correct answer stays correct: graded with the values the learner answered.
        assert {(item.new_score, item.new_correct) for item in items} == {(1.0, True)}
        by_attempt = {str(item.attempt_id): item.result["params"] for item in items}
    assert by_attempt == {ids[learner]: before[learner] for learner in ids}


# --- code: the learner's hidden inputs, graded and regraded ---------------------------------------


class RecordingJudge:
    """A judge that records which variant each grade asked for."""

    def __init__(self):
        self.variants: list[str | None] = []

    def has_reference(self, exercise, *, variant=None):
        return True

    def grade(self, exercise, code, *, timeout=None, variant=None, **_stored):
        self.variants.append(variant)
        return {"score": 1.0, "status": "passed", "checks": [], "diagnostics": [], "likely_causes": [],
                "feedback": [], "error": None, "output": {"stdout": "", "stderr": "", "truncated": False},
                "timings": {}, "grader_version": 1}


def test_code_is_graded_and_regraded_in_the_learners_variant(app, client, client_key, client_key_for, database_url):

    reference = (SOURCE / CODE / "reference.py").read_text()
    ids = {}
    for learner in ("ada", "bob"):
        response = client.post(f"/api/v1/exercises/{CODE}/attempts", headers=bearer(client_key),
                               json={"learner": learner, "code": reference})
        assert response.status_code == 202, response.json
        ids[learner] = response.json["id"]
    judge = RecordingJudge()
    grade_regrade_items(database_url, judge)
    cid = client_id(app)
    assert sorted(judge.variants) == [variant_key(cid, "ada"), variant_key(cid, "bob")]
    judge.variants.clear()
    staff = client_key_for(app, "prof", Role.INSTRUCTOR)
    response = client.post("/api/v1/admin/regrades", headers=bearer(staff), json={"exercise": CODE})
    assert response.status_code == 202, response.json
    grade_regrade_items(database_url, judge)
    assert sorted(judge.variants) == [variant_key(cid, "ada"), variant_key(cid, "bob")]


# --- the learner's page --------------------------------------------------------------------------


def _json_block(html: str, element_id: str) -> dict | None:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', html, re.S)
    return json.loads(match.group(1)) if match else None


def test_a_launched_page_embeds_the_learners_variant(app, client, client_key, square):
    cid = client_id(app)
    for slug in (MULTI, SQUARE):
        for learner in LEARNERS[:3]:
            launch = {"token": token(app, learner, [slug]), "expires_in": 600, "exercise": slug, "learner": learner}
            with app.test_request_context(f"/learn/{slug}"):
                response = render_exercise_page(slug, launch=launch)
            detail = _json_block(response.get_data(as_text=True), "gradquiz-exercise")
            assert response.headers["Cache-Control"] == "no-store"
            assert detail == client.get(f"/api/v1/exercises/{slug}", headers=bearer(launch["token"])).json
            assert detail["learner"] == learner
            if slug == SQUARE:
                assert detail["params"] == drawn(app, SQUARE, learner, cid)
    # Without a launch the page embeds the shared detail (and the script asks for the learner's).
    shared = _json_block(client.get(f"/learn/{MULTI}").get_data(as_text=True), "gradquiz-exercise")
    assert "learner" not in shared and shared["per_learner"] is True
