"""Every worked example of the lesson (lesson/) really runs in the sandbox, as the lesson page's
Run button sends it (POST /api/v1/runs), and shows what the lesson says it shows."""

from __future__ import annotations

from service.learn.lesson import load_lesson
from tests.helpers import bearer

WRONG_ON_PURPOSE = {"clamp-fn-wrong"}


def test_each_lesson_example_runs_as_the_lesson_says(client, client_key, worker):
    examples = [e for c in load_lesson().concepts for e in c.examples]
    assert examples
    for example in examples:
        body = {"code": example.code, "wait": 30}
        if example.entry_point:
            body.update(entry_point=example.entry_point, inputs=list(example.inputs))
        response = client.post("/api/v1/runs", json=body, headers=bearer(client_key))
        assert response.status_code == 200, (example.id, response.get_json())
        run = response.get_json()
        assert run["status"] == "finished", (example.id, run)
        result = run["result"]
        assert result["error"] is None, (example.id, result["error"])
        if not example.entry_point:
            assert "y      = 1.0" in result["output"]["stdout"] and "x.grad = 0.0" in result["output"]["stdout"]
            continue
        assert result["gradcheck"]["passed"] is (example.id not in WRONG_ON_PURPOSE), (example.id, result["gradcheck"])
        if example.id in WRONG_ON_PURPOSE:
            assert "forgot_grad_output" in result["likely_causes"]
