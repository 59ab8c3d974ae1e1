"""The reference cache: each exercise version's plan and reference results per learner's variant,
computed once.

Preparing an exercise version for a variant runs its reference.py twice in children of the pool,
sandboxed like a learner's code and under the learner's limits (a course's author wrote it): once forward-only on the drawn inputs (a probe, to learn the outputs' shapes), then on the
completed plan (grad_outputs, finite-difference points). The reference must pass its own grade;
otherwise the exercise (or the grader) is broken and every grade of it raises GraderFault. The
result is cached by the exercise's slug, [code] table and reference source and by the variant
(plan.py: each learner has inputs of their own), in an LRU of bounded size: a learner's first
grade of a version pays for the two reference runs, their next ones do not.

A preparation can also be stored (`StoredReference`: the two reports as the children sent them)
and given back to another judge, or to this one after a restart: rebuilding from it runs no child.
The grading workers store one per learner and code exercise version, made before the learner's
first grade (service/services/preparations.py), so a class's first grades at a deadline cost what
their later ones do.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
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
#: The form of a stored preparation: part of its key. Bump it when a reference's report changes
#: what it holds (harness.py, reports.py) in a way parsing would not refuse; cases drawn otherwise
#: (plan.py, another Python) are caught by the stored cases' digest.
STORED_FORMAT = 1
#: A prepared exercise's memory, estimated from its wire sizes (task prefix and reference report,
#: as JSON): about 16 KiB of objects plus 3 bytes of Python objects per byte of JSON, measured
#: with tracemalloc over the catalog's code exercises (33-91 KiB each).
ENTRY_OVERHEAD, BYTES_PER_WIRE_BYTE = 16 * 1024, 3
#: Exercise versions whose loaded [code] table is kept (one per version, shared by its variants).
CODE_TABLES_KEPT = 256


@dataclass(frozen=True)
class StoredReference:
    """A preparation as it is stored: the reference's two reports (the probe's and the full run's),
    as the sandboxed children sent them, under the key of the exercise version, the variant and the
    judge's secret they were made with (a report made under another secret, version or variant is
    never used: its inputs would not be this grade's)."""

    key: str
    #: the digest of the cases the reports answer (cases_digest): a rebuild whose cases are not
    #: these (drawn by other code) runs the reference again rather than pair them wrongly
    cases: str
    probe: Any
    reference: Any
    reference_ms: float

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "cases": self.cases, "probe": self.probe, "reference": self.reference,
                "reference_ms": self.reference_ms}

    @classmethod
    def from_json(cls, value: Any) -> StoredReference | None:
        """The stored value, or None when it is not one (an older or damaged row: prepared again)."""
        if not (isinstance(value, dict) and isinstance(value.get("key"), str) and isinstance(value.get("cases"), str)
                and isinstance(value.get("reference_ms"), (int, float))):
            return None
        return cls(value["key"], value["cases"], value.get("probe"), value.get("reference"), float(value["reference_ms"]))


