"""The corpus through "Try it yourself" (POST /api/v1/runs): every correct Function passes every check;
every incorrect one fails the check it must fail, naming the cause it must name.

One database: the subject is the check engine behind the endpoint, not the storage.
"""

from __future__ import annotations

import pytest

from tests.grading.corpus_support import load_corpus
from tests.helpers import bearer

CORPUS = load_corpus()


@pytest.mark.backends("postgresql")
@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_corpus_verdict_through_the_run_endpoint(client, client_key, worker, entry):
    response = client.post("/api/v1/runs", headers=bearer(client_key), json={
        "code": entry.source, "entry_point": entry.entry_point, "inputs": entry.inputs, "wait": 30})
    assert response.status_code == 200, response.json
    result = response.json["result"]
    checks = {c["name"]: c for c in result["checks"]}
    if entry.correct:
        failed = {name: c["message"] for name, c in checks.items() if not c["passed"]}
        assert result["passed"] is True and not failed, failed
        assert result["gradcheck"]["passed"] is True and result["likely_causes"] == []
    else:
        assert result["passed"] is False
        check = checks[entry.failing_check]
        assert check["passed"] is False, (entry.failing_check, result["checks"])
        assert check["likely_cause"] == entry.cause, check
        assert entry.cause in result["likely_causes"]
        if entry.failing_check == "gradcheck":
            assert result["gradcheck"]["passed"] is False and result["gradcheck"]["message"] == check["message"]
