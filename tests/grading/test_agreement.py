"""The run's gradcheck never disagrees with torch.autograd.gradcheck (fast_mode off) on the same inputs.

Over every reference and every known mistake of every code exercise, run on the exercise's own input
specs, and over the corpus of tests/grading/corpus: the judge decides from the child's numbers
(checks.py); torch's gradcheck runs here, in the test process, on the values the run reports it
used (float64 copies of float32 inputs, as the run checks them). A custom op is called itself, not
through `.apply`; an in-place corpus Function (`"in_place": true`) is run with that option and
checked by torch on clones of its inputs, as the run checks it.
"""

from __future__ import annotations

import pytest

from tests.grading.agreement_support import ITEMS, args_from_run, load_function
from tests.grading.corpus_support import GRADCHECK_KWARGS, entry_call, load_corpus
from tests.grading.support import code_exercise_slugs

torch = pytest.importorskip("torch")

#: the corpus's in-place Functions, by label: run with the in_place option, checked on clones
IN_PLACE = {f"corpus/{e.name}" for e in load_corpus() if e.options.get("in_place")}


def _torch_gradcheck(source: str, entry_point: str, args: tuple, *, in_place: bool = False) -> tuple[bool, str]:
    call = entry_call(load_function(source, entry_point), in_place=in_place)
    try:
        return bool(torch.autograd.gradcheck(call, args, **GRADCHECK_KWARGS)), ""
    except Exception as exc:  # noqa: BLE001 - any failure is torch's verdict
        return False, f"{type(exc).__name__}: {str(exc)[:300]}"


def test_the_agreement_covers_every_exercise_and_the_corpus():
    assert len(code_exercise_slugs()) >= 10
    corpus = load_corpus()
    assert sum(e.correct for e in corpus) >= 20 and sum(not e.correct for e in corpus) >= 15
    assert len(ITEMS) >= len(corpus) + 2 * len(code_exercise_slugs())


@pytest.mark.parametrize(("label", "source", "entry_point", "inputs"), ITEMS, ids=[i[0] for i in ITEMS])
def test_run_gradcheck_agrees_with_torch(judge, label, source, entry_point, inputs):
    in_place = label in IN_PLACE
    result = judge.run(source, entry_point, inputs, options=("in_place",) if in_place else ())
    assert result["status"] in ("ok", "error"), result
    if result.get("inputs") is None:  # forward (or loading) raised: torch's gradcheck raises too
        assert (result["gradcheck"] or {}).get("passed") is not True
        return
    torch_passed, torch_message = _torch_gradcheck(source, entry_point, args_from_run(result["inputs"]),
                                                   in_place=in_place)
    ours = (result["gradcheck"] or {}).get("passed", False)
    assert ours == torch_passed, (label, result["gradcheck"], torch_message)
