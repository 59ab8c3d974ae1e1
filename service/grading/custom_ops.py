"""The judge's decisions for an entry point made with torch.library.custom_op: torch.library.opcheck's
four tests (torch 2.13, torch/testing/_internal/optests), each decided here from the facts and
numbers the child reports (harness._op_checks, parsed by reports._custom_op), in the learner's words.

- ``check_op_schema`` (opcheck's test_schema, SchemaCheckMode): an input the op changes must be
  declared in mutates_args; no output may be an input, share an input's memory, or share another
  output's memory. An input counts as changed as opcheck counts it: its values are no longer
  torch.allclose to what they were (NaN equal to NaN), or its shape, strides or storage changed;
  one written in place with its values unchanged passes, with a note.
- ``check_op_autograd_registration`` (opcheck's test_autograd_registration): no output may require
  grad through anything but a kernel at an autograd key (opcheck's test proper; a custom op always
  has one). Stricter than opcheck, which passes every custom op here: it also fails an op whose
  outputs require grad with no formula registered (register_autograd forgotten: backward raises;
  opcheck fails such an op in test_aot_dispatch_dynamic only), and a setup_context that raises or
  leaves backward without what it reads.
- ``check_op_fake_tensor`` (opcheck's test_faketensor, CrossRefFakeMode): the op has a fake kernel,
  and below autograd its outputs on fake tensors have the real outputs' number, requires_grad,
  storage offset, shape (a symbolic size matches any), dtype, device, strides (of dimensions longer
  than 1), conj and neg bits, and the same aliasing facts.
- ``check_op_aot_dispatch`` (opcheck's test_aot_dispatch_dynamic, aot_autograd_check): eager mode
  runs (forward and backward), AOTAutograd with dynamic shapes runs, and its outputs and the
  gradients of sum(|sum(output)|) match eager's as torch.testing.assert_close matches them (its
  default tolerances per dtype unless the plan gives atol and rtol; NaN never equal).

Each takes ``(case, rep, names, *, ref=None)`` and returns a ``checks.Outcome``; `ref`, the
reference's report in a grade, is not read: what opcheck tests is the submission's own
registration, against itself. Torch-free.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace

from .cases import Arg, Case, diff_inputs
from .checks import Outcome, close, fmt
from .reports import CaseReport, ChildError, CustomOpReport, OpCall, OpRun, OpValue, TensorMeta

#: The checks of a custom op, in opcheck's order, by their names in terms.CHECKS.
#: What a judge that does not run custom ops (GRADING_CUSTOM_OPS off) answers code that defines one.
CUSTOM_OPS_OFF = ("this server does not run torch.library custom ops (its GRADING_CUSTOM_OPS setting is off): "
                  "write a torch.autograd.Function, or ask the course's staff")
OP_CHECKS = ("op_schema", "op_autograd_registration", "op_fake_tensor", "op_aot_dispatch")

#: torch.testing.assert_close's default (rtol, atol) by dtype; integers and bool exactly.
ASSERT_CLOSE_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
#: SchemaCheckMode's rule for "mutated": torch.allclose's defaults (NaN equal to NaN).
SCHEMA_RTOL, SCHEMA_ATOL = 1e-5, 1e-8


def defines_custom_op(source: str) -> bool:
    """Whether the code makes a custom op with torch.library.custom_op (called or as a decorator):
    a run plans opcheck's facts then (the child reports them only if the entry point is one)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "custom_op") or (isinstance(f, ast.Name) and f.id == "custom_op"):
                return True
    return False


