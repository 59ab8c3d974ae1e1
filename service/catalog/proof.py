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
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..grading.errors import GraderFault
from ..grading.spec import wrong_file_expectations

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


def _grade(judge: Grader, exercise: dict[str, Any], subject: str, source: str,
           variant: str | None) -> dict[str, Any] | ProofProblem:
    try:
        return judge.grade(exercise, source, variant=variant)
    except GraderFault as exc:
        # The reference is run first, to prepare the cases: a reference that crashes, hangs or
        # answers nonsense is the exercise's fault, and is named as such.
        return ProofProblem(REFERENCE, "(runs)", f"the reference could not be run to grade {subject}: {exc}")


def _prove_reference(judge: Grader, exercise: dict[str, Any], report: ProofReport) -> bool:
    for variant in PROOF_VARIANTS:
        subject = f"{REFERENCE} ({'shared cases' if variant is None else 'learner variant ' + variant.split(':')[1]})"
        result = _grade(judge, exercise, subject, exercise["files"][REFERENCE], variant)
        if isinstance(result, ProofProblem):
            report.problems.append(result)
            report.steps.append(ProofStep(subject, False, result.message))
            return False
        report.steps.append(ProofStep(subject, result["status"] == "passed", _outcome(result)))
        if result["status"] != "passed":
            for check in _failed_checks(result):
                report.problems.append(ProofProblem(
                    REFERENCE, f"check {check['name']}",
                    f"the reference fails its own exercise's check ({subject}): {check.get('message', '')}"))
            if not _failed_checks(result):
                report.problems.append(ProofProblem(REFERENCE, "(runs)", f"the reference's grade is {result['status']}"))
            return False
    return True


def _prove_wrong(judge: Grader, exercise: dict[str, Any], path: str, report: ProofReport) -> None:
    text = exercise["files"][path]
    cause, must_fail = wrong_file_expectations(text)
    result = _grade(judge, exercise, path, text, None)
    if isinstance(result, ProofProblem):
        report.problems.append(result)
        report.steps.append(ProofStep(path, False, result.message))
        return
    failed = {c["name"] for c in _failed_checks(result)}
    causes = list(result.get("likely_causes", []))
    line = _header_line(text, "expect")
    ok = True
    if result["status"] == "passed":
        report.problems.append(ProofProblem(path, "(grade)", "this known mistake passes every check: it is not wrong, "
                                                             "or the exercise's checks cannot see it", line))
        ok = False
    elif cause is not None and cause not in causes:
        found = ", ".join(causes) or "none"
        report.problems.append(ProofProblem(path, "# expect", f"declares the likely cause {cause!r}, the grader "
                                                              f"names {found}", line))
        ok = False
    missing = [name for name in must_fail if name not in failed]
    if missing:
        report.problems.append(ProofProblem(path, "# fails", f"declares that {', '.join(missing)} fail, but "
                                                             f"{'they pass' if len(missing) > 1 else 'it passes'}",
                                            _header_line(text, "fails")))
        ok = False
    report.steps.append(ProofStep(path, ok, _outcome(result)))


def _prove_starter(judge: Grader, exercise: dict[str, Any], report: ProofReport) -> None:
    result = _grade(judge, exercise, STARTER, exercise["files"][STARTER], None)
    if isinstance(result, ProofProblem):
        report.problems.append(result)
        report.steps.append(ProofStep(STARTER, False, result.message))
        return
    problem = None
    gates = {c["name"]: c for c in result.get("checks", []) if c["name"] in ("parses", "entry_point")}
    for name in ("parses", "entry_point"):
        if name in gates and not gates[name]["passed"]:
            must = "parse" if name == "parses" else "define the entry point"
            problem = ProofProblem(STARTER, f"check {name}", f"the starter must {must}: {gates[name].get('message', '')}")
            break
    if problem is None and result["status"] not in ("passed", "failed"):
        problem = ProofProblem(STARTER, "(runs)", f"the starter must load and run to a verdict; it ends in {result['status']}")
    if problem is None and result["status"] == "passed":
        problem = ProofProblem(STARTER, "(grade)", "the starter already passes every check: it gives the answer away")
    if problem is not None:
        report.problems.append(problem)
    report.steps.append(ProofStep(STARTER, problem is None, _outcome(result)))


def _header_line(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines()[:5], start=1):
        if line.strip().startswith(f"# {key}:"):
            return number
    return None


def prove(judge: Grader | None, exercise: dict[str, Any]) -> ProofReport:
    """The proof of one exercise whose format is valid ({"slug", "spec", "files"}, as a version
    stores it). A code exercise needs the judge; a quiz does not (None is fine)."""
    started = time.perf_counter()
    report = ProofReport()
    spec = exercise["spec"]
    if spec.get("kind") == "code":
        if judge is None:
            raise ValueError("a code exercise is proven in the sandbox: give a judge")
        if _prove_reference(judge, exercise, report):
            for path in sorted(p for p in exercise["files"] if p.startswith("wrong/")):
                _prove_wrong(judge, exercise, path, report)
            _prove_starter(judge, exercise, report)
    else:
        report.problems += quiz_consistency(spec)
    report.ms = (time.perf_counter() - started) * 1000.0
    return report


def quiz_consistency(spec: Mapping[str, Any]) -> list[ProofProblem]:
    """Answers that contradict each other: a listed wrong answer the item accepts as right."""
    from ..quiz import QUIZ_KINDS

    kind = QUIZ_KINDS.get(spec.get("kind", ""))
    check = getattr(kind, "consistency_problems", None)
    found: Iterable[tuple[str, str]] = check(spec) if check is not None else ()
    return [ProofProblem("exercise.toml", where, message) for where, message in found]
