"""The trusted judge: grades a submission, or runs a learner's code, and decides what to say.

The judge holds the secret and imports no torch. It plans (plan.py, runs.py), has the code run in
a child of the process pool (pool.py), takes the report the child sends (untrusted: validated
before use) and decides in pure Python: a grade against the reference's results (references.py,
verdict.py), a run by the check engine alone (runs.py, checks.py). A submission's faults are
verdicts; GraderFault is the grader's own.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any

from .cases import task_cases
from .checks import Outcome
from .code_table import DEFAULT_TIMEOUT, CodeSpec
from .custom_ops import CUSTOM_OPS_OFF, defines_custom_op
from .errors import BadOutput, GraderFault
from .pool import OUTPUT_LIMIT, ChildPool, Session, Slot
from .references import (
    DEFAULT_MAX_BYTES as REFERENCE_CACHE_BYTES,
    DEFAULT_SIZE as REFERENCE_CACHE_SIZE,
    PreparedExercise,
    ReferenceCache,
    StoredReference,
)
from .registry import decide_grade, grade_summary
from .reports import ChildError, parse_report, torch_messages
from .runs import plan_run, summarize_run
from .spec import MAX_CODE_BYTES
from .terms import LIKELY_CAUSES
from .verdict import Verdict

GRADER_VERSION = 1
BAD_OUTPUT_MESSAGE = "the process running your code sent something that is not a valid result"
EMPTY_OUTPUT = {"stdout": "", "stderr": "", "truncated": False}


def _perf_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


def _out_of_memory(error: ChildError) -> bool:
    """Whether the learner's code failed for want of memory (its allowance is the sandbox's)."""
    return error.type == "MemoryError" or "can't allocate memory" in error.message


def _too_large(source: str) -> bool:
    return len(source.encode("utf-8", "replace")) > MAX_CODE_BYTES


class Judge:
    """Grades code submissions and runs code. Thread-safe: up to `slots` tasks run at once.

    `secret` seeds the generated inputs and grad_outputs (keep it out of the exercise files and
    the same across workers, so every worker grades one version identically), with the learner's
    variant when a grade names one. `cache_size` and `cache_bytes`: how many prepared (exercise
    version, variant) pairs to keep, and about how much memory they may hold. `layers` names the sandbox layers to apply (sandbox.LAYERS); None: every layer
    the machine supports.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        slots: int = 1,
        timeout: float = DEFAULT_TIMEOUT,
        output_limit: int = OUTPUT_LIMIT,
        memory_mb: int = 1024,
        python: str | None = None,
        cache_size: int = REFERENCE_CACHE_SIZE,
        cache_bytes: int = REFERENCE_CACHE_BYTES,
        layers: Iterable[str] | None = None,
        custom_ops: bool = True,
    ) -> None:
        if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
            raise ValueError("secret must be at least 16 bytes")
        self.timeout = float(timeout)
        #: whether torch.library custom ops can run (the zygote preloads what they import): off, code
        #: that defines one is answered so, without a child (custom_ops.CUSTOM_OPS_OFF)
        self.custom_ops = custom_ops
        self._pool = ChildPool(slots=slots, timeout=self.timeout, output_limit=output_limit, memory_mb=memory_mb,
                               python=python, layers=layers, custom_ops=custom_ops)
        self._references = ReferenceCache(self._pool, bytes(secret), size=cache_size, max_bytes=cache_bytes)

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def info(self) -> dict[str, Any]:
        """Process facts for health checks and the benchmark; `references`: the prepared exercise
        versions and variants kept, and the bytes they are estimated to hold."""
        return {**self._pool.info(),
                "references": {"kept": len(self._references), "bytes": self._references.footprint}}

    def set_backlog(self, waiting: bool) -> None:
        """Say whether more tasks are waiting for this judge (a worker that claimed a job with
        another queued behind it): while they are, the children forked next skip the warm-up,
        which only pays while a child waits idle for its task. The sandbox layers are the same."""
        self._pool.backlog = bool(waiting)

    def wait_warm(self, timeout: float = 30.0) -> bool:
        """Block until every idle slot's spare child is forked and warmed up (benchmarks, tests)."""
        return self._pool.wait_warm(timeout)

    def prepare(self, exercise: dict[str, Any], *, variant: str | None = None,
                stored: StoredReference | None = None) -> StoredReference | None:
        """Compute and cache the reference results of an exercise version for a variant, ahead of its
        grades. Returns what to store to rebuild them without running the reference (None: they
        were here already, or rebuilt from `stored`)."""
        with self._pool.slot() as slot:
            prepared, _ = self._references.get(exercise, slot, variant, stored)
        return prepared.stored

    def has_reference(self, exercise: dict[str, Any], *, variant: str | None = None) -> bool:
        """Whether this judge holds the version's reference results for the variant in memory: a
        grade then needs no stored one (the worker reads the database only when it does not)."""
        return self._references.has(exercise, variant)

    # ------------------------------------------------------------------ grading

    @staticmethod
    def _parse(source: str) -> dict[str, Any] | None:
        """A syntax error as the learner should see it, or None when the code parses."""
        try:
            compile(source, "submission.py", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            return None
        except SyntaxError as exc:
            line, col = exc.lineno, exc.offset
            text = (exc.text or "").rstrip("\n")
            where = f"line {line}, column {col}" if line else "somewhere"
            return {"where": "parse", "type": type(exc).__name__, "message": f"{exc.msg} ({where})", "line": line,
                    "column": col, "traceback": f'  File "submission.py", line {line}\n    {text}\n{type(exc).__name__}: {exc.msg}\n' if line else ""}
        except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
            return {"where": "parse", "type": type(exc).__name__, "message": str(exc)[:500], "line": None, "column": None, "traceback": ""}

    def _verdict_only(self, code_table: CodeSpec, status: str, message: str, *, parses: bool, error: dict[str, Any] | None = None) -> dict[str, Any]:
        outcomes = {"parses": Outcome(parses, "The code parses." if parses else message)}
        summary = grade_summary(code_table, outcomes, [], message)
        return {"score": 0.0, "status": status, "checks": summary.checks_json(), "diagnostics": [], "likely_causes": [],
                "feedback": [], "error": error}

    def grade(self, exercise: dict[str, Any], source: str, *, timeout: float | None = None,
              variant: str | None = None, stored: StoredReference | None = None,
              on_prepared: Callable[[StoredReference], None] | None = None) -> dict[str, Any]:
        """Grade the learner's `source` against `exercise` ({"slug", "spec", "files"}), on the
        hidden cases of the learner's `variant` (service/variants.py, variant_key; None: the
        exercise's shared cases). Never raises for the submission's faults; raises GraderFault for
        the grader's own.

        `stored`: the variant's reference results prepared earlier (prepare()), used when this judge
        has none in memory; `on_prepared` receives what to store when the reference ran for this
        grade instead (called once the grade is done, outside the slot)."""
        t_start = time.perf_counter()
        if not isinstance(source, str):
            raise TypeError("source must be a string")
        if not self.custom_ops and exercise.get("spec", {}).get("code", {}).get("custom_op"):
            raise GraderFault(f"exercise {exercise.get('slug')}: {CUSTOM_OPS_OFF}")
        with self._pool.slot() as slot:
            wait_ms = _perf_ms(t_start)
            try:
                prepared, fresh = self._references.get(exercise, slot, variant, stored)
            except GraderFault:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise GraderFault(f"cannot prepare exercise: {exc!r}") from exc
            result = self._grade_prepared(prepared, source, timeout, slot)
        result["timings"]["wait_slot_ms"] = wait_ms
        if fresh:
            result["timings"]["reference_ms"] = prepared.reference_ms
        result["timings"]["total_ms"] = _perf_ms(t_start)
        if prepared.stored is not None and on_prepared is not None:
            on_prepared(prepared.stored)
        return result

    def _grade_prepared(self, prepared: PreparedExercise, source: str, timeout: float | None, slot: Slot) -> dict[str, Any]:
        ctab = prepared.code
        limit = timeout if timeout is not None else min(ctab.timeout, self.timeout)
        timings: dict[str, Any] = {}
        if _too_large(source):
            r = self._verdict_only(ctab, "too_large", f"the code is larger than {MAX_CODE_BYTES // 1024} KiB", parses=False)
            return self._finish_result(r, dict(EMPTY_OUTPUT), timings)
        task = prepared.task_prefix + json.dumps(source).encode() + b"}"
        session, ready, t0 = self._pool.execute(task, limit, slot, wait=False)
        timings["spare_ready"] = ready
        try:
            # Parse here, in the trusted process, while the child works (off the critical path).
            err = self._parse(source)
            if err is not None:
                session.finish()
                r = self._verdict_only(ctab, "syntax_error", f"the code does not parse: {err['message']}", parses=False, error=err)
                r["checks"][0]["message"] = f"Syntax error: {err['message']}."
                return self._finish_result(r, dict(EMPTY_OUTPUT), timings)
            session.wait_frames(1)
            timings["child_ms"] = _perf_ms(t0)
            if not session.frames:
                output = session.finish()
                if not session.timed_out and not session.bad and not session.task_consumed():
                    raise GraderFault("the child ended before it read its task")
                status, msg = self._no_report_verdict(session, limit)
                return self._finish_result(self._verdict_only(ctab, status, msg, parses=True), output, timings)
            t1 = time.perf_counter()
            report = session.frames[0]
            if isinstance(report, dict) and isinstance(report.get("ms"), (int, float)):
                timings["child_self_ms"] = report["ms"]  # as the child tells it: informative only
            result = self._judge_report(prepared, session, report, source, limit)
            timings["judge_ms"] = _perf_ms(t1)
            output = session.finish()
        finally:
            if not session.child.closed:
                session.finish()
        return self._finish_result(result, output, timings)

    def _no_report_verdict(self, session: Session, limit: float) -> tuple[str, str]:
        """The status and message of a child that sent no report (grades and runs alike)."""
        if session.timed_out:
            return "timeout", f"your code ran longer than the {limit:g} s limit and was stopped"
        if session.bad:
            return "bad_output", BAD_OUTPUT_MESSAGE
        return self._pool.crash_verdict(session)

    def _judge_report(self, prepared: PreparedExercise, session: Session, frame: Any, source: str, limit: float) -> dict[str, Any]:
        """The grade of a report frame: parsed, then checked against the reference's by the Verdict."""
        ctab = prepared.code
        try:
            sub = parse_report(frame, prepared.cases)
        except BadOutput:
            return self._verdict_only(ctab, "bad_output", BAD_OUTPUT_MESSAGE, parses=True)
        try:
            v = decide_grade(Verdict(ctab, prepared.cases, prepared.reference_report, sub, source=source))
            if any(not outcome.passed and name in ("gradcheck", "gradgradcheck") for name, outcome in v.outcomes.items()):
                # torch's own message helps here: let the child run it, wait briefly
                session.request_more({"op": "torch_checks"})
                if session.wait_frames(2, time.monotonic() + min(2.0, limit)) and len(session.frames) > 1:
                    v = decide_grade(Verdict(ctab, prepared.cases, prepared.reference_report, sub,
                                             torch_messages(session.frames[1]), source=source))
            summary = grade_summary(ctab, v.outcomes, v.diagnostics, "an earlier check failed")
        except GraderFault:
            raise
        except Exception as exc:  # a bug of ours on a well-formed report
            raise GraderFault(f"verdict failed: {exc!r}") from exc
        status = "passed" if summary.score >= 1.0 - 1e-9 else "failed"
        if status == "failed" and v.error is not None and _out_of_memory(v.error):
            status = "memory_limit"
        return {
            "score": summary.score,
            "status": status,
            "checks": summary.checks_json(),
            "diagnostics": v.diagnostics,
            "likely_causes": list(summary.likely_causes),
            "feedback": [LIKELY_CAUSES[c] for c in summary.likely_causes if c in LIKELY_CAUSES],
            "error": v.error.to_json() if v.error else None,
        }

    @staticmethod
    def _finish_result(result: dict[str, Any], output: dict[str, Any], timings: dict[str, Any]) -> dict[str, Any]:
        result["output"] = output
        result["timings"] = timings
        result["grader_version"] = GRADER_VERSION
        return result

    # ------------------------------------------------------------------ "Try it yourself"

    def run(self, source: str, entry_point: str | None = None, inputs: list[Any] | None = None, *,
            timeout: float | None = None, options: Collection[str] = ()) -> dict[str, Any]:
        """Run the learner's `source` as the lesson's Run button would: stdout, stderr, the
        exception if any, and, with `entry_point` and `inputs` (docs/authoring.md, "Input specs"),
        forward, the gradients for grad_output = ones (as after `y.sum().backward()`) and the
        check engine's verdicts (runs.py), with the optional checks `options` asks for. Raises
        ValueError for an invalid input spec (validate first with spec.validate_run_inputs)."""
        t_start = time.perf_counter()
        if not isinstance(source, str):
            raise TypeError("source must be a string")
        limit = min(timeout or self.timeout, self.timeout)
        plan = plan_run(source, entry_point, inputs, options=options)
        result: dict[str, Any] = {"status": "ok", "error": None, "forward": None, "gradcheck": None}
        if _too_large(source):
            result.update(status="too_large")
            return self._finish_result(result, dict(EMPTY_OUTPUT), {"total_ms": _perf_ms(t_start)})
        err = self._parse(source)
        if err is not None:
            result.update(status="syntax_error", error=err)
            return self._finish_result(result, dict(EMPTY_OUTPUT), {"total_ms": _perf_ms(t_start)})
        if not self.custom_ops and defines_custom_op(source):
            # a sandboxed child could not import what a custom op's first call imports: say why instead
            result.update(status="error", error={"where": "load", "type": "CustomOpsOff", "message": CUSTOM_OPS_OFF,
                                                 "traceback": "", "line": None})
            return self._finish_result(result, dict(EMPTY_OUTPUT), {"total_ms": _perf_ms(t_start)})
        task = json.dumps({"op": "run", "source": source, "entry_point": entry_point, "module_name": "__main__",
                           "torch_checks": "now", "cases": task_cases(plan.cases)}, separators=(",", ":")).encode()
        timings: dict[str, Any] = {}
        with self._pool.slot() as slot:
            session, ready, t0 = self._pool.execute(task, limit, slot)
            timings["spare_ready"] = ready
            try:
                if session.frames and plan.has_function:
                    session.wait_frames(2, time.monotonic() + min(5.0, limit))
                timings["child_ms"] = _perf_ms(t0)
                if not session.frames:
                    output = session.finish()
                    status, message = self._no_report_verdict(session, limit)
                    result.update(status=status, message=message)
                    return self._finish_result(result, output, timings)
                report = session.frames[0]
                extra = torch_messages(session.frames[1]) if len(session.frames) > 1 else {}
                output = session.finish()
            finally:
                if not session.child.closed:
                    session.finish()
        t1 = time.perf_counter()
        try:
            result = summarize_run(plan, report, extra, entry_point, source)
        except (BadOutput, KeyError, TypeError, ValueError, IndexError):
            result.update(status="bad_output", message=BAD_OUTPUT_MESSAGE)
        timings["judge_ms"] = _perf_ms(t1)
        timings["total_ms"] = _perf_ms(t_start)
        return self._finish_result(result, output, timings)


__all__ = ["Judge", "GraderFault"]
