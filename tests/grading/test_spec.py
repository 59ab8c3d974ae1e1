"""The [code] table: validation (torch-free), the plan's seeding, imports of the web process."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from service.grading.plan import base_cases
from service.grading.spec import parse_code_table, validate_code_exercise, validate_run_inputs
from tests.grading.support import load_exercise

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def clamp():
    return copy.deepcopy(load_exercise("clamp-function"))


def _fields(problems):
    return {f for f, _ in problems}


def test_bad_specs_are_reported(clamp):
    spec, files = clamp["spec"], clamp["files"]
    spec["code"]["inputs"][0]["shape"] = [0, -1]
    spec["code"]["inputs"][1]["type"] = "complex"
    spec["code"]["entry_point"] = "not a name"
    spec["code"]["weights"] = {"gradcheck": -1, "nonsense": 1}
    spec["code"]["tolerances"] = {"eps": 0.5}
    spec["code"]["typo"] = 1
    spec["code"]["boundary"][0]["set"] = {"y": {"value": [1.0]}}
    fields = _fields(validate_code_exercise(spec, files))
    assert {"code.inputs[0].shape", "code.inputs[1].type", "code.entry_point", "code.weights.gradcheck",
            "code.weights.nonsense", "code.tolerances.eps", "code", "code.boundary[0].set.y"} <= fields


def test_missing_and_broken_files_are_reported(clamp):
    files = dict(clamp["files"])
    del files["reference.py"]
    files["starter.py"] = "class ClampFn(:\n"
    files["wrong/no_header.py"] = "import torch\n"
    problems = validate_code_exercise(clamp["spec"], files)
    assert ("reference.py", "missing") in problems
    assert any(f == "starter.py" and "line 1" in m for f, m in problems)
    assert any(f == "wrong/no_header.py" and "expect" in m for f, m in problems)
    files = {k: v for k, v in clamp["files"].items() if not k.startswith("wrong/")}
    assert ("wrong/", "at least one known-wrong version (wrong/*.py) is required") in validate_code_exercise(clamp["spec"], files)


def test_no_code_table(clamp):
    del clamp["spec"]["code"]
    assert ("code", "a code exercise needs a [code] table") in validate_code_exercise(clamp["spec"], clamp["files"])


def test_run_inputs_validation():
    assert validate_run_inputs([{"type": "tensor", "shape": [3]}, {"type": "float", "value": 1.0}]) == []
    assert validate_run_inputs([]) != []
    assert _fields(validate_run_inputs([{"type": "tensor", "shape": [2], "value": [1.0, 2.0, 3.0]}])) == {"inputs[0].shape"}
    assert _fields(validate_run_inputs([{"type": "tensor", "shape": [5000]}])) == {"inputs[0].shape"}


def test_weights_are_normalised_and_inapplicable_checks_dropped():
    code, problems = parse_code_table(load_exercise("gradient-reversal")["spec"])
    assert problems == []
    assert "gradcheck" not in code["checks"] and "gradgradcheck" not in code["checks"] and "boundary" not in code["checks"]
    assert abs(sum(code["checks"].values()) - 1.0) < 1e-9


def test_inputs_depend_on_the_secret_and_avoid_kinks():
    code, _ = parse_code_table(load_exercise("clamp-function")["spec"])
    a = base_cases(code, b"secret-one-0123456789", "clamp-function")
    b = base_cases(code, b"secret-one-0123456789", "clamp-function")
    c = base_cases(code, b"secret-two-0123456789", "clamp-function")
    assert a == b and a[0]["args"] != c[0]["args"]
    for case in a:
        if case["kind"] == "random":
            assert all(abs(v - k) >= 0.05 for v in case["args"][0]["values"] for k in (-1.0, 1.0))


def test_web_side_modules_import_without_torch():
    code = ("import sys\nimport service.grading, service.grading.spec, service.grading.errors, service.grading.judge\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
            "assert 'flask' not in {m.split('.')[0] for m in sys.modules if m.startswith('service.grading')}\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_grading_package_imports_no_flask_or_sqlalchemy():
    mine = ("__init__", "errors", "spec", "plan", "protocol", "verdict", "judge", "harness", "zygote")
    for path in (ROOT / "service" / "grading" / f"{name}.py" for name in mine):
        text = path.read_text()
        assert "import flask" not in text.lower() and "sqlalchemy" not in text.lower(), path
