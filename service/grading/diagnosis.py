"""The diagnosis of a result: what a learner reads first, in their own terms.

A grade's report (the attempt's stored result) and a run's result hold every check, its message
and the judge's diagnostics (plain numbers). This module reads them, in the web process, and says
three things: one verdict line (the headline, no score), the likely cause (its title and what to
do, from terms.CAUSES), and ONE example: the failing case that shows the cause, said as a learner
who wrote the Function would say it ("At x = 0.77 your backward gives 1; the derivative there is
0.", "Your backward sends gradient from output[0] to x[1], but output[0] does not depend on
x[1]."). It is computed from what is stored, so an attempt graded before it existed gets one too.

The words come from terms.py; only the sentences that put numbers into them are made here. No
identifier of the code appears in them (never a check's or a cause's name, never "in parse").
Torch-free, stdlib only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .terms import CAUSES, CHECKS, STAGES, STATUSES

#: Causes that name an exception: their example is the exception, said with its stage.
ERROR_CAUSES = frozenset({"forward_error", "backward_error", "load_error"})
#: Checks whose failure is about the Jacobian, element by element.
JACOBIAN_CHECKS = frozenset({"gradcheck"})
#: Checks of something other than backward's gradient for one grad_output (vmap, a batch of
#: grad_outputs): their diagnostics and shapes are not backward's, and their own message already
#: says the case in the learner's words ("under vmap the output has shape ..."). A jvp's
#: diagnostics are told by jvp_example.
OWN_WORDS_CHECKS = frozenset({"vmap", "batched_grad"})
MAX_MESSAGE = 300
#: Words a message may start with that are English, not a name from the code (capitalised).
_PLAIN_WORDS = frozenset({"a", "an", "the", "your", "on", "with", "for", "no", "not", "at", "some", "every", "one",
                          "output", "this", "it", "its"})


def _num(x: Any) -> str:
    """A number as a learner reads it: 4 significant digits, 1 for 1.0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if x != x else ("inf" if x > 0 else "-inf")
    text = format(float(x), ".4g")
    return "0" if text == "-0" else text


def _index(idx: Any) -> str:
    if not isinstance(idx, list) or not idx:
        return ""
    return "[" + ", ".join(str(i) for i in idx) + "]"


def _element(name: str, idx: Any, shape: Any = None) -> str:
    """x[1], or x for a scalar (or where no index is known)."""
    if isinstance(shape, list) and not shape:
        return name
    return f"{name}{_index(idx)}"


def _output(diag: Mapping[str, Any]) -> str:
    k = diag.get("output")
    label = "output" if not k else f"output {k}"
    return _element(label, diag.get("output_index"), diag.get("output_shape"))


def _sentence(text: str) -> str:
    text = " ".join(str(text).split())
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE - 1].rstrip() + "…"
    first = text.split(" ", 1)[0]
    if first in _PLAIN_WORDS:  # never a name from the code: "x needs no gradient" stays as it is
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?", "…")) else text + "."


# --------------------------------------------------------------------------- examples


def _factor(diag: Mapping[str, Any]) -> str:
    f = diag.get("factor")
    return f" (about {_num(f)} times the right value)" if isinstance(f, (int, float)) and not isinstance(f, bool) else ""


def jacobian_example(diag: Mapping[str, Any]) -> str:
    """One entry of the Jacobian, as the function's author sees it: for an elementwise function
    its derivative at one point; else which output element's gradient backward sends where."""
    name = str(diag.get("input", "the input"))
    idx, a, n = diag.get("index"), diag.get("analytical"), diag.get("numerical")
    x = _element(name, idx, diag.get("input_shape"))
    out = _output(diag)
    diagonal = diag.get("output_index") == idx and diag.get("output_shape") == diag.get("input_shape")
    if diag.get("elementwise") and diagonal:
        return f"At {name} = {_num(diag.get('input_value'))} your backward gives {_num(a)}; the derivative there is {_num(n)}."
    if diag.get("depends") is False:
        return f"Your backward sends gradient from {out} to {x}, but {out} does not depend on {x}."
    return (f"By finite differences, {out} changes with {x} at rate {_num(n)} (where {name} = "
            f"{_num(diag.get('input_value'))}); your backward gives {_num(a)}{_factor(diag)}.")


