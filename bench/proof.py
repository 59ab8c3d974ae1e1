"""Proof benchmark (not a test): how long proving an exercise takes, beside a grade, in one run.

    .venv/bin/python bench/proof.py              # every section, 20 proofs per exercise
    .venv/bin/python bench/proof.py one -n 50    # some sections, more runs

Sections:
  open     opening the judge `flask exercises validate` opens (2 slots, every sandbox layer the
           machine has): the zygote started and the spares warm
  one      one code exercise proven (service/catalog/proof.py prove_files: the format check, the
           reference on the shared cases and two learner variants, each wrong/*.py, the starter),
           N times, each a NEW version (a comment added to reference.py, so the reference cache
           cannot help: every proof prepares three variants, as a new version does), for
           clamp-function (7 wrong files) and square-function (4); beside one grade of a learner's
           submission (a wrong file) on the same judge, the version prepared: the ratio says what a
           proof costs in grades
  catalog  every exercise of exercises/ proven at once with 2 slots (prove_many, as validate
           does), each a new version; total seconds, and the sum of the proofs' own times
Targets (issue 34): one code exercise proven in at most 3 s (p50) on a 2-core machine; the 33
built-in exercises synced as a git repository (cloning included, measured elsewhere) in at most
90 s: `catalog` is the proof's part of it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.catalog.loader import exercise_folders, exercise_from_files, read_files  # noqa: E402
from service.catalog.proof import prove_files, prove_many  # noqa: E402
from service.grading.judge import Judge  # noqa: E402  (torch-free)

SECRET = b"bench-secret-0123456789abcdef"
SLOTS = 2
EXERCISES = {"clamp-function": "wrong/forgot_grad_output.py", "square-function": "wrong/forgot_grad_output.py"}


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def new_version(files: dict[str, bytes], tag: str) -> dict[str, bytes]:
    """The same exercise as a new version: a comment in reference.py changes its digest and the
    reference cache's key, and nothing the proof checks."""
    if "reference.py" not in files:
        return files
    return {**files, "reference.py": files["reference.py"] + f"\n# bench {tag}\n".encode()}


def section_open(ctx: dict) -> dict:
    t = time.perf_counter()
    judge = Judge(SECRET, slots=SLOTS)
    judge.wait_warm()
    ctx["judge"] = judge
    return {"judge_open_s": round(time.perf_counter() - t, 2), "sandbox": judge.info().get("sandbox", {}).get("active")}


def section_one(ctx: dict) -> dict:
    judge, runs, out = ctx["judge"], ctx["runs"], {}
    for slug, learner_file in EXERCISES.items():
        files = read_files(ROOT / "exercises" / slug)
        proofs, steps = [], 0
        for k in range(runs):
            t = time.perf_counter()
            exercise, report = prove_files(judge, slug, new_version(files, f"{slug} {k} {time.time_ns()}"))
            proofs.append(time.perf_counter() - t)
            assert exercise is not None and report.passed, report.problems
            steps = len(report.steps)
        version = {"slug": slug, **exercise.content}
        source = version["files"][learner_file]
        judge.grade(version, source)  # prepared: the learner's grade of a known version
        grades = []
        for _ in range(runs):
            t = time.perf_counter()
            judge.grade(version, source)
            grades.append(time.perf_counter() - t)
        out[slug] = {"proof_p50_s": round(statistics.median(proofs), 3), "proof_p90_s": round(percentile(proofs, 0.9), 3),
                     "steps": steps, "grade_p50_ms": round(statistics.median(grades) * 1000, 1),
                     "proof/grade": round(statistics.median(proofs) / statistics.median(grades), 1), "n": runs}
    return out


def section_catalog(ctx: dict) -> dict:
    items = [(folder.name, new_version(read_files(folder), f"catalog {time.time_ns()}"))
             for folder in exercise_folders(ROOT / "exercises")]
    code = sum(1 for slug, files in items if (e := exercise_from_files(slug, files)[0]) and e.spec["kind"] == "code")
    t = time.perf_counter()
    proven = prove_many(ctx["judge"], items, slots=SLOTS)
    total = time.perf_counter() - t
    failed = [slug for slug, (_, report) in proven.items() if not report.passed]
    return {"exercises": len(items), "code": code, "failed": failed, "total_s": round(total, 2),
            "sum_of_proofs_s": round(sum(report.ms for _, report in proven.values()) / 1000, 2), "slots": SLOTS}


SECTIONS = {"open": section_open, "one": section_one, "catalog": section_catalog}


def summary(ctx: dict) -> dict:
    out = {}
    if "open" in ctx:
        out["judge opened (zygote, spares warm)"] = f"{ctx['open']['judge_open_s']} s"
    for slug, r in ctx.get("one", {}).items():
        ok = "OK" if r["proof_p50_s"] <= 3.0 else "MISSED"
        out[f"one code exercise proven, {slug}"] = (
            f"p50 {r['proof_p50_s']} s, p90 {r['proof_p90_s']} s (target p50 <= 3 s): {ok}; {r['steps']} "
            f"steps; one grade p50 {r['grade_p50_ms']} ms: a proof = {r['proof/grade']}x a grade")
    if "catalog" in ctx:
        c = ctx["catalog"]
        out[f"the {c['exercises']} exercises of exercises/ proven ({c['code']} code)"] = (
            f"{c['total_s']} s with {c['slots']} slots (sum of the proofs {c['sum_of_proofs_s']} s; the proof's part "
            f"of the 90 s git sync target){'; FAILED: ' + ', '.join(c['failed']) if c['failed'] else ''}")
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Proof benchmark (bench/proof.py's docstring)")
    parser.add_argument("sections", nargs="*", help=f"some of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("-n", "--runs", type=int, default=20, help="proofs (and grades) per exercise in `one`")
    args = parser.parse_args(argv)
    unknown = [s for s in args.sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown sections: {', '.join(unknown)}")
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, judge with {SLOTS} slots")
    ctx: dict = {"runs": args.runs}
    wanted = ["open", *(s for s in (args.sections or SECTIONS) if s != "open")]
    try:
        for name in wanted:
            t = time.perf_counter()
            ctx[name] = SECTIONS[name](ctx)
            print(f"\n== {name} ({time.perf_counter() - t:.1f} s)")
            for key, value in ctx[name].items():
                print(f"{key}: {value}")
    finally:
        if "judge" in ctx:
            ctx["judge"].close()
    print("\n== summary")
    for key, value in summary(ctx).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main(sys.argv[1:])