def cases_digest(cases: list[Case]) -> str:
    """The cases a reference ran on, inputs, grad_outputs and plans, as they are sent to a child."""
    return hashlib.sha256(json.dumps(task_cases(cases), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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
    #: what to store to rebuild it without running the reference: set on the preparation the
    #: reference just ran for, as get() returns it (the cache keeps it without)
    stored: StoredReference | None = None


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
        self._code_tables: OrderedDict[str, CodeSpec] = OrderedDict()

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def footprint(self) -> int:
        """The estimated bytes the kept preparations hold."""
        return self._bytes

    @staticmethod
    def _version(exercise: dict[str, Any]) -> str:
        """An exercise version by what grading it reads: its slug, [code] table and reference."""
        spec, slug = exercise["spec"], exercise["slug"]
        return canonical({"slug": slug, "code": spec.get("code"), "reference": exercise["files"].get("reference.py")})

    def key(self, exercise: dict[str, Any], variant: str | None) -> str:
        """The name of an exercise version's preparation for a variant under this judge's secret and
        stored form: what a StoredReference must carry to be used here."""
        return hmac.new(self._secret, canonical({"stored reference": self._version(exercise), "variant": variant,
                                                 "format": STORED_FORMAT}).encode(), hashlib.sha256).hexdigest()

    def _code_table(self, exercise: dict[str, Any]) -> CodeSpec:
        """The version's [code] table, loaded once per version (every variant of it shares it)."""
        version = self._version(exercise)
        with self._lock:
            code = self._code_tables.get(version)
            if code is not None:
                self._code_tables.move_to_end(version)
                return code
        code, problems = load_code_spec(exercise["spec"])
        if code is None:
            raise GraderFault(f"exercise {exercise['slug']}: invalid [code] table: {problems[:3]}")
        with self._lock:
            self._code_tables[version] = code
            while len(self._code_tables) > CODE_TABLES_KEPT:
                self._code_tables.popitem(last=False)
        return code

    def has(self, exercise: dict[str, Any], variant: str | None) -> bool:
        """Whether the preparation is in memory (a grade of it runs no reference and reads nothing)."""
        with self._lock:
            return (self.key(exercise, variant), variant) in self._cache

    def get(self, exercise: dict[str, Any], slot: Slot, variant: str | None = None,
            stored: StoredReference | None = None) -> tuple[PreparedExercise, bool]:
        """The prepared exercise ({"slug", "spec", "files"}) for the learner's `variant` (None: the
        shared cases), and whether the reference ran for it just now. `stored`: a preparation made
        earlier (by any judge with this secret), rebuilt without running the reference when its key
        is this one's."""
        files, slug = exercise["files"], exercise["slug"]
        key = (self.key(exercise, variant), variant)
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
                code = self._code_table(exercise)
                prepared = self._rebuild(code, slug, variant, stored) if stored is not None and stored.key == key[0] else None
                fresh = prepared is None
                if prepared is None:
                    prepared = self._build(key[0], code, slug, files.get("reference.py"), slot, variant)
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                # The stored form goes to the caller once (to store it), not into memory.
                self._cache[key] = replace(prepared, stored=None)
                self._bytes += prepared.footprint
                while len(self._cache) > 1 and (len(self._cache) > self._size or self._bytes > self._max_bytes):
                    self._bytes -= self._cache.popitem(last=False)[1].footprint
            return prepared, fresh

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

    def _build(self, key: str, code: CodeSpec, slug: str, reference: str | None, slot: Slot,
               variant: str | None) -> PreparedExercise:
        t0 = time.perf_counter()
        if not reference:
            raise GraderFault(f"exercise {slug}: no reference.py")
        ep = code.entry_point
        cases0 = base_cases(code, self._secret, slug, variant)
        limit, memory_mb = min(code.timeout, self._pool.timeout), min(code.memory_mb, self._pool.memory_mb)
        probe_frame = self._reference_run(slot, reference, ep, cases0, limit, memory_mb)
        probe = _check_reference(slug, probe_frame, cases0)
        cases = complete_cases(code, cases0, probe, self._secret, slug, variant=variant)
        ref_frame = self._reference_run(slot, reference, ep, cases, limit, memory_mb)
        ref = _check_reference(slug, ref_frame, cases)
        verdict = _check_reference_passes(slug, code, cases, ref, reference)
        _check_expected_gradients(slug, code, cases, verdict)
        reference_ms = round((time.perf_counter() - t0) * 1000.0, 3)
        return self._prepared(code, cases, ref, ref_frame, reference_ms,
                              StoredReference(key, cases_digest(cases), probe_frame, ref_frame, reference_ms))

    def _rebuild(self, code: CodeSpec, slug: str, variant: str | None,
                 stored: StoredReference) -> PreparedExercise | None:
        """The preparation from a stored one (its key checked by the caller): the same cases drawn
        again, the stored reports parsed against them; no child runs. The reference passed its own
        checks when the reports were made (_build), under the same version and secret. None when the
        reports do not fit the cases (a damaged row) or answer other cases (drawn by other code):
        the reference runs again."""
        cases0 = base_cases(code, self._secret, slug, variant)
        try:
            probe = _check_reference(slug, stored.probe, cases0)
            cases = complete_cases(code, cases0, probe, self._secret, slug, variant=variant)
            if cases_digest(cases) != stored.cases:
                return None
            ref = _check_reference(slug, stored.reference, cases)
        except (GraderFault, ReferenceFault, KeyError, TypeError, ValueError):
            return None
        return self._prepared(code, cases, ref, stored.reference, stored.reference_ms, None)

    def _prepared(self, code: CodeSpec, cases: list[Case], ref: Report, ref_frame: Any, reference_ms: float,
                  stored: StoredReference | None) -> PreparedExercise:
        ep = code.entry_point
        limit_mb = min(code.memory_mb, self._pool.memory_mb)
        cases_json = json.dumps(task_cases(cases), separators=(",", ":"))
        prefix = (f'{{"op":"grade","entry_point":{json.dumps(ep)},"module_name":"submission","torch_checks":"wait",'
                  f'"memory_mb":{limit_mb},"cases":{cases_json},"source":').encode()
        footprint = ENTRY_OVERHEAD + BYTES_PER_WIRE_BYTE * (len(prefix) + len(json.dumps(ref_frame, separators=(",", ":"))))
        return PreparedExercise(code, cases, prefix, ref, reference_ms, footprint, stored)


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