def vjp_example(diag: Mapping[str, Any]) -> str:
    """One element of backward's gradient for a grad_output (a grade's against the model answer, a
    run's against finite differences)."""
    name = str(diag.get("input", "the input"))
    x = _element(name, diag.get("index"), diag.get("input_shape"))
    a = diag.get("analytical")
    want = diag["expected"] if "expected" in diag else diag.get("numerical")
    value = diag.get("input_value")
    where = f" ({name} = {_num(value)})" if value is not None and x != name else ""
    at = f"{name} = {_num(value)}" if value is not None else x
    if diag.get("check") == "boundary":
        return f"At the boundary point {at} your backward gives {_num(a)}; the gradient there is {_num(want)}{_factor(diag)}."
    g = diag.get("grad_output_value")
    if isinstance(g, (int, float)) and not isinstance(g, bool):
        return (f"For grad_output {_num(g)} at {x}{where} your backward gives {_num(a)}; the chain rule gives "
                f"{_num(want)}{_factor(diag)}.")
    kind = diag.get("grad_output")
    which = "a grad_output of ones" if kind == "ones" else "a random grad_output"
    return f"For {which}, at {x}{where} your backward gives {_num(a)}; the chain rule gives {_num(want)}{_factor(diag)}."


_BASIS = re.compile(r"^basis vector e\[([0-9, ]*)\]$")


