"""The reference cache: each exercise version's plan and reference results per learner's variant,
computed once.

Preparing an exercise version for a variant runs its reference.py twice in children of the pool,
sandboxed like a learner's code and under the learner's limits (a course's author wrote it): once forward-only on the drawn inputs (a probe, to learn the outputs' shapes), then on the
completed plan (grad_outputs, finite-difference points). The reference must pass its own grade;
otherwise the exercise (or the grader) is broken and every grade of it raises GraderFault. The
result is cached by the exercise's slug, [code] table and reference source and by the variant
(plan.py: each learner has inputs of their own), in an LRU of bounded size: a learner's first
grade of a version pays for the two reference runs, their next ones do not.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .cases import Case, diff_inputs, task_cases
from .code_table import CodeSpec
from .errors import BadOutput, GraderFault, ReferenceFault, ReferenceProblem
from .plan import base_cases, canonical, complete_cases
from .pool import ChildPool, Slot
from .registry import decide_grade, grade_summary
from .reports import Report, parse_report
from .spec import load_code_spec
from .verdict import Verdict

#: Prepared (exercise version, variant) pairs a judge keeps at most: one per learner and code
#: exercise they work on. The memory they hold is bounded too (DEFAULT_MAX_BYTES): whichever
#: bound is reached first evicts the least recently used.
DEFAULT_SIZE = 4096
DEFAULT_MAX_BYTES = 128 * 1024 * 1024
#: A prepared exercise's memory, estimated from its wire sizes (task prefix and reference report,
#: as JSON): about 16 KiB of objects plus 3 bytes of Python objects per byte of JSON, measured
#: with tracemalloc over the catalog's code exercises (33-91 KiB each).
ENTRY_OVERHEAD, BYTES_PER_WIRE_BYTE = 16 * 1024, 3


@dataclass(frozen=True)
class PreparedExercise:
    """What grading one version of an exercise needs, computed once."""

    code: CodeSpec
    cases: list[Case]
    #: the task frame up to the learner's source (spliced in per grade, see judge.py)
    task_prefix: bytes
    reference_report: Report
    reference_ms: float
    #: estimated bytes held (ENTRY_OVERHEAD, BYTES_PER_WIRE_BYTE)
    footprint: int = 0


class ReferenceCache:
    """Thread-safe: one preparation per exercise version and variant at a time, others wait for it.

    Keeps at most `size` prepared exercises and about `max_bytes` of them (the newest is always
    kept), evicting the least recently used."""

    def __init__(self, pool: ChildPool, secret: bytes, *, size: int = DEFAULT_SIZE,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._pool = pool
        self._secret = secret
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._cache: OrderedDict[tuple[str, str | None], PreparedExercise] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[tuple[str, str | None], threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def footprint(self) -> int:
        """The estimated bytes the kept preparations hold."""
        return self._bytes

    def get(self, exercise: dict[str, Any], slot: Slot, variant: str | None = None) -> tuple[PreparedExercise, bool]:
        """The prepared exercise ({"slug", "spec", "files"}) for the learner's `variant` (None: the
        shared cases), and whether it was built just now."""
        spec, files, slug = exercise["spec"], exercise["files"], exercise["slug"]
        reference = files.get("reference.py")
        version = hashlib.sha256(canonical({"slug": slug, "code": spec.get("code"), "reference": reference}).encode()).hexdigest()
        key = (version, variant)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit, False
            lock = self._building.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._cache:
                    return self._cache[key], False
            try:
                prepared = self._build(slug, spec, reference, slot, variant)
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self._cache[key] = prepared
                self._bytes += prepared.footprint
                while len(self._cache) > 1 and (len(self._cache) > self._size or self._bytes > self._max_bytes):
                    self._bytes -= self._cache.popitem(last=False)[1].footprint
            return prepared, True

    def _reference_run(self, slot: Slot, source: str, entry_point: str, cases: list[Case], limit: float,
                       memory_mb: int) -> Any:
        """The reference's report on `cases`. The reference is author code: it runs in a child of the
        sandbox like a learner's, with the learner's wall-clock and memory limits."""
        task = json.dumps({"op": "grade", "source": source, "entry_point": entry_point, "module_name": "reference",
                           "memory_mb": memory_mb, "cases": task_cases(cases)}, separators=(",", ":")).encode()
        session, _, _ = self._pool.execute(task, limit, slot)
        try:
            if not session.frames:
                reason = "timed out" if session.timed_out else (session.bad or "ended without a result")
                out = session.finish()
                raise GraderFault(f"reference run {reason}; stderr: {out['stderr'][-2000:]}")
            return session.frames[0]
        finally:
            if not session.child.closed:
                session.finish()

    def _build(self, slug: str, spec: dict[str, Any], reference: str | None, slot: Slot,
               variant: str | None) -> PreparedExercise:
        t0 = time.perf_counter()
        code, problems = load_code_spec(spec)
        if code is None:
            raise GraderFault(f"exercise {slug}: invalid [code] table: {problems[:3]}")
        if not reference:
            raise GraderFault(f"exercise {slug}: no reference.py")
        ep = code.entry_point
        cases0 = base_cases(code, self._secret, slug, variant)
        limit, memory_mb = min(code.timeout, self._pool.timeout), min(code.memory_mb, self._pool.memory_mb)
        probe = _check_reference(slug, self._reference_run(slot, reference, ep, cases0, limit, memory_mb), cases0)
        cases = complete_cases(code, cases0, probe, self._secret, slug, variant=variant)
        ref_frame = self._reference_run(slot, reference, ep, cases, limit, memory_mb)
        ref = _check_reference(slug, ref_frame, cases)
        verdict = _check_reference_passes(slug, code, cases, ref, reference)
        _check_expected_gradients(slug, code, cases, verdict)
        cases_json = json.dumps(task_cases(cases), separators=(",", ":"))
        prefix = (f'{{"op":"grade","entry_point":{json.dumps(ep)},"module_name":"submission","torch_checks":"wait",'
                  f'"memory_mb":{memory_mb},"cases":{cases_json},"source":').encode()
        footprint = ENTRY_OVERHEAD + BYTES_PER_WIRE_BYTE * (len(prefix) + len(json.dumps(ref_frame, separators=(",", ":"))))
        return PreparedExercise(code, cases, prefix, ref, round((time.perf_counter() - t0) * 1000.0, 3), footprint)


def _check_reference(slug: str, frame: Any, cases: list[Case]) -> Report:
    """The reference's report, well formed and with nothing in it raised."""
    try:
        rep = parse_report(frame, cases)
    except BadOutput as exc:
        raise GraderFault(f"exercise {slug}: reference report invalid: {exc}") from exc
    if rep.load_error is not None:
        message = f"reference.py raised on load: {rep.load_error.message}"
        raise ReferenceFault(slug, message, [ReferenceProblem("(load)", message, rep.load_error.line)])
    if rep.entry is None or not rep.entry.runs:
        raise ReferenceFault(slug, "reference.py lacks the entry point",
                             [ReferenceProblem("(entry point)", "reference.py lacks the entry point")])
    for c in rep.cases:
        errors = [("forward", c.forward.error), *(("backward", vr.error) for vr in c.vjps),
                  ("gradcheck", c.gradcheck.error if c.gradcheck and not c.gradcheck.ok else None),
                  ("gradgrad", c.gradgrad.error if c.gradgrad else None)]
        for what, error in errors:
            if error is not None:
                message = f"reference {what} raised on {c.id}: {error.message}"
                raise ReferenceFault(slug, message, [ReferenceProblem(f"({what})", message, error.line)])
    return rep


