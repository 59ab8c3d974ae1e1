"""The judge's decisions: every check, its message, diagnostics and likely causes.

Pure Python on plain numbers (no torch): the submission's report (untrusted, validated first by
reports.parse_report) is compared with the reference's report (computed in a trusted process on the same plan)
and with finite differences the judge computes itself from the forward values the child returned.

Why the gradient checks cannot be faked: the child never sees the reference's numbers, so the only
way to report vector-Jacobian products equal to the reference's for the judge's secret
grad_outputs is to compute them. The judge's own gradcheck uses forward values at perturbed points,
and passes only when those values also match the reference's forward, so a child that reports a
self-consistent but wrong (e.g. all-zero) function earns nothing there either. The optional checks'
plans send their seeds to the child (forward mode's tangents, vmap's batch): there the child knows
the vectors, and what it cannot fake is the reference's answer to them, which each compares with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from . import batching, checks, custom_ops
from .cases import Case, diff_inputs
from .checks import Outcome, allclose, detect_cause, error_cause as _error_cause, fmt, jnum, unravel, worst
from .code_table import CodeSpec
from .draws import numel
from .forward_ad import check_forward_ad
from .in_place import check_in_place
from .reports import CaseReport, ChildError, Report, TorchMessages
from .technique import TECHNIQUES, missing_techniques
from .terms import LIKELY_CAUSES

# --------------------------------------------------------------------------- numbers


# --------------------------------------------------------------------------- the checks


class Verdict:
    """Decides the checks of one grade from the plan, the reference's and the submission's reports:
    one method per check (registry.py names them, in order, and calls them: `registry.decide_grade`),
    each recording its Outcome in `outcomes`."""

    def __init__(self, code: CodeSpec, cases: Sequence[Case], ref: Report, sub: Report, torch_msgs: dict[str, TorchMessages] | None = None,
                 source: str = "") -> None:
        self.code, self.cases, self.ref, self.sub = code, cases, ref, sub
        self.source = source
        self.tol = code.tolerances
        self.torch_msgs = torch_msgs or {}
        self.names = code.input_names
        self.ref_cases = {c.id: c for c in ref.cases}
        self.sub_cases = {c.id: c for c in sub.cases}
        self.diagnostics: list[dict[str, Any]] = []
        self.error: ChildError | None = None
        self.outcomes: dict[str, Outcome] = {}

    # ---- helpers

    def _note_error(self, err: ChildError | None) -> None:
        if self.error is None:
            self.error = err

    def _torch(self, case: Case) -> TorchMessages:
        return self.torch_msgs.get(case.id) or TorchMessages()

    def _case_label(self, case: Case) -> str:
        return f"'{case.name}'"

    def _f32(self, case: Case) -> bool:
        """Evidence that the submission computes in float32 where the reference keeps float64."""
        s, r = self.sub_cases.get(case.id), self.ref_cases[case.id]
        if not s or not s.forward.ok:
            return False
        for so, ro in zip(s.forward.outputs, r.forward.outputs):
            if so.dtype == "float32" and ro.dtype == "float64":
                return True
        for vr in s.vjps:
            for it in vr.returned.items if vr.returned else ():
                if it.dtype == "float32" and case.args[0].dtype == "float64":
                    return True
        return False

    def _result(self, name: str, passed: bool, message: str, cause: str | None = None, *, other_causes: Sequence[str] = (),
                torch_message: str | None = None, shapes: dict[str, Any] | None = None) -> None:
        self.outcomes[name] = Outcome(passed, message, cause if not passed else None, shapes=shapes,
                                      other_causes=tuple(other_causes), torch_message=torch_message)

    def passed(self, name: str) -> bool:
        outcome = self.outcomes.get(name)
        return outcome is not None and outcome.passed

    def _diag(self, check: str, case: Case, arg_i: int, a: list[Any], expected: list[Any], numerical: list[Any] | None,
              atol: float, rtol: float, cause: str, cause_info: dict[str, Any], kind: str) -> dict[str, Any]:
        i = worst(a, expected, atol, rtol)
        shape = case.args[arg_i].shape
        d = {
            "check": check,
            "case": case.name,
            "input": self.names[arg_i],
            "index": unravel(i, shape),
            "analytical": jnum(a[i]),
            "input_value": jnum(case.args[arg_i].values[i]),
            "input_shape": list(shape),
            "grad_output": kind,
            "atol": atol,
            "rtol": rtol,
            "likely_cause": cause,
            "hint": LIKELY_CAUSES.get(cause, ""),
        }
        if numerical is not None:
            d["numerical"] = jnum(numerical[i])
        if check != "gradcheck":
            d["expected"] = jnum(expected[i])
        d.update({k: jnum(v) for k, v in cause_info.items()})
        self.diagnostics.append(d)
        return d

    # ---- checks in order

    def parses(self) -> None:
        """A report exists only for code that parsed (the judge answers a syntax error itself)."""
        self._result("parses", True, "The code parses.")

    def entry_point(self) -> None:
        """Load and entry point: when they fail, nothing else can run."""
        self.gate()

    def gate(self) -> bool:
        e = self.sub.load_error
        if e is not None:
            self._note_error(e)
            self._result("entry_point", False, f"Your code raised {e.type} while loading: {e.message}", "load_error")
            return False
        entry = self.sub.entry
        ep = self.code.entry_point
        if entry is None or not entry.found:
            defined = entry.defined if entry else ()
            also = f" (classes defined: {', '.join(defined)})" if defined else ""
            self._result("entry_point", False, f"No {ep} is defined{also}.", "entry_point_missing")
            return False
        if entry.is_custom_op and entry.op is not None:
            self._result("entry_point", True, f"{ep} is a custom op ({entry.op.qualname}).")
            return True
        if not entry.is_function:
            what = "not a class" if not entry.is_class else "a class that does not subclass torch.autograd.Function"
            self._result("entry_point", False, f"{ep} is {what}.", "entry_point_missing")
            return False
        if not entry.has_forward or not entry.has_backward:
            missing = " and ".join(n for n, has in (("forward", entry.has_forward), ("backward", entry.has_backward)) if not has)
            self._result("entry_point", False, f"{ep} does not define {missing}.", "entry_point_missing")
            return False
        self._result("entry_point", True, f"{ep} subclasses torch.autograd.Function.")
        return True

    def forward(self) -> None:  # noqa: C901
        fails: list[tuple[str, str]] = []
        n_ok = 0
        for case in self.cases:
            s = self.sub_cases.get(case.id)
            if s is None:
                fails.append(("forward_error", f"forward was not reached on {self._case_label(case)}."))
                continue
            f, rf = s.forward, self.ref_cases[case.id].forward
            if f.error is not None:
                self._note_error(f.error)
                fails.append((_error_cause(f.error, "forward", 1), f"forward raised {f.error.type} on {self._case_label(case)}: {f.error.message}"))
                continue
            if f.count != rf.count:
                fails.append(("forward_wrong", f"forward returned {f.count} output(s) on {self._case_label(case)}; expected {rf.count}."))
                continue
            bad = None
            for k, (so, ro) in enumerate(zip(f.outputs, rf.outputs)):
                label = f"output {k}" if rf.count > 1 else "the output"
                if so.kind != "tensor":
                    bad = ("forward_wrong", f"{label} is a {so.type}, expected a tensor.")
                    break
                if so.shape != ro.shape:
                    bad = ("wrong_shape", f"{label} has shape {so.shape} on {self._case_label(case)}; expected {ro.shape}.")
                    break
                if so.values is None or ro.values is None:
                    bad = ("wrong_shape", f"{label} is too large to compare.")
                    break
                if ro.dtype.startswith("int") or ro.dtype == "bool":
                    atol = rtol = 0.0
                elif case.kind == "float32":
                    atol, rtol = self.tol.float32_atol, self.tol.float32_rtol
                else:
                    atol, rtol = self.tol.forward_atol, self.tol.forward_rtol
                if not allclose(so.values, ro.values, atol, rtol):
                    i = worst(so.values, ro.values, atol, rtol)
                    bad = ("forward_wrong", f"On {self._case_label(case)}, {label} at index {unravel(i, ro.shape)} is {fmt(so.values[i])}; expected {fmt(ro.values[i])}.")
                    break
            if bad:
                fails.append(bad)
            else:
                n_ok += 1
        if fails:
            more = f" ({len(fails) - 1} more case(s) also differ.)" if len(fails) > 1 else ""
            self._result("forward", False, fails[0][1] + more, fails[0][0])
        else:
            self._result("forward", True, f"forward matches the reference on {n_ok} input set(s).")

    def output_shape_dtype(self) -> None:  # noqa: C901
        fails: list[tuple[str | None, str]] = []
        checked = 0
        for case in self.cases:
            s = self.sub_cases.get(case.id)
            if not s or not s.forward.ok:
                continue
            checked += 1
            rf = self.ref_cases[case.id].forward
            for k, (so, ro) in enumerate(zip(s.forward.outputs, rf.outputs)):
                label = f"output {k}" if rf.count > 1 else "the output"
                if so.kind != "tensor":
                    fails.append(("forward_wrong", f"{label} is a {so.type}, not a tensor."))
                    continue
                if so.shape != ro.shape:
                    fails.append(("wrong_shape", f"{label} has shape {so.shape}; expected {ro.shape} ({self._case_label(case)})."))
                    continue
                if so.dtype != ro.dtype:
                    cause = "float32_imprecise" if so.dtype == "float32" and ro.dtype == "float64" else "wrong_dtype"
                    fails.append((cause, f"{label} has dtype {so.dtype}; expected {ro.dtype} for {self._case_label(case)}."))
                if so.requires_grad != ro.requires_grad:
                    if so.requires_grad:
                        fails.append(("not_marked_non_differentiable", f"{label} requires grad, but it carries no gradient: mark it with ctx.mark_non_differentiable."))
                    else:
                        fails.append(("output_detached", f"{label} does not require grad although the input does: it is cut off from autograd."))
            if s.forward.count != rf.count:
                fails.append(("forward_wrong", f"forward returned {s.forward.count} output(s); expected {rf.count}."))
        if not checked:
            self._result("output_shape_dtype", False, "Not checked: forward did not run.", "forward_error")
        elif fails:
            first = fails[0][0]
            self._result("output_shape_dtype", False, " ".join(dict.fromkeys(m for _, m in fails[:3])), first,
                         other_causes=[c for c in dict.fromkeys(c for c, _ in fails) if c and c != first])
        else:
            self._result("output_shape_dtype", True, "Output shapes, dtypes and differentiability match the reference.")

    def inputs_unchanged(self) -> None:
        checked = 0
        for case in self.cases:
            s = self.sub_cases.get(case.id)
            if not s or not s.forward.ok:
                continue
            checked += 1
            # which inputs forward may return changed (marked dirty) is the reference's answer, not the child's
            returned = self.ref_cases[case.id].returned_inputs
            outcome = checks.inputs_unchanged(case.args, s.forward.inputs_after, self.names, returned)
            if not outcome.passed:
                self._result("inputs_unchanged", False, outcome.message, outcome.likely_cause)
                return
        if not checked:
            self._result("inputs_unchanged", False, "Not checked: forward did not run.", "forward_error")
        else:
            self._result("inputs_unchanged", True, "forward leaves its inputs unchanged.")

    def backward_arity(self) -> None:
        fails: list[tuple[str | None, str, dict[str, Any] | None]] = []
        checked = 0
        for case in self.cases:
            s = self.sub_cases.get(case.id)
            if not s or not s.forward.ok or not case.grad_outputs:
                continue
            r = self.ref_cases[case.id]
            for m, vr in enumerate(s.vjps):
                checked += 1
                if vr.returned is None and vr.error is not None:
                    self._note_error(vr.error)
                    cause = _error_cause(vr.error, "backward", r.forward.count)
                    fails.append((cause, f"backward failed: {vr.error.type}: {vr.error.message}", None))
                    continue
                ref_returned = r.vjps[m].returned
                outcome = checks.backward_arity(case.args, vr.returned, self.names, ref_items=ref_returned.items if ref_returned else (),
                                                strict_none=self.code.strict_none)
                if not outcome.passed:
                    fails.append((outcome.likely_cause, outcome.message, outcome.shapes))
        if not checked:
            self._result("backward_arity", False, "Not checked: forward did not run, so backward could not be called.", "forward_error")
        elif fails:
            first_cause, first_message, shapes = fails[0]
            self._result("backward_arity", False, first_message, first_cause, shapes=shapes)
        else:
            self._result("backward_arity", True, "backward returns one value per input, None where no gradient is taken.")

    def _grads_by_arg(self, case: Case, grads: list[Any]) -> dict[int, list[Any]]:
        out = {}
        for pos, arg_i in enumerate(diff_inputs(case.args)):
            g = grads[pos]
            out[arg_i] = g if g is not None else [0.0] * numel(case.args[arg_i].shape)
        return out

    def gradcheck(self) -> None:
        """The check engine's Jacobian check (torch's gradcheck) on the submission's own numbers, gated
        on its forward matching the reference's at the perturbed points: a self-consistent but wrong
        function earns nothing here."""
        for case in self.cases:
            if case.gradcheck is None:
                continue
            s, r = self.sub_cases.get(case.id), self.ref_cases[case.id]
            if not s or not s.forward.ok:
                self._result("gradcheck", False, "Not checked: forward raised an exception.", "forward_error")
                return
            sgc, rgc = s.gradcheck, r.gradcheck
            assert sgc is not None and rgc is not None  # planned, so reported (reports.parse_report)
            outcome = checks.jacobian(case.args, sgc, case.gradcheck, self.names, label=self._case_label(case),
                                      float32=self._f32(case))
            if outcome.error is not None:
                self._note_error(outcome.error)
            rows_ok = len(sgc.minus) == len(rgc.minus) and len(sgc.plus) == len(rgc.plus)
            gate = rows_ok and all(
                allclose(a, b, self.tol.forward_atol, self.tol.forward_rtol)
                for mine, theirs in ((sgc.minus, rgc.minus), (sgc.plus, rgc.plus)) for a, b in zip(mine, theirs))
            if not gate and outcome.likely_cause != "forward_error":
                also = ("your backward does agree with finite differences of your own forward"
                        if outcome.passed else "your backward does not agree with finite differences of your own forward either")
                cause = "float32_imprecise" if self._f32(case) else "forward_wrong"
                self._result("gradcheck", False, f"gradcheck cannot pass while forward differs from the reference ({also}).", cause)
                return
            if outcome.passed:
                outcome = self._vjps_match_jacobian_rows(case, s)
            if not outcome.passed:
                for d in outcome.diagnostics:
                    self.diagnostics.append(d.to_json(case=case.name))
                tm = self._torch(case).gradcheck
                self._result("gradcheck", False, outcome.message, outcome.likely_cause,
                             torch_message=tm.message if tm and not tm.ok else None)
                return
        self._result("gradcheck", True, "backward agrees with finite differences (gradcheck, float64): the full Jacobian, "
                                        "zero and undefined grad_outputs, reentrancy.")

    def _vjps_match_jacobian_rows(self, case: Case, s: CaseReport) -> checks.Outcome:
        """The VJPs for the judge's secret grad_outputs must be the same linear combinations of the
        Jacobian rows the child reported: Jacobian rows fabricated beside a wrong backward earn nothing."""
        rows = (s.gradcheck.rows if s.gradcheck else None) or []
        diff_in = diff_inputs(case.args)
        tol_a, tol_r = self.tol.gradcheck_atol, self.tol.gradcheck_rtol
        for vset, vr in zip(case.grad_outputs, s.vjps):
            if not vr.ok or len(rows) != len(vset):
                return checks.Outcome(False, "backward failed for the judge's grad_outputs.", "backward_error")
            for pos, i in enumerate(diff_in):
                n = case.args[i].numel
                combined = [checks.fsum(v[e] * ((both[0][e][pos] or [0.0] * n)[j]) for v, both in zip(vset, rows)
                                        for e in range(len(v))) for j in range(n)]
                got = vr.grads[pos] or [0.0] * n
                if not allclose(got, combined, tol_a, tol_r):
                    return checks.Outcome(False, f"backward's gradient for {self.names[i]} for a random grad_output is not "
                                                 "the combination of its own Jacobian rows: backward answers inconsistently.",
                                          "not_reentrant")
        return checks.Outcome(True, "")

    def _compare_vjps(self, check: str, cases: Sequence[Case]) -> tuple[bool, str, str | None, int]:  # noqa: C901
        atol, rtol = self.tol.grad_atol, self.tol.grad_rtol
        compared, fail = 0, None
        for case in cases:
            s, r = self.sub_cases.get(case.id), self.ref_cases[case.id]
            if not case.grad_outputs:
                continue
            if not s or not s.forward.ok:
                return False, "Not checked: forward raised an exception.", "forward_error", compared
            ones_ref = None
            if "ones" in case.grad_output_kinds:
                ones_ref = self._grads_by_arg(case, r.vjps[case.grad_output_kinds.index("ones")].grads)
            for m, kind in enumerate(case.grad_output_kinds):
                vr, rr = s.vjps[m], r.vjps[m]
                if vr.error is not None:
                    self._note_error(vr.error)
                    return (False, f"backward raised {vr.error.type} on {self._case_label(case)}: {vr.error.message}",
                            _error_cause(vr.error, "backward", r.forward.count), compared)
                compared += 1
                ana, exp = self._grads_by_arg(case, vr.grads), self._grads_by_arg(case, rr.grads)
                for arg_i, e in exp.items():
                    a = ana[arg_i]
                    if len(a) != len(e):
                        if fail is None:
                            fail = (f"The gradient for {self.names[arg_i]} has {len(a)} elements; expected {len(e)}.", "wrong_shape")
                        continue
                    if allclose(a, e, atol, rtol):
                        continue
                    if fail is None:
                        cause, info = detect_cause(a, e, ones_ref.get(arg_i) if ones_ref and kind != "ones" else None,
                                                   kind == "ones", atol, rtol, self._f32(case))
                        d = self._diag(check, case, arg_i, a, e, None, atol, rtol, cause, info, kind)
                        extra = f" (about {info['factor']}x the expected value)" if "factor" in info else ""
                        fail = (f"The gradient for {d['input']} at index {d['index']} ({self._case_label(case)}, "
                                f"{'grad_output of ones' if kind == 'ones' else 'random grad_output'}, input value {fmt(d['input_value'])}) "
                                f"is {fmt(d['analytical'])}; expected {fmt(d['expected'])}{extra}.", cause)
        if fail:
            return False, fail[0], fail[1], compared
        return True, "", None, compared

    def gradient(self) -> None:
        cases = [c for c in self.cases if c.kind in ("random", "variant")]
        ok, msg, cause, n = self._compare_vjps("gradient", cases)
        if ok:
            rule = "the derivative" if self.code.differentiable else "the exercise's backward rule"
            self._result("gradient", True, f"backward matches {rule} for {n} random grad_output(s).")
        else:
            self._result("gradient", False, msg, cause)

    def boundary(self) -> None:
        cases = [c for c in self.cases if c.kind == "boundary"]
        ok, msg, cause, n = self._compare_vjps("boundary", cases)
        if ok:
            self._result("boundary", True, f"The gradient is right at the boundary points ({n} check(s)).")
            return
        if self.passed("gradient") and cause not in ("forward_error", "backward_error"):
            cause = "boundary_only"
            for d in self.diagnostics:
                if d["check"] == "boundary":
                    d["likely_cause"], d["hint"] = cause, LIKELY_CAUSES[cause]
        self._result("boundary", False, msg, cause)

    def gradgradcheck(self) -> None:
        """The check engine's double-backward check (torch.autograd.gradgradcheck, fast_mode off: the
        Jacobian of backward's gradients in the inputs and grad_output) on the submission's own
        numbers, gated on its gradients at the perturbed points matching the reference's; its double
        backward for the judge's secret w must match the reference's and combine its own rows."""
        tol_a, tol_r = self.tol.gradcheck_atol, self.tol.gradcheck_rtol
        for case in self.cases:
            if case.gradgrad is None:
                continue
            s, r = self.sub_cases.get(case.id), self.ref_cases[case.id]
            if not s or not s.forward.ok:
                self._result("gradgradcheck", False, "Not checked: forward raised an exception.", "forward_error")
                return
            sg, rg = s.gradgrad, r.gradgrad
            assert sg is not None and rg is not None and rg.numbers is not None  # planned, so reported; the reference's ran
            outcome = checks.gradgradcheck(case.args, sg, case.gradgrad, self.names, label=self._case_label(case))
            if outcome.error is not None:
                self._note_error(outcome.error)
            sn, rn = sg.numbers, rg.numbers
            gate = sn is not None and all(len(mine) == len(theirs) and all(
                allclose(a, b, self.tol.grad_atol + tol_a * 0.1, self.tol.grad_rtol + tol_r * 0.1)
                for a, b in zip(mine, theirs)) for mine, theirs in ((sn.minus, rn.minus), (sn.plus, rn.plus)))
            if not gate and outcome.likely_cause not in ("forward_error", "backward_error"):
                self._result("gradgradcheck", False, "Double backward is checked on a correct first-order backward: "
                                                     "fix backward first.", "wrong_value")
                return
            if outcome.passed:
                outcome = checks.double_backward_product(case.args, sg, rg, case.gradgrad, self.names)
            if not outcome.passed:
                for d in outcome.diagnostics:
                    self.diagnostics.append(d.to_json(case=case.name))
                tm = self._torch(case).gradgradcheck
                self._result("gradgradcheck", False, outcome.message, outcome.likely_cause,
                             torch_message=tm.message if tm and not tm.ok else None)
                return
        self._result("gradgradcheck", True, "Double backward agrees with finite differences of backward (gradgradcheck): "
                                            "the Jacobian of backward's gradients in the inputs and grad_output.")

    def _planned_check(self, name: str, planned: Callable[[Case], bool],
                       decide: Callable[[Case, CaseReport, CaseReport], Outcome], *,
                       none_planned: str = "Not checked: no input could be batched.") -> None:
        """A check made on the cases that plan it, each decided by `decide` (the case, the
        submission's report of it, the reference's): the first failure, or the last pass."""
        passed: Outcome | None = None
        for case in self.cases:
            s = self.sub_cases.get(case.id)
            if not planned(case) or s is None:
                continue
            outcome = decide(case, s, self.ref_cases[case.id])
            if not outcome.passed:
                self._note_error(outcome.error)
                # a grade keeps its diagnostics in one list, with their case (not in the check's item too)
                self.diagnostics.extend(d.to_json(case=case.name) for d in outcome.diagnostics)
                self.outcomes[name] = dataclasses.replace(outcome, diagnostics=())
                return
            passed = outcome
        self.outcomes[name] = passed or Outcome(False, none_planned, "forward_error")

    def forward_ad(self) -> None:
        """Forward mode (forward_ad.py): the submission's jvp against finite differences of its forward
        along the plan's tangents, against its own backward (the dot-product test), and against the
        reference's jvp for the same tangents."""
        self._planned_check("forward_ad", lambda case: case.forward_ad is not None,
                            lambda case, s, r: check_forward_ad(case, s, self.names, ref=r),
                            none_planned="Not checked: no input requires grad.")

    def in_place(self) -> None:
        """In place (in_place.py): the Function on clones inside a bigger expression marks dirty the
        input it changes and returns it, its gradient through the expression is the reference's, and
        a leaf that requires grad is refused. Checked even when forward raised on the plain call."""
        self._planned_check("in_place", lambda case: case.in_place is not None,
                            lambda case, s, r: check_in_place(case, s, self.names, ref=r),
                            none_planned="Not checked: no input requires grad.")

    def vmap(self) -> None:
        """Batching (batching.py): torch.func.vmap of the submission against its calls one by one, and
        each batch entry against the reference's."""
        self._planned_check("vmap", lambda case: case.vmap is not None,
                            lambda case, s, r: batching.check_vmap(case, s, self.names, ref=r))

    def batched_grad(self) -> None:
        """backward for a batch of grad_outputs at once against one at a time (and the reference's)."""
        self._planned_check("batched_grad", lambda case: case.batched_grad is not None,
                            lambda case, s, r: batching.check_batched_grad(case, s, self.names, ref=r))

    def _op_check(self, name: str, decide: Callable[..., Outcome]) -> None:
        """One of opcheck's tests of a custom op, on the cases that plan them (the submission's own facts:
        opcheck tests an op against itself)."""
        self._planned_check(name, lambda case: case.custom_op is not None, lambda case, s, r: decide(case, s, self.names),
                            none_planned="Not checked: opcheck's tests were not planned.")

    def op_schema(self) -> None:
        self._op_check("op_schema", custom_ops.check_op_schema)

    def op_autograd_registration(self) -> None:
        self._op_check("op_autograd_registration", custom_ops.check_op_autograd_registration)

    def op_fake_tensor(self) -> None:
        self._op_check("op_fake_tensor", custom_ops.check_op_fake_tensor)

    def op_aot_dispatch(self) -> None:
        self._op_check("op_aot_dispatch", custom_ops.check_op_aot_dispatch)

    def grad_output_unchanged(self) -> None:
        reports = [s for s in map(self.sub_cases.get, (case.id for case in self.cases)) if s is not None and s.forward.ok]
        vjps = [vr for s in reports for vr in s.vjps if vr.v_changed is not None]
        if not vjps:
            self._result("grad_output_unchanged", False, "Not checked: backward did not run.", "forward_error")
            return
        outcome = checks.grad_output_unchanged(vjps)
        self._result("grad_output_unchanged", outcome.passed, outcome.message, outcome.likely_cause)

    def technique(self) -> None:
        # Read from the source by this (trusted) process: nothing the child reported counts.
        missing = missing_techniques(self.source, self.code.entry_point, list(self.code.technique))
        if missing:
            self._result("technique", False, "The exercise asks for this, and your code does not do it: "
                         + " ".join(TECHNIQUES[t][0] for t in missing), TECHNIQUES[missing[0]][1],
                         other_causes=[TECHNIQUES[t][1] for t in missing[1:]])
        else:
            self._result("technique", True, "Uses " + ", ".join(self.code.technique) + ".")
