"""Runs made with learner tokens: the run records its learner, a learner sees only their own runs,
the rate limit counts per learner, and a run may name an exercise to use its entry point and
sample inputs (an exercise page's "Run" button), within the token's exercises."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.catalog import load_catalog
from service.config import PROJECT_ROOT
from service.grading.runs import exercise_run_inputs
from service.grading.spec import load_code_spec
from service.models import Run
from tests.helpers import bearer, count_rows

CODE, OTHER_CODE, QUIZ = "square-function", "double-function", "backward-none-for-bounds"
REFERENCE = (PROJECT_ROOT / "exercises" / CODE / "reference.py").read_text()


def token_for(client, key, learner="ada", exercises=(CODE,)):
    response = client.post("/api/v1/learner-tokens", headers=bearer(key),
                           json={"learner": learner, "exercises": None if exercises is None else list(exercises)})
    assert response.status_code == 200, response.json
    return response.json["token"]


def run(client, credential, **body):
    return client.post("/api/v1/runs", headers=bearer(credential), json={"code": "print(1)", "wait": 0, **body})


def _code_exercises() -> dict[str, dict]:
    exercises, problems = load_catalog(Path(PROJECT_ROOT / "exercises"))
    assert not problems
    return {e.slug: e.spec for e in exercises if e.spec["kind"] == "code"}


def test_a_learners_run_is_theirs_alone(client, client_key, other_client_key, admin_key):
    ada, bob = token_for(client, client_key, "ada"), token_for(client, client_key, "bob")
    made = run(client, ada)
    assert made.status_code == 202, made.json
    # A free run of a token that reaches one code exercise counts for it (its rules' max_runs).
    assert made.json["learner"] == "ada" and made.json["exercise"] == CODE
    location = made.headers["Location"]
    assert client.get(location, headers=bearer(ada)).json["id"] == made.json["id"]
    # Another learner of the same client, another client and its learner ada: not found.
    b_ada = token_for(client, other_client_key, "ada")
    for stranger in (bob, other_client_key, b_ada):
        refused = client.get(location, headers=bearer(stranger))
        assert refused.status_code == 404 and refused.content_type == "application/problem+json"
    # The client that owns the learner, and an admin, see it.
    assert client.get(location, headers=bearer(client_key)).status_code == 200
    assert client.get(location, headers=bearer(admin_key)).status_code == 200
    # A run made with the client's key is nobody's learner's: the key sees it, no learner does.
    keyed = run(client, client_key)
    assert keyed.json["learner"] is None
    assert client.get(keyed.headers["Location"], headers=bearer(ada)).status_code == 404


def test_a_run_naming_an_exercise_uses_its_entry_point_and_sample_inputs(app, client, client_key):
    ada = token_for(client, client_key, exercises=[CODE])
    made = run(client, ada, exercise=CODE)
    assert made.status_code == 202, made.json
    code, _ = load_code_spec(_code_exercises()[CODE])
    assert made.json["exercise"] == CODE
    assert made.json["entry_point"] == code.entry_point == "SquareFn"
    assert made.json["inputs"] == exercise_run_inputs(code)
    with app.app_context():
        from service.extensions import db_session

        stored = db_session().get(Run, __import__("uuid").UUID(made.json["id"]))
        assert (stored.learner, stored.exercise.slug, stored.entry_point) == ("ada", CODE, "SquareFn")


def test_every_code_exercise_can_be_run_from_its_page(client, client_key):
    """Each code exercise's sample inputs are valid run inputs: its "Run" button never gets a 422."""
    everywhere = token_for(client, client_key, exercises=None)
    for slug, spec in _code_exercises().items():
        made = run(client, everywhere, exercise=slug)
        assert made.status_code == 202, (slug, made.json)
        assert made.json["entry_point"] == spec["code"]["entry_point"], slug


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"exercise": OTHER_CODE}, 403, None),            # the token's exercises are CODE only
    ({"exercise": "no-such-exercise"}, 403, None),    # and it learns nothing about other slugs
    ({"exercise": CODE, "entry_point": "SquareFn"}, 422, "json.entry_point"),
    ({"exercise": CODE, "inputs": [{"type": "float", "value": 1.0}]}, 422, "json.inputs"),
    ({"exercise": "Not A Slug"}, 422, "json.exercise"),
])
def test_a_learner_token_cannot_run_outside_its_exercises_and_bad_runs_write_nothing(app, client, client_key, body,
                                                                                     status, field):
    ada = token_for(client, client_key, exercises=[CODE])
    response = run(client, ada, **body)
    assert response.status_code == status, response.json
    assert response.content_type == "application/problem+json"
    if field:
        assert any(e["field"] == field for e in response.json["errors"]), response.json
    assert count_rows(app, Run) == 0


