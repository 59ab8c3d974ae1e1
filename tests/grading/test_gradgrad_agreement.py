"""A run's gradgradcheck (asked for with options=("gradgradcheck",)) never disagrees with
torch.autograd.gradgradcheck (fast_mode off) on the same inputs and grad_outputs.

Over the same items as test_agreement.py (every reference and known mistake of every code exercise,
and the corpus, large inputs only where their run asks for gradgradcheck): the judge decides from
the child's numbers for torch's own function of the inputs and grad_outputs (checks.gradgradcheck);
torch's gradgradcheck runs here, in the test process, on the values the run reports it used and the
grad_outputs the judge drew for it.
"""

from __future__ import annotations

import pytest

from service.grading import checks
from service.grading.runs import plan_run
from service.grading.terms import LIKELY_CAUSES
from tests.grading.agreement_support import DTYPES, ITEMS, args_from_run, load_function
from tests.grading.corpus_support import GRADCHECK_KWARGS, entry_call, load_corpus

torch = pytest.importorskip("torch")


def _torch_gradgradcheck(source: str, entry_point: str, args: tuple, grad_outputs: tuple, *,
                         in_place: bool = False) -> tuple[bool, str]:
    call = entry_call(load_function(source, entry_point), in_place=in_place)
    try:
        return bool(torch.autograd.gradgradcheck(call, args, grad_outputs, **GRADCHECK_KWARGS)), ""
    except Exception as exc:  # noqa: BLE001 - any failure is torch's verdict
        return False, f"{type(exc).__name__}: {str(exc)[:300]}"


def _grad_outputs(source: str, entry_point: str, inputs: list, result: dict, options: tuple[str, ...]) -> tuple:
    """The grad_outputs the run used: the judge's draw from the run's seed, as the run reports their shapes."""
    plan = plan_run(source, entry_point, inputs, options=options)
    check_case = next(c for c in plan.cases if c.id == plan.check_case_id)
    shown = result["gradgradcheck"]["grad_outputs"]
    values = check_case.gradgrad.grad_outputs([checks.numel(v["shape"]) for v in shown])
    out = []
    for v, vals in zip(shown, values):
        assert v["values"] == [torch.tensor(x, dtype=DTYPES[v["dtype"]]).item() for x in vals[:len(v["values"])]]
        out.append(torch.tensor(vals, dtype=DTYPES[v["dtype"]]).reshape(v["shape"]).requires_grad_(True))
    return tuple(out)


#: A large input whose run does not ask for gradgradcheck is left out: torch's slow gradgradcheck of
#: a 1024-element softmax takes 40 s here. Large entries that ask for it are kept (a few seconds).
_CORPUS = {f"corpus/{e.name}": e for e in load_corpus()}
GRADGRAD_ITEMS = [i for i in ITEMS if i[0] not in _CORPUS or not _CORPUS[i[0]].large
                  or _CORPUS[i[0]].options.get("gradgradcheck")]
#: the corpus's in-place Functions: run with the in_place option too, checked on clones
IN_PLACE = {label for label, e in _CORPUS.items() if e.options.get("in_place")}


@pytest.mark.parametrize(("label", "source", "entry_point", "inputs"), GRADGRAD_ITEMS, ids=[i[0] for i in GRADGRAD_ITEMS])
def test_run_gradgradcheck_agrees_with_torch(judge, label, source, entry_point, inputs):
    in_place = label in IN_PLACE
    options = ("gradgradcheck", "in_place") if in_place else ("gradgradcheck",)
    result = judge.run(source, entry_point, inputs, options=options)
    assert result["status"] in ("ok", "error"), result
    ours = result.get("gradgradcheck")
    if ours is None or "grad_outputs" not in ours:
        # forward raised, no input requires grad, or no output does: torch's gradgradcheck cannot pass
        assert not (ours or {}).get("passed"), (label, ours)
        return
    args = args_from_run(result["inputs"])
    torch_passed, torch_message = _torch_gradgradcheck(source, entry_point, args,
                                                       _grad_outputs(source, entry_point, inputs, result, options),
                                                       in_place=in_place)
    assert ours["passed"] == torch_passed, (label, ours, torch_message)
    assert ours["check"] == "gradgradcheck" and {c["name"] for c in result["checks"]} >= {"gradgradcheck"}
    if torch_passed is False:
        assert ours["likely_cause"] in LIKELY_CAUSES, ours