def op_checks(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> dict[str, Outcome]:
    """Every planned check of a custom op's case, by name, in opcheck's order."""
    plan = case.custom_op
    if plan is None:
        return {}
    fns = {"schema": ("op_schema", check_op_schema),
           "autograd_registration": ("op_autograd_registration", check_op_autograd_registration),
           "fake_tensor": ("op_fake_tensor", check_op_fake_tensor), "aot_dispatch": ("op_aot_dispatch", check_op_aot_dispatch)}
    return {fns[t][0]: fns[t][1](case, rep, names, ref=ref) for t in ("schema", "autograd_registration", "fake_tensor",
                                                                      "aot_dispatch") if t in plan.tests}


def with_op_causes(outcomes: dict[str, Outcome], co: CustomOpReport | None) -> dict[str, Outcome]:
    """The gradient checks' outcomes of a custom op in its own terms: with no autograd formula
    registered, backward through the op raises (or is never reached), and that is the cause."""
    if co is None or co.op.has_autograd:
        return outcomes
    out = dict(outcomes)
    for name, o in outcomes.items():
        if name in OP_CHECKS or o.passed or o.likely_cause not in ("backward_error", "output_detached"):
            continue
        message = o.message
        if name == "backward_arity":
            message = "backward was never called: your op has no autograd formula (register_autograd)."
        out[name] = replace(o, message=message, likely_cause="op_no_autograd_formula",
                            diagnostics=tuple(replace(d, likely_cause="op_no_autograd_formula") for d in o.diagnostics))
    return out


# --------------------------------------------------------------------------- shared


def _name(names: Sequence[str], i: int) -> str:
    return names[i] if 0 <= i < len(names) else f"input {i}"


def _out(k: int, n: int) -> str:
    return "the output" if n == 1 else f"output {k}"


def _report(rep: CaseReport, test: str) -> tuple[CustomOpReport | None, Outcome | None]:
    """The custom op's report, or the Outcome saying why the test's facts are missing."""
    co = rep.custom_op
    if co is None:
        return None, Outcome(False, "Not checked: the custom op's facts were not reported.")
    err = co.failed.get(test)
    if err is not None:
        return None, Outcome(False, f"Not checked: the grader could not collect the facts ({err.type}: {err.message}).",
                             error=err)
    return co, None


def _saving_error(err: ChildError | None) -> bool:
    """An exception autograd raises after setup_context returned, about what it saved."""
    return err is not None and ("save_for_backward" in err.message or "saved_tensors" in err.message)


def _error_cause(call: OpCall | OpRun, co: CustomOpReport, *, compiled: bool = False) -> str:
    """The likely cause of an exception raised by the op or one of its parts."""
    role, err = call.role, call.error
    if role == "setup_context" or _saving_error(err):
        return "op_setup_context_error"
    if role == "fake kernel":
        return "op_fake_kernel_error"
    if err is not None and "no fake impl" in err.message and not co.op.has_fake:
        return "op_no_fake_kernel"
    if err is not None and "no autograd formula" in err.message and not co.op.has_autograd:
        return "op_no_autograd_formula"
    if err is not None and "must not also be an input" in err.message:
        return "op_output_aliases_input"
    if compiled:
        return "op_not_traceable"
    if role == "backward" or (isinstance(call, OpRun) and call.stage == "backward"):
        return "backward_error"
    return "forward_error"


def _raised(call: OpCall | OpRun, what: str, co: CustomOpReport, *, compiled: bool = False) -> Outcome:
    err = call.error or ChildError("op call", "Exception", "(no message)", "", None)
    who = {"implementation": "your op's function", "fake kernel": "your fake kernel", "setup_context": "your setup_context",
           "backward": "your backward"}.get(call.role or "", "your op")
    return Outcome(False, f"{what}, {who} raised {err.type}: {err.message}", _error_cause(call, co, compiled=compiled),
                   error=err)


# --------------------------------------------------------------------------- schema


def _mutated(arg: Arg, resized: bool, storage_changed: bool, values: list[float] | None, close_fact: bool) -> bool:
    """SchemaCheckMode's has_mutated, from the values before (the plan's) and after (the child's)."""
    if resized or storage_changed:
        return True
    if values is None:
        return not close_fact
    if len(values) != len(arg.values):
        return True
    for a, b in zip(values, arg.values):
        if a != a and b != b:  # NaN equal to NaN
            continue
        if not close(float(a), float(b), SCHEMA_ATOL, SCHEMA_RTOL):
            return True
    return False


def check_op_schema(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:  # noqa: C901
    """opcheck's test_schema: what the op did to its inputs against what its schema declares, and
    whether its outputs are new tensors."""
    co, missing = _report(rep, "schema")
    if co is None or co.schema is None:
        return missing or Outcome(False, "Not checked: the schema's facts were not reported.")
    f, op = co.schema, co.op
    if f.implementation is not None:  # the op raised, and so did the learner's function called alone
        return _raised(f.call, "Called on your inputs", co)
    n_out = len(f.outputs)
    for k, o in enumerate(f.outputs):
        if o.is_input is not None:
            return Outcome(False, f"{_out(k, n_out).capitalize()} of your op is its input {_name(names, o.is_input)} "
                                  "itself: a custom op must return new tensors (return a clone).",
                           "op_output_aliases_input", error=f.call.error)
        if o.aliases:
            return Outcome(False, f"{_out(k, n_out).capitalize()} of your op shares memory with its input "
                                  f"{_name(names, o.aliases[0])} (it is a view of it): a custom op must return new "
                                  "tensors (return a clone).", "op_output_aliases_input", error=f.call.error)
    if f.outputs_alias_each_other:
        return Outcome(False, "Two outputs of your op share memory: each output of a custom op must be a new tensor.",
                       "op_output_aliases_input", error=f.call.error)
    rewritten = []
    changed_declared = []
    for it in f.inputs:
        schema_name = op.args[it.arg] if it.arg < len(op.args) else _name(names, it.arg)
        declared = schema_name in op.mutates_args
        if _mutated(case.args[it.arg], it.resized, it.storage_changed, it.values, it.close):
            if not declared:
                how = "resizes" if it.resized else "replaces the memory of" if it.storage_changed else "changes the values of"
                who = _name(names, it.arg)
                who += f" ({schema_name} in its schema)" if schema_name != who else ""
                declared_list = ", ".join(op.mutates_args) or "none"
                return Outcome(False, f"Your op {how} its input {who}, but its schema does not declare that input "
                                      f"mutated (mutates_args declares: {declared_list}).", "op_undeclared_mutation")
            changed_declared.append(_name(names, it.arg))
        elif it.version_bumped and not declared:
            rewritten.append(_name(names, it.arg))
    if not f.call.ok:  # nothing wrong in what the function does alone: the op itself raised
        return _raised(f.call, "Called on your inputs", co)
    declared_note = (f" It changes {', '.join(changed_declared)}, as its schema declares." if changed_declared else "")
    note = (f" (It writes into {', '.join(rewritten)} in place, leaving the values as they were: opcheck accepts "
            "this, but declare it in mutates_args or write into a new tensor.)" if rewritten else "")
    return Outcome(True, "Your op changes no input its schema does not declare, and returns new tensors."
                         + declared_note + note)


# --------------------------------------------------------------------------- autograd registration


def check_op_autograd_registration(case: Case, rep: CaseReport, names: Sequence[str], *,
                                   ref: CaseReport | None = None) -> Outcome:
    """opcheck's test_autograd_registration, and (stricter) that gradients can flow through the op:
    a formula is registered and setup_context saves what backward reads."""
    co, missing = _report(rep, "autograd_registration")
    if co is None or co.autograd_registration is None:
        return missing or Outcome(False, "Not checked: the autograd facts were not reported.")
    f, op = co.autograd_registration, co.op
    if f.skipped:
        return Outcome(True, "Not checked: no input requires grad (opcheck skips this test too).")
    if not f.autograd_kernel and f.fallback_outputs_rg:
        return Outcome(False, "Your op's outputs require grad, but no autograd formula is registered for it: autograd "
                              "is wired inside the op's implementation.", "op_autograd_wrong_key")
    if f.call is not None and not f.call.ok:
        if f.call.role == "setup_context" or _saving_error(f.call.error):
            return _raised(f.call, "Called on inputs that require grad", co)
        return Outcome(True, "Not checked further: your op raised before gradients could flow (see the op's other checks).")
    if not op.has_autograd and any(f.outputs_rg):
        return Outcome(False, "Your op's outputs require grad, but no autograd formula is registered: backward through "
                              "the op raises. Register one with register_autograd.", "op_no_autograd_formula",
                       error=f.backward.error if f.backward is not None else None)
    b = f.backward
    if b is not None and not b.ok:
        err = b.error
        if f.ctx_attribute:
            return Outcome(False, f"Your backward reads ctx.{f.ctx_attribute}, which setup_context did not set.",
                           "op_setup_context_error", error=err)
        if b.role == "setup_context" or (err is not None and err.type == "ValueError" and "unpack" in err.message
                                         and f.saved == 0):
            return Outcome(False, "Your backward unpacks ctx.saved_tensors, but setup_context saved no tensor"
                                  + (f" ({err.type}: {err.message})." if err else "."), "op_setup_context_error", error=err)
    formula = "backward and setup_context" if op.has_setup_context else "backward"
    return Outcome(True, f"Gradients flow through your op: its {formula} are registered with register_autograd, and "
                         "its outputs require grad when its inputs do.")


# --------------------------------------------------------------------------- fake tensors


def _dims(dims: Sequence[int | None]) -> list[int | str]:
    return [d if d is not None else "?" for d in dims]


def _stride_mismatch(real: TensorMeta, fake: TensorMeta) -> int | None:
    """check_significant_strides (on every device): the first dimension longer than 1 whose strides
    differ, in a tensor with elements (a symbolic fake stride matches any)."""
    numel = 1
    for d in real.shape:
        numel *= d or 0
    if numel == 0:
        return None
    for i, (size, rs, fs) in enumerate(zip(real.shape, real.strides, fake.strides)):
        if fs is not None and size is not None and size > 1 and rs != fs:
            return i
    return None


def _meta_mismatch(real: TensorMeta, fake: TensorMeta) -> tuple[str, str] | None:
    """What differs, as opcheck's _check_fake_real_tensors and compare_tensor_meta look, in their
    order: (the field, the sentence's words)."""
    if real.requires_grad != fake.requires_grad:
        return "requires_grad", (f"requires grad on fake tensors ({fake.requires_grad}) and on real ones "
                                 f"({real.requires_grad}) differently")
    if real.storage_offset is not None and real.storage_offset != fake.storage_offset:
        return "storage offset", f"starts at storage offset {fake.storage_offset}; the real one at {real.storage_offset}"
    if len(real.shape) != len(fake.shape) or any(f is not None and f != r for r, f in zip(real.shape, fake.shape)):
        return "shape", f"has shape {_dims(fake.shape)}; the real one has shape {_dims(real.shape)}"
    if real.dtype != fake.dtype:
        return "dtype", f"has dtype {fake.dtype}; the real one has dtype {real.dtype}"
    if real.device != fake.device:
        return "device", f"is on {fake.device}; the real one is on {real.device}"
    i = _stride_mismatch(real, fake)
    if i is not None:
        return "strides", (f"has strides {_dims(fake.strides)}; the real one has strides {_dims(real.strides)} "
                           f"(dimension {i} differs: a different memory layout)")
    if real.conj != fake.conj or real.neg != fake.neg:
        return "conj", "has a different conjugate or negative bit than the real one"
    return None


def check_op_fake_tensor(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:  # noqa: C901
    """opcheck's test_faketensor: the op's outputs on fake tensors against its real outputs."""
    co, missing = _report(rep, "fake_tensor")
    if co is None or co.fake_tensor is None:
        return missing or Outcome(False, "Not checked: the fake-tensor facts were not reported.")
    f, op = co.fake_tensor, co.op
    if not op.has_meta:
        return Outcome(True, "Not checked: your op has no fake or meta kernel at all (opcheck skips this test then).")
    fake = f.fake
    if not f.seen or fake is None:
        if not f.call.ok:
            return _raised(f.call, "Called on your inputs", co)
        return Outcome(True, "Not checked: your op never reached the dispatcher below autograd.")
    if not fake.ok:
        err = fake.error
        if not op.has_fake and not op.trivial_fake:
            return Outcome(False, "Your op has no fake kernel: torch.compile cannot trace it. Register one with "
                                  "register_fake.", "op_no_fake_kernel", error=err)
        return Outcome(False, f"On fake tensors, your fake kernel raised {err.type if err else 'an exception'}"
                              + (f": {err.message}" if err else "."), "op_fake_kernel_error", error=err)
    if fake.unsupported:
        return Outcome(True, "Not checked: the inputs cannot be made fake tensors (opcheck skips them too).")
    real = f.real
    if real is None:
        return _raised(f.call, "Called on your inputs", co)
    if fake.count != real.count:
        return Outcome(False, f"Your fake kernel returns {fake.count} output(s); the op returns {real.count}.",
                       "op_fake_wrong_metadata")
    for label, attr in (("shares memory with an input", "alias_inputs"), ("is an input", "are_inputs"),
                        ("has outputs sharing memory", "alias_each_other")):
        if getattr(fake, attr) != getattr(real, attr):
            fake_says = "does" if getattr(fake, attr) else "does not"
            real_says = "does" if getattr(real, attr) else "does not"
            return Outcome(False, f"On fake tensors your op's output {fake_says} say it {label}; the real op {real_says}.",
                           "op_output_aliases_input" if getattr(real, attr) else "op_fake_wrong_metadata")
    n = real.count
    for k, (r, fk) in enumerate(zip(real.outputs, fake.outputs)):
        if (r.kind == "tensor") != (fk.kind == "tensor"):
            return Outcome(False, f"Your fake kernel's {_out(k, n)} is {'a tensor' if fk.kind == 'tensor' else 'not a tensor'}; "
                                  f"the op's is {'a tensor' if r.kind == 'tensor' else 'not a tensor'}.", "op_fake_wrong_metadata")
        if r.kind != "tensor":
            continue
        bad = _meta_mismatch(r, fk)
        if bad is not None:
            return Outcome(False, f"On fake tensors, your op's {_out(k, n).replace('the ', '')} {bad[1]}.",
                           "op_fake_wrong_metadata")
    if not f.call.ok:  # the outputs agree, but the call failed afterwards (autograd, after setup_context): opcheck fails too
        return _raised(f.call, "Called on your inputs", co)
    return Outcome(True, f"Your fake kernel describes the op's {n} output(s) exactly: shape, dtype, device and strides.")


# --------------------------------------------------------------------------- AOT dispatch


def _tolerance(dtype: str, atol: float | None, rtol: float | None) -> tuple[float, float]:
    if atol is not None and rtol is not None:
        return atol, rtol
    r, a = ASSERT_CLOSE_TOLERANCES.get(dtype, (0.0, 0.0))
    return a, r


def _compare(actual: OpValue | None, expected: OpValue | None, what: str, atol: float | None,
             rtol: float | None) -> tuple[str, bool] | None:
    """torch.testing.assert_close(actual, expected) on one value: the difference in words, and
    whether it is only that the values were too large to send (None: equal)."""
    if actual is None or expected is None:
        if actual is None and expected is None:
            return None
        return f"{what} is {'undefined' if actual is None else 'defined'} compiled, {'undefined' if expected is None else 'defined'} eagerly", False
    if actual.kind != expected.kind:
        return f"{what} is {'a tensor' if actual.kind == 'tensor' else 'not a tensor'} compiled, but not eagerly", False
    if actual.kind != "tensor":
        if actual.value != expected.value:
            return f"{what} is {fmt(actual.value)} compiled and {fmt(expected.value)} eagerly", False
        return None
    return _compare_tensors(actual, expected, what, atol, rtol)


def _compare_tensors(actual: OpValue, expected: OpValue, what: str, atol: float | None,
                     rtol: float | None) -> tuple[str, bool] | None:
    if actual.shape != expected.shape:
        return f"{what} has shape {actual.shape} compiled and {expected.shape} eagerly", False
    if actual.dtype != expected.dtype:
        return f"{what} has dtype {actual.dtype} compiled and {expected.dtype} eagerly", False
    if actual.values is None or expected.values is None:
        return f"{what} has too many elements to compare in one run", True
    a_tol, r_tol = _tolerance(expected.dtype, atol, rtol)
    for j, (a, e) in enumerate(zip(actual.values, expected.values)):
        if not close(a, e, a_tol, r_tol):
            return (f"{what} differs at element {j}: {fmt(a)} compiled, {fmt(e)} eagerly (assert_close's tolerance: atol "
                    f"{a_tol:g}, rtol {r_tol:g})"), False
    return None


def _fake_cause(co: CustomOpReport) -> str | None:
    """What the fake-tensor facts say is wrong with the fake kernel, if anything (AOTAutograd traces
    with it, so a compiled failure is often its doing)."""
    f = co.fake_tensor
    if f is None or f.fake is None:
        return None
    if not f.fake.ok:
        return "op_no_fake_kernel" if not co.op.has_fake and not co.op.trivial_fake else "op_fake_kernel_error"
    if f.real is not None and (f.fake.count != f.real.count or any(
            r.kind == "tensor" and fk.kind == "tensor" and _meta_mismatch(r, fk) is not None
            for r, fk in zip(f.real.outputs, f.fake.outputs))):
        return "op_fake_wrong_metadata"
    return None


def check_op_aot_dispatch(case: Case, rep: CaseReport, names: Sequence[str], *, ref: CaseReport | None = None) -> Outcome:  # noqa: C901
    """opcheck's test_aot_dispatch_dynamic: outputs and gradients traced by AOTAutograd (dynamic
    shapes, no compiler) against eager mode's."""
    co, missing = _report(rep, "aot_dispatch")
    if co is None or co.aot_dispatch is None:
        return missing or Outcome(False, "Not checked: the compiled run's numbers were not reported.")
    f, plan = co.aot_dispatch, case.custom_op
    atol, rtol = (plan.atol, plan.rtol) if plan is not None else (None, None)
    eager = f.eager
    if not eager.ok:
        what = "Run eagerly" if eager.stage == "forward" else "Differentiated eagerly (backward of sum(|sum(output)|))"
        return _raised(eager, what, co)
    aot = f.aot
    if aot is None:
        return Outcome(False, "Not checked: the compiled run's numbers were not reported.")
    if not aot.ok:
        out = _raised(aot, "Traced as torch.compile traces it (AOTAutograd, dynamic shapes)", co, compiled=True)
        fake = _fake_cause(co) if out.likely_cause in ("op_not_traceable", "backward_error", "forward_error") else None
        if fake == "op_fake_wrong_metadata":  # the trace ran on what the fake kernel said the outputs are
            return Outcome(False, out.message + " (the trace runs on your fake kernel's outputs, which do not match the "
                                                "real ones: see the fake kernel's check)", fake, error=out.error)
        return Outcome(False, out.message, fake or out.likely_cause, error=out.error)
    if aot.count != eager.count:
        return Outcome(False, f"Compiled, your op returns {aot.count} output(s); eagerly, {eager.count}.",
                       _fake_cause(co) or "op_compiled_differs")
    diff_in = diff_inputs(case.args)
    for k, (a, e) in enumerate(zip(aot.outputs, eager.outputs)):
        bad = _compare(a, e, _out(k, eager.count).capitalize(), atol, rtol)
        if bad is not None:
            if bad[1]:
                return Outcome(False, f"Not checked: {bad[0]}. Use smaller inputs.")
            return Outcome(False, f"{bad[0]}.", _fake_cause(co) or "op_compiled_differs")
    if f.check_gradients:
        for pos, (ga, ge) in enumerate(zip(aot.grads or (), eager.grads or ())):
            who = _name(names, diff_in[pos]) if pos < len(diff_in) else f"input {pos}"
            bad = _compare(ga, ge, f"The gradient for {who}", atol, rtol)
            if bad is not None:
                if bad[1]:
                    return Outcome(False, f"Not checked: {bad[0]}. Use smaller inputs.")
                return Outcome(False, f"{bad[0]} (gradients of sum(|sum(output)|)).", _fake_cause(co) or "op_compiled_differs")
    grads = " and gradients" if f.check_gradients else ""
    return Outcome(True, f"Traced as torch.compile traces it (AOTAutograd, dynamic shapes), your op computes the same "
                         f"outputs{grads} as eagerly.")
