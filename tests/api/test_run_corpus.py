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
        "code": entry.source, "entry_point": entry.entry_point, "inputs": entry.inputs, "wait": 30, **entry.options})
    assert response.status_code == 200, response.json
    result = response.json["result"]
    checks = {c["name"]: c for c in result["checks"]}
    if entry.correct:
        failed = {name: c["message"] for name, c in checks.items() if not c["passed"]}
        assert result["passed"] is True and not failed, failed
        assert result["gradcheck"]["passed"] is True and result["likely_causes"] == []
        assert result["gradcheck"]["check"] == ("jacobian_projections" if entry.large else "gradcheck")
        if entry.options.get("gradgradcheck"):
            assert result["gradgradcheck"]["passed"] is True and checks["gradgradcheck"]["passed"] is True
    else:
        assert result["passed"] is False
        check = checks[entry.failing_check]
        assert check["passed"] is False, (entry.failing_check, result["checks"])
        assert check["likely_cause"] == entry.cause, check
        assert entry.cause in result["likely_causes"]
        if entry.failing_check in ("gradcheck", "jacobian_projections", "gradgradcheck"):
            top = result["gradgradcheck" if entry.failing_check == "gradgradcheck" else "gradcheck"]
            assert top["check"] == entry.failing_check
            assert top["passed"] is False and top["message"] == check["message"] and top["likely_cause"] == entry.cause
    assert response.json["gradgradcheck"] is bool(entry.options.get("gradgradcheck"))