def test_unknown_unpublished_and_quiz_exercises_do_not_run(app, client, client_key, admin_key):
    everywhere = token_for(client, client_key, exercises=None)
    assert run(client, everywhere, exercise="no-such-exercise").status_code == 404
    assert run(client, client_key, exercise="no-such-exercise").status_code == 404
    quiz = run(client, everywhere, exercise=QUIZ)
    assert quiz.status_code == 422 and quiz.json["errors"][0]["field"] == "json.exercise"
    assert client.post(f"/api/v1/admin/exercises/{OTHER_CODE}/unpublish", headers=bearer(admin_key)).status_code == 200
    assert run(client, everywhere, exercise=OTHER_CODE).status_code == 404
    assert count_rows(app, Run) == 0


def test_the_run_rate_limit_counts_per_learner(make_app, client_key_for):
    app = make_app(runs_rate_limit="2/minute")
    from service.catalog import sync_catalog
    from service.extensions import db_session

    exercises, _ = load_catalog(Path(PROJECT_ROOT / "exercises"))
    with app.app_context():
        sync_catalog(db_session(), exercises)
        db_session().commit()
    key = client_key_for(app, "lms")
    client = app.test_client()
    ada, bob = token_for(client, key, "ada"), token_for(client, key, "bob")
    for _ in range(2):
        assert run(client, ada).status_code == 202
    limited = run(client, ada)
    assert limited.status_code == 429 and limited.content_type == "application/problem+json"
    assert int(limited.headers["Retry-After"]) >= 1
    # Ada's second token is still ada; bob, and the client's own key, count apart.
    assert run(client, token_for(client, key, "ada")).status_code == 429
    assert run(client, bob).status_code == 202
    assert run(client, key).status_code == 202
    assert count_rows(app, Run) == 4


def test_a_learners_exercise_run_really_runs(client, client_key, worker):
    ada = token_for(client, client_key, exercises=[CODE])
    response = client.post("/api/v1/runs", headers=bearer(ada),
                           json={"code": REFERENCE + "\nprint('from ada')\n", "exercise": CODE, "wait": 20})
    assert response.status_code == 200, response.json
    result = response.json["result"]
    assert "from ada" in result["output"]["stdout"]
    assert result["gradcheck"]["passed"] is True
    # The exercise's input x: a 2x5 tensor drawn from [-3, 3].
    (x,) = result["inputs"]
    assert x["shape"] == [2, 5] and all(-3.0 <= v <= 3.0 for v in x["values"])


def test_a_run_remembers_the_optional_checks_asked_for_and_those_its_exercise_asks_for(client, client_key):
    """The request's "forward_ad", "vmap" and "in_place" reach the run (and the worker that runs it,
    from the stored flags); a run of an exercise makes the optional checks its [code] table asks for,
    unasked: sin-jvp's forward mode."""
    everywhere = token_for(client, client_key, exercises=None)
    asked = run(client, everywhere, forward_ad=True, vmap=True, in_place=False, gradgradcheck=True)
    assert asked.status_code == 202, asked.json
    assert {k: asked.json[k] for k in ("forward_ad", "vmap", "in_place", "gradgradcheck")} == {
        "forward_ad": True, "vmap": True, "in_place": False, "gradgradcheck": True}
    exercise_run = run(client, everywhere, exercise="sin-jvp")
    assert exercise_run.status_code == 202 and exercise_run.json["forward_ad"] is True, exercise_run.json
    assert exercise_run.json["vmap"] is False
    assert run(client, everywhere, exercise=CODE).json["forward_ad"] is False
    refused = run(client, everywhere, forward_ad="yes")
    assert refused.status_code == 422 and refused.json["errors"][0]["field"] == "json.forward_ad"
