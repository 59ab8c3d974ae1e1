"""The proof of an exercise: whether it is sound, before a learner meets it.

One answer to "is this exercise sound?", as the check engine is the one answer to "is this
backward right?": `make validate`, `flask exercises validate` and `sync`, the tests and every
authoring path (the API, the dashboard, a course's git repository) call `prove`.

A code exercise is proven in the sandbox, by the judge that grades learners, on the same terms as
a learner's code (author code is learner code as far as the sandbox is concerned):
- the reference passes every check of its own exercise on the shared cases and on a sample of
  learner variants (random cases, boundary points, the double backward it declares);
- each `wrong/*.py` fails, with the likely cause and the checks its header declares;
- the starter runs to a verdict (it parses, defines the entry point, loads) and does not already
  pass.
A quiz is proven by its format's checks (loader.read_exercise), which compute every numeric answer
over its parameters' ranges, and by the consistency of its answers (`quiz_consistency`).

Torch-free: the judge is handed in (the worker's, or one the command line opens).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..grading.errors import GraderFault, ReferenceFault
from ..grading.spec import wrong_file_expectations
from .loader import SPEC_FILE, CatalogProblem, ExerciseFile, exercise_from_files, toml_field_line

#: Learner variants the reference is proven on, beside the shared cases: each draws its own random
#: inputs and grad_outputs, as two learners' attempts would.
PROOF_VARIANTS: tuple[str | None, ...] = (None, "proof:1", "proof:2")
REFERENCE, STARTER = "reference.py", "starter.py"


class Grader(Protocol):
    def grade(self, exercise: dict[str, Any], source: str, *, timeout: float | None = None,
              variant: str | None = None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ProofProblem:
    """One thing wrong with an exercise: the file and the one field (or check) at fault."""

    file: str
    field: str
    message: str
    #: The line of `file` at fault, where one is known (1-based).
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}"


@dataclass(frozen=True)
class ProofStep:
    """One run of the proof: what ran (the reference on a variant, a wrong file, the starter), and
    whether it did what the exercise declares."""

    subject: str
    passed: bool
    summary: str


@dataclass
class ProofReport:
    problems: list[ProofProblem] = field(default_factory=list)
    steps: list[ProofStep] = field(default_factory=list)
    ms: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "problems": [asdict(p) for p in self.problems],
                "steps": [asdict(s) for s in self.steps], "ms": round(self.ms, 1)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProofReport:
        return cls([ProofProblem(**p) for p in data.get("problems", [])],
                   [ProofStep(**s) for s in data.get("steps", [])], float(data.get("ms", 0.0)))


def _failed_checks(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in result.get("checks", []) if not c.get("passed")]


def _outcome(result: Mapping[str, Any]) -> str:
    failed = _failed_checks(result)
    if result.get("status") == "passed":
        return "passed every check"
    names = ", ".join(c["name"] for c in failed) or "no check"
    return f"{result.get('status')}: failed {names}"


class _Proof:
    """One proof under way: the report it fills, and where in exercise.toml a field is written."""

    def __init__(self, judge: Grader | None, exercise: dict[str, Any], spec_text: str | None) -> None:
        self.judge, self.exercise, self.spec_text = judge, exercise, spec_text
        self.report = ProofReport()

    def problem(self, file: str, field: str, message: str, line: int | None = None) -> ProofProblem:
        if line is None and file == SPEC_FILE and self.spec_text is not None:
            line = toml_field_line(self.spec_text, field)
        found = ProofProblem(file, field, message, line)
        self.report.problems.append(found)
        return found

    def grade(self, subject: str, source: str, variant: str | None) -> dict[str, Any] | None:
        """The judge's grade of `source`, or None when the reference could not be prepared (the
        problems are in the report: the exercise's fault, named field by field)."""
        assert self.judge is not None
        try:
            return self.judge.grade(self.exercise, source, variant=variant)
        except ReferenceFault as fault:
            # The reference is run first, to prepare the cases: one that fails its own checks,
            # raises, or disagrees with the table's expected gradients breaks every grade.
            for found in fault.problems:
                file = SPEC_FILE if found.field.startswith("code.") else REFERENCE
                self.problem(file, found.field, found.message, found.line)
            summary = f"the reference fails: {'; '.join(f'{p.field}: {p.message}' for p in fault.problems)}"
        except GraderFault as exc:
            summary = self.problem(REFERENCE, "(runs)", f"the reference could not be run to grade {subject}: "
                                                        f"{exc}").message
        self.report.steps.append(ProofStep(subject, False, summary))
        return None


def _prove_reference(proof: _Proof) -> bool:
    for variant in PROOF_VARIANTS:
        subject = f"{REFERENCE} ({'shared cases' if variant is None else 'learner variant ' + variant.split(':')[1]})"
        result = proof.grade(subject, proof.exercise["files"][REFERENCE], variant)
        if result is None:
            return False
        proof.report.steps.append(ProofStep(subject, result["status"] == "passed", _outcome(result)))
        if result["status"] != "passed":
            for check in _failed_checks(result):
                proof.problem(REFERENCE, f"check {check['name']}", check.get("message", ""))
            if not _failed_checks(result):
                proof.problem(REFERENCE, "(runs)", f"the reference's grade is {result['status']}")
            return False
    return True


