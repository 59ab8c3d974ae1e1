"""The corpus through "Try it yourself" (POST /api/v1/runs): every correct Function (or custom op) passes
every check, the newer ones its header asks for (forward_ad, vmap, in_place) and a custom op's among
them; every incorrect one fails the check it must fail, naming the cause it must name.

One database: the subject is the check engine behind the endpoint, not the storage. The entries for
the newer checks go through one app in one test (a fresh app costs more than their runs), each
failure named; tests/grading/test_corpus_newer_checks.py holds them one by one, and to torch.
"""

from __future__ import annotations

import pytest

from tests.grading.corpus_support import load_corpus
from tests.helpers import bearer

#: the checks a run's option adds (a custom op's are made unasked)
NEWER_CHECKS = {"forward_ad": ("forward_ad",), "vmap": ("vmap", "batched_grad"), "in_place": ("in_place",),
                "custom_op": ("op_schema", "op_autograd_registration", "op_fake_tensor", "op_aot_dispatch")}


def _newer(entry) -> bool:
    return entry.custom_op or any(entry.options.get(option) for option in NEWER_CHECKS)


CORPUS = [e for e in load_corpus() if not _newer(e)]
NEWER = [e for e in load_corpus() if _newer(e)]


def _assert_verdict(client, client_key, entry) -> None:
    response = client.post("/api/v1/runs", headers=bearer(client_key), json={
        "code": entry.source, "entry_point": entry.entry_point, "inputs": entry.inputs, "wait": 30, **entry.options})
    assert response.status_code == 200, response.json
    result = response.json["result"]
    checks = {c["name"]: c for c in result["checks"]}
    for option, names in NEWER_CHECKS.items():  # each newer check the run asks for is made
        if entry.options.get(option) or (option == "custom_op" and entry.custom_op):
            assert set(names) <= set(checks), (option, list(checks))
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


@pytest.mark.backends("postgresql")
@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_corpus_verdict_through_the_run_endpoint(client, client_key, worker, entry):
    _assert_verdict(client, client_key, entry)


@pytest.mark.backends("postgresql")
def test_the_newer_checks_corpus_through_the_run_endpoint(client, client_key, worker):
    assert len(NEWER) >= 12
    wrong = {}
    for entry in NEWER:
        try:
            _assert_verdict(client, client_key, entry)
        except AssertionError as exc:
            wrong[entry.name] = str(exc)[:500]
    assert not wrong, wrong
