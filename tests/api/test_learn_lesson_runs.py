"""Every worked example of the lessons (lesson/ and the lessons it is followed by) really runs in the
sandbox, as the lesson page's Run button sends it (POST /api/v1/runs), and shows what the lesson
says it shows: the lines its `prints` names, and the numerical check's verdict."""

from __future__ import annotations

import pytest

from service.learn.lesson import load_lessons
from tests.helpers import bearer

WRONG_ON_PURPOSE = {"clamp-fn-wrong"}

EXAMPLES = [pytest.param(e, id=e.id) for lesson in load_lessons() for c in lesson.concepts for e in c.examples]


def test_every_example_is_listed():
    assert len(EXAMPLES) >= 12


@pytest.mark.backends("sqlite")  # the sandbox's answer does not depend on the database
@pytest.mark.parametrize("example", EXAMPLES)
def test_each_lesson_example_runs_as_the_lesson_says(client, client_key, worker, example):
    body = {"code": example.code, "wait": 30}
    if example.entry_point:
        body.update(entry_point=example.entry_point, inputs=list(example.inputs), **{name: True for name in example.checks})
    response = client.post("/api/v1/runs", json=body, headers=bearer(client_key))
    assert response.status_code == 200, response.get_json()
    run = response.get_json()
    assert run["status"] == "finished", run
    result = run["result"]
    assert result["error"] is None, result["error"]
    stdout = result["output"]["stdout"]
    for line in example.prints:
        assert line in stdout, (line, stdout)
    if not example.entry_point:
        return
    assert result["gradcheck"]["passed"] is (example.id not in WRONG_ON_PURPOSE), result["gradcheck"]
    assert result["passed"] is (example.id not in WRONG_ON_PURPOSE), [c for c in result["checks"] if not c["passed"]]
    names = {c["name"] for c in result["checks"]}
    asked = {"forward_ad": {"forward_ad"}, "vmap": {"vmap", "batched_grad"}, "in_place": {"in_place"}}
    assert all(asked.get(name, {name}) <= names for name in example.checks), names
    if example.id in WRONG_ON_PURPOSE:
        assert "forgot_grad_output" in result["likely_causes"]