def _check_reference_passes(slug: str, code: CodeSpec, cases: list[Case], ref: Report, reference: str) -> Verdict:
    """The reference graded against itself scores 1, or the exercise is broken."""
    verdict = decide_grade(Verdict(code, cases, ref, ref, source=reference))
    summary = grade_summary(code, verdict.outcomes, verdict.diagnostics, "")
    if summary.score < 1.0:
        failed = [ReferenceProblem(f"check {c.name}", c.outcome.message) for c in summary.checks if not c.passed]
        texts = [f"{p.field.removeprefix('check ')}: {p.message}" for p in failed]
        raise ReferenceFault(slug, f"the reference fails its own checks: {texts[:3]}", failed)
    return verdict


def _check_expected_gradients(slug: str, code: CodeSpec, cases: list[Case], verdict: Verdict) -> None:
    """A boundary case's `expected_grad` (the table's word on the gradient) is what the reference gives."""
    names = code.input_names
    for case in cases:
        eg = case.expected_grad
        if not eg or "ones" not in case.grad_output_kinds:
            continue
        rv = verdict.ref_cases[case.id].vjps[case.grad_output_kinds.index("ones")].grads
        for pos, arg_i in enumerate(diff_inputs(case.args)):
            want = eg.get(names[arg_i])
            if want is not None and rv[pos] != want and not all(abs(a - b) <= 1e-9 for a, b in zip(rv[pos] or [], want)):
                message = f"the reference's gradient {rv[pos]} at {case.name!r} differs from expected_grad {want}"
                raise ReferenceFault(slug, message, [ReferenceProblem(_expected_grad_field(case, names[arg_i]), message)])


def _expected_grad_field(case: Case, input_name: str | None) -> str:
    """The field of exercise.toml a boundary case's expected gradient is written in (plan.py names
    the j-th [[code.boundary]] case `boundary-<j + 1>`)."""
    number = case.id.removeprefix("boundary-")
    where = f"code.boundary[{int(number) - 1}]" if number.isdigit() else "code.boundary"
    return f"{where}.expected_grad.{input_name}"