def _prove_wrong(proof: _Proof, path: str) -> None:
    text = proof.exercise["files"][path]
    cause, must_fail = wrong_file_expectations(text)
    result = proof.grade(path, text, None)
    if result is None:
        return
    report = proof.report
    failed = {c["name"] for c in _failed_checks(result)}
    causes = list(result.get("likely_causes", []))
    line = _header_line(text, "expect")
    ok = True
    if result["status"] == "passed":
        proof.problem(path, "(grade)", "this known mistake passes every check: it is not wrong, or the exercise's "
                                       "checks cannot see it", line)
        ok = False
    elif cause is not None and cause not in causes:
        found = ", ".join(causes) or "none"
        proof.problem(path, "# expect", f"declares the likely cause {cause!r}, the grader names {found}", line)
        ok = False
    missing = [name for name in must_fail if name not in failed]
    if missing:
        proof.problem(path, "# fails", f"declares that {', '.join(missing)} fail, but "
                                       f"{'they pass' if len(missing) > 1 else 'it passes'}", _header_line(text, "fails"))
        ok = False
    report.steps.append(ProofStep(path, ok, _outcome(result)))


def _prove_starter(proof: _Proof) -> None:
    result = proof.grade(STARTER, proof.exercise["files"][STARTER], None)
    if result is None:
        return
    problem = None
    gates = {c["name"]: c for c in result.get("checks", []) if c["name"] in ("parses", "entry_point")}
    error = result.get("error") or {}
    for name in ("parses", "entry_point"):
        if name in gates and not gates[name]["passed"]:
            must = "parse" if name == "parses" else "define the entry point"
            problem = proof.problem(STARTER, f"check {name}", f"the starter must {must}: {gates[name].get('message', '')}",
                                    error.get("line") if isinstance(error.get("line"), int) else None)
            break
    if problem is None and result["status"] not in ("passed", "failed"):
        problem = proof.problem(STARTER, "(runs)", f"the starter must load and run to a verdict; it ends in "
                                                   f"{result['status']}")
    if problem is None and result["status"] == "passed":
        problem = proof.problem(STARTER, "(grade)", "the starter already passes every check: it gives the answer away")
    proof.report.steps.append(ProofStep(STARTER, problem is None, _outcome(result)))


def _header_line(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines()[:5], start=1):
        if line.strip().startswith(f"# {key}:"):
            return number
    return None


def prove(judge: Grader | None, exercise: dict[str, Any], *, spec_text: str | None = None) -> ProofReport:
    """The proof of one exercise whose format is valid ({"slug", "spec", "files"}, as a version
    stores it). A code exercise needs the judge; a quiz does not (None is fine). `spec_text`:
    exercise.toml as written, to give a problem in it its line."""
    started = time.perf_counter()
    proof = _Proof(judge, exercise, spec_text)
    spec = exercise["spec"]
    if spec.get("kind") == "code":
        if judge is None:
            raise ValueError("a code exercise is proven in the sandbox: give a judge")
        if _prove_reference(proof):
            for path in sorted(p for p in exercise["files"] if p.startswith("wrong/")):
                _prove_wrong(proof, path)
            _prove_starter(proof)
    else:
        for field_name, message in quiz_consistency(spec):
            proof.problem(SPEC_FILE, field_name, message)
        found = len(proof.report.problems)
        proof.report.steps.append(ProofStep("answers", not found, "consistent" if not found else
                                            f"{found} answer{'s' if found > 1 else ''} contradict the item"))
    proof.report.ms = (time.perf_counter() - started) * 1000.0
    return proof.report


def quiz_consistency(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Answers that contradict each other (field, message): a listed wrong answer the item accepts
    as right, an accepted answer given twice."""
    from ..quiz import QUIZ_KINDS

    kind = QUIZ_KINDS.get(spec.get("kind", ""))
    return kind.consistency_problems(spec) if kind is not None else []


def format_report(problems: Iterable[CatalogProblem]) -> ProofReport:
    """An exercise that does not load (the format check's problems) as a failed proof: nothing of
    it ran. The report a version whose files are invalid stores."""
    return ProofReport([ProofProblem(p.file, p.field, p.message, p.line) for p in problems],
                       [ProofStep("format", False, "the files do not make a valid exercise: nothing was run")])


def prove_files(judge: Grader | None, slug: str, files: Mapping[str, bytes]) -> tuple[ExerciseFile | None, ProofReport]:
    """The whole proof of an exercise given as its files (a folder, an upload, a git tree): the
    format check (loader.exercise_from_files), then, when the files make an exercise, `prove`."""
    exercise, problems = exercise_from_files(slug, files)
    if exercise is None:
        return None, format_report(problems)
    spec_text = files[SPEC_FILE].decode("utf-8")
    return exercise, prove(judge, {"slug": exercise.slug, **exercise.content}, spec_text=spec_text)


def prove_many(judge: Grader | None, exercises: Sequence[tuple[str, Mapping[str, bytes]]],
               *, slots: int = 1) -> dict[str, tuple[ExerciseFile | None, ProofReport]]:
    """`prove_files` of each (slug, files), `slots` at a time (the judge's slots: each proof
    grades one file at a time), by slug."""
    with ThreadPoolExecutor(max_workers=max(1, slots), thread_name_prefix="proof") as pool:
        done = pool.map(lambda item: (item[0], prove_files(judge, item[0], item[1])), exercises)
        return dict(done)
