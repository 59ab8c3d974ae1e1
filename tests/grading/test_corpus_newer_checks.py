"""The corpus's real-world Functions and custom ops for the newer checks (forward mode, vmap, in-place
Functions, torch.library custom ops): through the sandbox, every correct one passes its Run and every
incorrect one fails the check it names with the cause it names; and each newer check's verdict is
torch's own, run here in the test process on the values the run reports it used
(corpus_support.torch_verdicts: gradcheck(check_forward_ad=True), torch.func.vmap against one call
per batch entry, gradcheck(check_batched_grad=True), gradcheck of the Function inside a bigger
expression on clones, torch.library.opcheck's four tests).

One deliberate difference, as docs/grading.md says: our op_autograd_registration is stricter than
opcheck's test_autograd_registration, which every custom_op passes (it has an Autograd kernel even
with no formula registered); opcheck then fails the same op in test_aot_dispatch_dynamic.
"""

from __future__ import annotations

import pytest

from tests.grading.agreement_support import args_from_run
from tests.grading.corpus_support import OPCHECK_TESTS, load_corpus, torch_verdicts

torch = pytest.importorskip("torch")

#: the options of the newer checks (the custom-op checks need none: a run makes them unasked)
NEWER_OPTIONS = {"forward_ad", "vmap", "in_place"}
NEWER = [e for e in load_corpus() if e.custom_op or NEWER_OPTIONS & {k for k, on in e.options.items() if on}]
#: the checks each option (or a custom op) adds to a run
ADDED = {"forward_ad": ("forward_ad",), "vmap": ("vmap", "batched_grad"), "in_place": ("in_place",)}


def _uses(entry, word: str) -> bool:
    return word in entry.source


def test_the_newer_corpus_covers_each_check_right_and_wrong():
    assert len(NEWER) >= 12
    right = [e for e in NEWER if e.correct]
    # right ones: a jvp, a generated vmap rule, a vmap staticmethod, mark_dirty, a custom op
    assert any(e.options.get("forward_ad") and _uses(e, "def jvp(") for e in right)
    assert any(e.options.get("vmap") and _uses(e, "generate_vmap_rule = True") for e in right)
    assert any(e.options.get("vmap") and _uses(e, "def vmap(") for e in right)
    assert any(e.options.get("in_place") and _uses(e, "ctx.mark_dirty(") for e in right)
    assert sum(e.custom_op for e in right) >= 2
    # wrong ones: each newer check failed by at least one
    failing = {e.failing_check for e in NEWER if not e.correct}
    assert failing >= {"forward_ad", "vmap", "in_place", "op_schema", "op_autograd_registration", "op_fake_tensor"}


@pytest.mark.parametrize("entry", NEWER, ids=[e.name for e in NEWER])
def test_the_verdict_is_the_corpus_label_and_torchs(judge, entry):
    result = judge.run(entry.source, entry.entry_point, entry.inputs, options=entry.run_options)
    assert result["status"] in ("ok", "error"), result
    checks = {c["name"]: c for c in result["checks"]}
    asked = [name for option in entry.run_options for name in ADDED.get(option, ())]
    asked += list(OPCHECK_TESTS) if entry.custom_op else []
    assert set(asked) <= set(checks), (asked, list(checks))
    if entry.correct:
        failed = {name: c["message"] for name, c in checks.items() if not c["passed"]}
        assert result["passed"] is True and not failed, failed
    else:
        check = checks[entry.failing_check]
        assert result["passed"] is False and check["passed"] is False, (entry.failing_check, result["checks"])
        assert check["likely_cause"] == entry.cause, check
    theirs = torch_verdicts(entry, args_from_run(result["inputs"]))
    assert set(theirs) <= set(checks)
    for name, (torch_passed, torch_message) in theirs.items():
        ours = checks[name]["passed"]
        if name == "op_autograd_registration" and ours != torch_passed:
            # stricter than opcheck's test, on purpose; opcheck fails the op in its AOT dispatch test
            assert not ours and torch_passed and checks[name]["likely_cause"] == "op_no_autograd_formula"
            assert theirs["op_aot_dispatch"][0] is False
            continue
        assert ours == torch_passed, (name, checks[name], torch_message)