def _with_jacobian_facts(diag: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Jacobian entry of a report made before the judge gave its facts: the output element from
    the basis grad_output's label, the dependence from the finite difference's size."""
    if "output_index" in diag:
        return diag
    m = _BASIS.match(str(diag.get("grad_output", "")))
    if m is None:
        return diag
    n, atol = diag.get("numerical"), diag.get("atol")
    facts: dict[str, Any] = {"output_index": [int(i) for i in m.group(1).split(",") if i.strip()]}
    if isinstance(n, (int, float)) and isinstance(atol, (int, float)):
        facts["depends"] = abs(n) > atol
    return {**diag, **facts}


def jvp_example(diag: Mapping[str, Any]) -> str:
    """One element of jvp's output tangent: against finite differences of forward along the tangent
    (or the model answer's jvp), zero for zero tangents, or the dot-product test with backward."""
    a = _num(diag.get("analytical"))
    want = _num(diag["expected"] if "expected" in diag else diag.get("numerical"))
    out = _output(diag) if "output_index" in diag else _element(_output(diag), diag.get("index"))
    kind = str(diag.get("grad_output", ""))
    if kind == "zero tangent":
        return f"With zero tangents your jvp gives {a} for {out}; it must give 0."
    if kind.startswith("random grad_output"):
        return (f"For a random tangent v and a random grad_output u, your jvp gives <J v, u> = {a}, but your backward "
                f"gives <v, J^T u> = {want}: one of them is not the derivative.")
    value = diag.get("input_value")
    # the input's element of the same index (the sentence is given for an elementwise function)
    at = f" at {_element(str(diag.get('input', 'x')), diag.get('index'))} = {_num(value)}" if value is not None else ""
    if diag.get("model_answer"):
        return f"Along a random tangent{at}, your jvp gives {a} for {out}; the model answer's jvp gives {want}."
    return f"Along a random tangent{at}, your jvp gives {a} for {out}; finite differences of forward give {want}{_factor(diag)}."


def _diag_example(diag: Mapping[str, Any]) -> str:
    check = diag.get("check")
    if check == "forward_ad":
        return jvp_example(diag)
    if check in JACOBIAN_CHECKS:
        diag = _with_jacobian_facts(diag)
    if check in JACOBIAN_CHECKS and "output_index" in diag:
        return jacobian_example(diag)
    if check == "gradgradcheck":
        x = _element(str(diag.get("input", "the input")), diag.get("index"))
        want = diag["expected"] if "expected" in diag else diag.get("numerical")
        return (f"Differentiating your backward with respect to {x} gives {_num(diag.get('analytical'))}; "
                f"finite differences of your backward give {_num(want)}.")
    if not diag.get("index") and diag.get("direction"):  # random projections: no one element to show
        want = diag["expected"] if "expected" in diag else diag.get("numerical")
        return (f"Along a random direction, your backward's gradient gives {_num(diag.get('analytical'))}; finite "
                f"differences of forward give {_num(want)}{_factor(diag)}.")
    return vjp_example(diag)


def shape_example(shapes: Mapping[str, Any]) -> str:
    name = shapes.get("input", "an input")
    return (f"Your backward returns a gradient of shape {list(shapes.get('gradient') or [])} for {name}, but {name} "
            f"has shape {list(shapes.get('expected') or [])}.")


def error_example(error: Mapping[str, Any]) -> str:
    """An exception in words: who raised it, and when: 'Your backward raised ZeroDivisionError:
    division by zero.'"""
    stage = STAGES.get(str(error.get("where")))
    subject, when = (stage.subject, stage.when) if stage else ("Your code", "")
    kind = error.get("type") or "an exception"
    message = " ".join(str(error.get("message") or "").split())
    return _sentence(f"{subject} raised {kind}{when}" + (f": {message}" if message else ""))


def _check_message(check: Mapping[str, Any]) -> str | None:
    """A check's own message as an example, when it says something (not "Not run: ...")."""
    msg = str(check.get("message") or "")
    for prefix in ("Not run: ", "Not checked: "):
        if msg.startswith(prefix):
            return None
    first = msg.split(". ", 1)[0]  # a message that lists several cases: the first one
    return _sentence(first) if first else None


# --------------------------------------------------------------------------- choosing


def _failed(checks: Any) -> list[Mapping[str, Any]]:
    return [c for c in checks or [] if isinstance(c, Mapping) and not c.get("passed")]


def _causes_of(check: Mapping[str, Any]) -> list[str]:
    return [c for c in [check.get("likely_cause"), *(check.get("other_causes") or [])] if isinstance(c, str)]


#: Checks whose failure explains the others': an in-place Function whose backward reads an input
#: forward overwrote also fails the gradient checks (with a wrong value), and a custom op that changes
#: an input its schema does not declare fails the inputs' check; the in-place check and the schema's
#: check name why.
EXPLAINING_CHECKS = frozenset({"in_place", "op_schema"})


def pick_cause(failed: Sequence[Mapping[str, Any]], likely_causes: Sequence[Any]) -> str | None:
    """The cause most failed checks name (first named wins a tie): a cause one check names beside
    another that two name is the lesser story; but a check that explains the others names it."""
    explaining = [c for check in failed if check.get("name") in EXPLAINING_CHECKS for c in _causes_of(check) if c in CAUSES]
    if explaining:
        return explaining[0]
    order: list[str] = []
    counts: dict[str, int] = {}
    for check in failed:
        for cause in dict.fromkeys(_causes_of(check)):
            counts[cause] = counts.get(cause, 0) + 1
            if cause not in order:
                order.append(cause)
    for cause in likely_causes or []:
        if isinstance(cause, str) and cause not in order:
            order.append(cause)
            counts.setdefault(cause, 0)
    known = [c for c in order if c in CAUSES]
    if not known:
        return None
    return max(known, key=lambda c: (counts[c], -known.index(c)))


def _home(cause: str | None, failed: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The failed check the cause is told from: the first that names it first, or at all."""
    return (next((c for c in failed if cause and c.get("likely_cause") == cause), None)
            or next((c for c in failed if cause and cause in _causes_of(c)), None)
            or (failed[0] if failed else None))


def _cause_json(name: str | None) -> dict[str, str] | None:
    term = CAUSES.get(name or "")
    return None if term is None else term.as_json()


def _example(cause: str | None, failed: Sequence[Mapping[str, Any]], diagnostics: Sequence[Any],
             error: Mapping[str, Any] | None) -> str | None:
    home = _home(cause, failed)
    if error and (cause in ERROR_CAUSES or cause is None):
        return error_example(error)
    diags = [d for d in diagnostics if isinstance(d, Mapping)]
    if home is not None:
        diags += [d for c in failed if c is home for d in c.get("diagnostics") or [] if isinstance(d, Mapping)]
    mine = [d for d in diags if d.get("likely_cause") == cause] or ([] if cause else diags)
    if home is not None:
        # the home check's own diagnostic first: the gradcheck entry rather than a later comparison
        mine.sort(key=lambda d: d.get("check") != home.get("name"))
    own_words = home is not None and home.get("name") in OWN_WORDS_CHECKS
    if mine and not own_words:
        return _diag_example(mine[0])
    if home is not None and isinstance(home.get("shapes"), Mapping) and not own_words:
        return shape_example(home["shapes"])
    if error and home is not None and (
            "raised" in str(home.get("message", "")) or str(error.get("type")) in str(home.get("message", ""))):
        return error_example(error)
    return _check_message(home) if home is not None else None


def _headline(cause: str | None, failed: Sequence[Mapping[str, Any]], error: Mapping[str, Any] | None) -> str:
    if error and (cause in ERROR_CAUSES or cause is None):
        stage = STAGES.get(str(error.get("where")))
        if stage is not None and stage.name == "parse":
            return STATUSES["syntax_error"].verdict
        subject = (stage.subject if stage else "Your code")
        return f"Not yet: {subject[0].lower()}{subject[1:]} raised an exception."
    home = _home(cause, failed)
    term = CHECKS.get(str(home.get("name"))) if home is not None else None
    return term.failed if term else STATUSES["failed"].verdict


def _diagnosis(passed: bool, headline: str, cause: str | None, example: str | None,
               failed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"passed": passed, "headline": headline, "cause": _cause_json(cause), "example": example,
            "failed_checks": [str(c.get("name")) for c in failed if c.get("name")]}


# --------------------------------------------------------------------------- the two results


def diagnose_grade(report: Any) -> dict[str, Any] | None:
    """The diagnosis of a code grade's report (an attempt's result); None without one."""
    if not isinstance(report, Mapping) or not isinstance(report.get("status"), str):
        return None
    status = report["status"]
    failed = _failed(report.get("checks"))
    error = report.get("error") if isinstance(report.get("error"), Mapping) else None
    if status == "passed":
        return _diagnosis(True, STATUSES["passed"].verdict, None, None, [])
    if status != "failed":
        term = STATUSES.get(status)
        headline = term.verdict if term else STATUSES["failed"].verdict
        if error:
            example: str | None = error_example(error)
        else:
            example = next((_sentence(str(c["message"])[len("Not run: "):]) for c in failed
                            if str(c.get("message", "")).startswith("Not run: ")), None)
        return _diagnosis(False, headline, None, example, failed)
    cause = pick_cause(failed, report.get("likely_causes") or [])
    diagnostics = report.get("diagnostics")
    if not isinstance(diagnostics, list):
        diagnostics = []
    return _diagnosis(False, _headline(cause, failed, error), cause, _example(cause, failed, diagnostics, error), failed)


#: The cause an exception names by where it was raised, when the run names none.
_STAGE_CAUSES = {"entry point": "entry_point_missing", "load": "load_error", "forward": "forward_error",
                 "numerical": "forward_error", "backward": "backward_error", "analytical": "backward_error",
                 "zero_grad_output": "backward_error", "undefined_grad_output": "backward_error",
                 "double backward": "backward_error"}


def diagnose_run(result: Any) -> dict[str, Any] | None:
    """The diagnosis of a finished run's result; None without one."""
    if not isinstance(result, Mapping) or not isinstance(result.get("status"), str):
        return None
    status = result["status"]
    failed = _failed(result.get("checks"))
    error = result.get("error") if isinstance(result.get("error"), Mapping) else None
    causes = [c for c in result.get("likely_causes") or [] if isinstance(c, str)]
    if status not in ("ok", "error"):
        term = STATUSES.get(status)
        headline = term.verdict if term else STATUSES["error"].verdict
        if error and error.get("type"):
            example: str | None = error_example(error)
        else:
            message = result.get("message") or (error or {}).get("message")
            example = _sentence(str(message)) if message else None
        return _diagnosis(False, headline, None, example, failed)
    if status == "error" and error is not None:
        cause = pick_cause(failed, causes) or _STAGE_CAUSES.get(str(error.get("where")))
        if cause == "entry_point_missing":
            return _diagnosis(False, CHECKS["entry_point"].failed, cause, _sentence(str(error.get("message", ""))), failed)
        if cause == "load_error":
            return _diagnosis(False, "Not yet: your file raised an exception when it was loaded.", cause,
                              error_example(error), failed)
        headline = _headline(None, failed, error)
        return _diagnosis(False, headline, cause, error_example(error), failed)
    if not failed:
        passed = result.get("passed")
        if passed is None:
            return _diagnosis(True, STATUSES["ok"].verdict, None, None, [])
        return _diagnosis(True, "Every check passed on these inputs.", None, None, [])
    cause = pick_cause(failed, causes)
    return _diagnosis(False, _headline(cause, failed, error), cause, _example(cause, failed, [], error), failed)
