"""The [code] table: validation (torch-free), the plan's seeding, imports of the web process."""

from __future__ import annotations

import copy
import random
import subprocess
import sys
from pathlib import Path

import pytest

from service.grading.plan import base_cases, make_arg
from service.grading.spec import load_code_spec, load_run_inputs, validate_code_exercise, validate_run_inputs
from service.variants import variant_key
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
            "code.weights.nonsense", "code.tolerances.eps", "code.typo", "code.boundary[0].set.y"} <= fields


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


def test_a_custom_op_entry_point_is_a_function_not_a_class(clamp):
    """A custom op is a decorated function (or a name bound to one): a `custom_op = true` table asks
    for a top-level name, every other table for a class."""
    op = ('import torch\n\n\n@torch.library.custom_op("mylib::double", mutates_args=())\n'
          'def double(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n')
    spec = clamp["spec"]
    spec["code"].update(entry_point="double", custom_op=True)
    files = {**clamp["files"], "reference.py": op, "starter.py": op}
    assert not [p for p in validate_code_exercise(spec, files) if p[0] in ("reference.py", "starter.py")]
    assigned = 'import torch\n\ndouble = torch.library.custom_op("mylib::double", mutates_args=())(lambda x: x * 2)\n'
    files["starter.py"] = assigned
    assert not [p for p in validate_code_exercise(spec, files) if p[0] == "starter.py"]
    files["starter.py"] = "import torch\n"
    assert ("starter.py", "does not define the custom op double") in validate_code_exercise(spec, files)
    spec["code"]["custom_op"] = False
    assert ("reference.py", "does not define class double") in validate_code_exercise(spec, files)


def test_no_code_table(clamp):
    del clamp["spec"]["code"]
    assert ("code", "a code exercise needs a [code] table") in validate_code_exercise(clamp["spec"], clamp["files"])


def test_run_inputs_validation():
    assert validate_run_inputs([{"type": "tensor", "shape": [3]}, {"type": "float", "value": 1.0}]) == []
    assert validate_run_inputs([]) != []
    assert _fields(validate_run_inputs([{"type": "tensor", "shape": [2], "value": [1.0, 2.0, 3.0]}])) == {"inputs[0].shape"}
    assert _fields(validate_run_inputs([{"type": "tensor", "shape": [5000]}])) == {"inputs[0].shape"}


def test_weights_are_normalised_and_inapplicable_checks_dropped():
    code, problems = load_code_spec(load_exercise("gradient-reversal")["spec"])
    assert problems == []
    assert "gradcheck" not in code.checks and "gradgradcheck" not in code.checks and "boundary" not in code.checks
    assert abs(sum(code.checks.values()) - 1.0) < 1e-9


def test_inputs_depend_on_the_secret_and_avoid_kinks():
    code, _ = load_code_spec(load_exercise("clamp-function")["spec"])
    a = base_cases(code, b"secret-one-0123456789", "clamp-function")
    b = base_cases(code, b"secret-one-0123456789", "clamp-function")
    c = base_cases(code, b"secret-two-0123456789", "clamp-function")
    assert a == b and a[0].args != c[0].args
    for case in a:
        if case.kind == "random":
            assert all(abs(v - k) >= 0.05 for v in case.args[0].values for k in (-1.0, 1.0))


def test_every_case_of_clampfn_has_values_below_inside_and_above_its_bounds():
    # Eight values of [-2, 2] all miss [-1, 1] (or all fall in it) once in 256 draws: without
    # `cover`, some learners' random cases had no x inside the bounds, so a backward wrong there
    # passed that case's finite-difference checks. 300 learners, three random cases each.
    code, _ = load_code_spec(load_exercise("clamp-function")["spec"])
    for learner in range(300):
        for case in base_cases(code, b"secret-one-0123456789", "clamp-function", variant_key(1, f"learner-{learner}")):
            if case.kind == "random":
                x = case.args[0].values
                assert min(x) < -1.0 and max(x) > 1.0 and any(-1.0 < v < 1.0 for v in x), (learner, x)


COVERED = {"type": "tensor", "shape": [4], "range": [-2.0, 2.0], "avoid": [-1.0, 1.0], "avoid_margin": 0.05,
           "cover": [[-2.0, -1.0], [-1.0, 1.0], [1.0, 2.0]]}


def test_cover_gives_each_interval_a_value_of_its_own_and_leaves_a_covered_draw_alone():
    (spec,), problems = load_run_inputs([COVERED])
    assert problems == [] and spec.cover == ((-2.0, -1.0), (-1.0, 1.0), (1.0, 2.0))
    rng = random.Random(7)
    for _ in range(2000):
        values = make_arg(spec, rng).values
        assert [sum(a <= v <= b for v in values) >= 1 for a, b in spec.cover] == [True] * 3, values
        assert all(abs(v - k) >= 0.05 for v in values for k in (-1.0, 1.0)), values  # still away from the kinks
    # one interval per element at most: four intervals over four values each get their own
    (four,), _ = load_run_inputs([{**COVERED, "cover": [[-2.0, -1.5], [-1.5, -1.0], [1.0, 1.5], [1.5, 2.0]]}])
    for _ in range(200):
        values = sorted(make_arg(four, rng).values)
        assert [a <= v <= b for v, (a, b) in zip(values, four.cover)] == [True] * 4, values
    # a draw that already covers them is the draw without cover
    (plain,), _ = load_run_inputs([{k: v for k, v in COVERED.items() if k != "cover"}])
    covered = [v for v in (make_arg(plain, random.Random(n)).values for n in range(50))
               if all(any(a <= x <= b for x in v) for a, b in spec.cover)]
    assert covered and all(make_arg(spec, random.Random(n)).values == make_arg(plain, random.Random(n)).values
                           for n in range(50) if make_arg(plain, random.Random(n)).values in covered)


@pytest.mark.parametrize("change, message", [
    ({"value": [0.0, 1.0, 2.0, 3.0]}, "either value or cover"),
    ({"dtype": "int64", "range": [-2, 2]}, "float tensors"),
    ({"cover": [[-3.0, -1.0]]}, "inside the range"),
    ({"cover": [[-1.05, -0.95]]}, "too narrow"),
    ({"shape": [2]}, "more intervals than the 2 values"),
    ({"cover": [[1.0, 0.0]]}, "low < high"),
    ({"cover": []}, "pairs"),
])
def test_a_cover_that_cannot_be_drawn_is_named(change, message):
    problems = validate_run_inputs([{**COVERED, **change}])
    assert [m for f, m in problems if f == "inputs[0].cover" and message in m], problems


def test_web_side_modules_import_without_torch():
    code = ("import sys\nimport service.grading, service.grading.spec, service.grading.errors, service.grading.judge\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
            "assert 'flask' not in {m.split('.')[0] for m in sys.modules if m.startswith('service.grading')}\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_draws_loads_as_the_child_loads_it():
    """The zygote imports draws from its folder as a top-level module: stdlib only, nothing of `service`."""
    code = ("import sys\nsys.path.insert(0, 'service/grading')\nimport draws\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('service', 'torch', 'numpy')], sorted(sys.modules)\n")
    subprocess.run([sys.executable, "-I", "-c", code], cwd=ROOT, check=True)


def test_grading_package_imports_no_flask_or_sqlalchemy():
    mine = ("__init__", "errors", "spec", "plan", "protocol", "draws", "verdict", "judge", "harness", "zygote")
    for path in (ROOT / "service" / "grading" / f"{name}.py" for name in mine):
        text = path.read_text()
        assert "import flask" not in text.lower() and "sqlalchemy" not in text.lower(), path


EVERY_TYPE = [
    {"name": "x", "type": "tensor", "shape": [2, 3], "range": [-2.0, 2.0]},
    {"name": "x32", "type": "tensor", "dtype": "float32", "value": [0.5, -1.5]},
    {"name": "index", "type": "tensor", "dtype": "int64", "shape": [4], "range": [0, 5]},
    {"name": "index32", "type": "tensor", "dtype": "int32", "value": [[0, 2], [1, 1]]},
    {"name": "mask", "type": "tensor", "dtype": "bool", "value": [True, False, True]},
    {"name": "random_mask", "type": "tensor", "dtype": "bool", "shape": [5]},
    {"name": "scale", "type": "float", "value": 2.0},
    {"name": "dim", "type": "int", "range": [0, 1]},
    {"name": "flag", "type": "bool", "value": False},
    {"name": "bias", "type": "none"},
    {"name": "size", "type": "ints", "value": [2, 3], "container": "size"},
    {"name": "perm", "type": "ints", "value": [1, 0]},
    {"name": "pads", "type": "ints", "value": [1, 1, -1], "container": "list"},
    {"name": "scalar_shape", "type": "ints", "value": [], "container": "size"},
]


def test_run_inputs_of_every_type_are_drawn_as_the_child_builds_them():
    from service.grading.plan import run_cases
    norm, problems = load_run_inputs(EVERY_TYPE)
    assert problems == []
    args = {inp["name"]: a.to_wire() for inp, a in zip(EVERY_TYPE, run_cases(norm, "code")[0].args)}
    assert args["x"]["rg"] is True and args["x32"]["rg"] is True and args["x32"]["values"] == [0.5, -1.5]
    for name in ("index", "index32", "mask", "random_mask"):
        assert args[name]["t"] == "tensor" and args[name]["rg"] is False
    assert args["index"]["dtype"] == "int64" and all(isinstance(v, int) and 0 <= v <= 5 for v in args["index"]["values"])
    assert args["index32"] == {"t": "tensor", "dtype": "int32", "shape": [2, 2], "values": [0, 2, 1, 1], "rg": False}
    assert args["mask"]["values"] == [True, False, True] and all(isinstance(v, bool) for v in args["random_mask"]["values"])
    assert args["dim"]["t"] == "int" and args["dim"]["v"] in (0, 1) and args["bias"] == {"t": "none"}
    assert args["size"] == {"t": "ints", "v": [2, 3], "container": "size"}
    assert args["perm"] == {"t": "ints", "v": [1, 0], "container": "tuple"}  # tuple by default
    assert args["pads"] == {"t": "ints", "v": [1, 1, -1], "container": "list"}
    assert args["scalar_shape"] == {"t": "ints", "v": [], "container": "size"}


@pytest.mark.parametrize("spec, field", [
    ({"type": "ints"}, "inputs[0].value"),                                   # value is required
    ({"type": "ints", "value": [1] * 9}, "inputs[0].value"),                 # at most 8
    ({"type": "ints", "value": [1.5]}, "inputs[0].value"),
    ({"type": "ints", "value": [2.0]}, "inputs[0].value"),                   # ints, not floats
    ({"type": "ints", "value": [True]}, "inputs[0].value"),                  # nor bools
    ({"type": "ints", "value": 3}, "inputs[0].value"),                       # a list, not a number
    ({"type": "ints", "value": [[1, 2]]}, "inputs[0].value"),
    ({"type": "ints", "value": [2 ** 63]}, "inputs[0].value"),
    ({"type": "ints", "value": [2], "range": [0, 3]}, "inputs[0].range"),    # no range
    ({"type": "ints", "value": [2], "container": "set"}, "inputs[0].container"),
    ({"type": "ints", "value": [2], "shape": [1]}, "inputs[0].shape"),   # tensors only
    ({"type": "ints", "value": [2], "dtype": "int64"}, "inputs[0].dtype"),
    ({"type": "ints", "value": [2], "size": [1]}, "inputs[0].size"),              # unknown key
    ({"type": "float", "value": 1.0, "container": "list"}, "inputs[0].container"),
    ({"type": "tensor", "shape": [2], "container": "size"}, "inputs[0].container"),
    ({"type": "tensor", "dtype": "int16", "shape": [2]}, "inputs[0].dtype"),
    ({"type": "tensor", "dtype": "int32", "value": [1, 2 ** 31]}, "inputs[0].value"),
    ({"type": "tensor", "dtype": "int32", "value": [1.0, 2.5]}, "inputs[0].value"),
    ({"type": "tensor", "dtype": "int32", "shape": [2], "range": [0, 2 ** 31]}, "inputs[0].range"),
    ({"type": "tensor", "dtype": "int32", "shape": [2], "range": [0.5, 3.0]}, "inputs[0].range"),
    ({"type": "tensor", "dtype": "int32", "value": [1, 2], "requires_grad": True}, "inputs[0].requires_grad"),
    ({"type": "tensor", "dtype": "int64", "value": [1, 2], "requires_grad": True}, "inputs[0].requires_grad"),
    ({"type": "tensor", "dtype": "bool", "value": [True, 2]}, "inputs[0].value"),
])
def test_invalid_inputs_of_the_new_types_are_named(spec, field):
    assert field in _fields(validate_run_inputs([spec]))


def test_exercise_tables_take_the_new_types(clamp):
    code = clamp["spec"]["code"]
    code["inputs"] += [{"name": "size", "type": "ints", "value": [2, 2], "container": "size"},
                       {"name": "index", "type": "tensor", "dtype": "int32", "shape": [3], "range": [0, 3]}]
    code["variants"] = [{"name": "other size", "set": {"size": {"value": [4, 1]}}},
                        {"name": "as a list", "set": {"size": {"container": "list"}}},
                        {"name": "no size", "set": {"size": {"type": "none"}}},
                        {"name": "size as an int", "set": {"size": {"type": "int", "value": 4}}}]
    parsed, problems = load_code_spec(clamp["spec"])
    assert problems == []
    assert parsed.inputs[-2].as_dict() == {"name": "size", "type": "ints", "description": "", "container": "size",
                                           "value": [2, 2]}
    by_name = {c.name: [a.to_wire() for a in c.args] for c in base_cases(parsed, b"secret-one-0123456789", "clamp-function")}
    assert by_name["random inputs 1"][-2] == {"t": "ints", "v": [2, 2], "container": "size"}
    assert by_name["other size"][-2] == {"t": "ints", "v": [4, 1], "container": "size"}
    assert by_name["as a list"][-2] == {"t": "ints", "v": [2, 2], "container": "list"}
    assert by_name["no size"][-2] == {"t": "none"}
    assert by_name["size as an int"][-2] == {"t": "int", "v": 4}
    index = by_name["random inputs 1"][-1]
    assert index["dtype"] == "int32" and index["rg"] is False and all(0 <= v <= 3 for v in index["values"])
    code["inputs"][-2] = {"name": "size", "type": "ints", "range": [0, 3]}
    assert {"code.inputs[3].value", "code.inputs[3].range"} <= _fields(load_code_spec(clamp["spec"])[1])


def test_openapi_documents_each_input_type_as_the_validator_accepts_it():
    """The run API's schema documents; validate_run_inputs decides. They must not disagree on
    what the schema can express."""
    import jsonschema_rs

    from service import create_app
    from service.schemas.runs import _input_spec_schema

    doc = create_app({"database_url": "sqlite://", "env": "testing"}).test_client().get("/api/v1/openapi.json").get_json()
    items = doc["components"]["schemas"]["RunCreate"]["properties"]["inputs"]["items"]
    assert items["oneOf"] == _input_spec_schema()["oneOf"]
    variants = {v["title"]: v for v in items["oneOf"]}
    assert set(variants) == {"tensor", "float", "int", "bool", "none", "ints"}
    assert variants["tensor"]["properties"]["dtype"]["enum"] == ["float64", "float32", "int64", "int32", "bool"]
    assert variants["ints"]["properties"]["container"]["enum"] == ["tuple", "list", "size"]
    for key in ("name", "description", "value", "range", "shape", "requires_grad", "avoid", "avoid_margin", "cover",
                "dtype"):
        assert key in variants["tensor"]["properties"], key
    schema = {"oneOf": items["oneOf"]}
    for spec in EVERY_TYPE + [{"shape": [3]}, {"type": "int", "value": 3}, {"type": "float", "range": [0, 1], "avoid": [0.5]},
                              {"shape": [3], "range": [-2, 2], "cover": [[-2, -1], [1, 2]]}]:
        assert validate_run_inputs([spec]) == [] and jsonschema_rs.is_valid(schema, spec), spec
    for spec in ({"type": "ints"}, {"type": "ints", "value": [1] * 9}, {"type": "ints", "value": [1.5]},
                 {"type": "ints", "value": [2], "container": "set"}, {"type": "ints", "value": [2], "range": [0, 3]},
                 {"type": "tensor", "dtype": "int16", "shape": [2]}, {"type": "complex"}, {"type": "float", "shape": [2]},
                 {"type": "tensor", "shape": [2], "unknown": 1},
                 {"type": "tensor", "dtype": "int64", "shape": [2], "range": [0, 3], "cover": [[0, 1]]},
                 {"type": "tensor", "value": [0.5], "cover": [[0, 1]]}, {"type": "float", "cover": [[0, 1]]}):
        assert validate_run_inputs([spec]) != [] and not jsonschema_rs.is_valid(schema, spec), spec


def test_a_shape_that_is_not_a_list_beside_a_value_is_a_problem_not_a_crash():
    # found by the OpenAPI fuzz test once the input specs were documented: {"shape": false, "value": false}
    from service.grading.spec import validate_run_inputs

    problems = validate_run_inputs([{"type": "tensor", "value": [1.0, 2.0], "shape": False}])
    assert ("inputs[0].shape", "does not match the value's shape [2]") in problems


# A table with every kind of input, a variant that changes types and a boundary case.
SEED_TABLE = {"code": {
    "entry_point": "F",
    "inputs": [
        {"name": "x", "type": "tensor", "shape": [2, 2], "range": [-2.0, 2.0], "avoid": [0.0], "avoid_margin": 0.05,
         "description": "the values"},
        {"name": "w", "type": "tensor", "value": [[1.0, 2.0], [3.0, 4.0]]},
        {"name": "index", "type": "tensor", "dtype": "int64", "shape": [3], "range": [0, 3]},
        {"name": "mask", "type": "tensor", "dtype": "bool", "shape": [2]},
        {"name": "low", "type": "float", "value": -1.0},
        {"name": "scale", "type": "float", "range": [0.5, 2.0]},
        {"name": "dim", "type": "int", "range": [0, 1]},
        {"name": "flag", "type": "bool"},
        {"name": "bias", "type": "none"},
        {"name": "size", "type": "ints", "value": [2, 2], "container": "size"},
    ],
    "variants": [{"name": "other", "set": {"bias": {"type": "tensor", "shape": [2]}, "low": {"type": "none"},
                                             "x": {"value": [[0.5, 1.5], [2.5, -0.5]]}}}],
    "boundary": [{"name": "at zero", "set": {"x": {"value": [[0.0, 1.0], [2.0, -1.0]]}},
                  "expected_grad": {"x": [[0.0, 1.0], [1.0, 1.0]]}}],
    "weights": {"gradcheck": 0.5},
    "tolerances": {"grad_rtol": 1e-5},
}}


SEED_TABLE_DIGEST = "4362d22654c63020f775360fc9055fd0ef9552784810e3dda1dd9847b002954e"


def test_the_plan_seed_material_is_stable():
    """The table as plain data seeds every drawn input and grad_output (plan.base_cases): if it
    changed, a regrade of an earlier attempt would see other cases than the attempt did. Pinned
    to what the hand-written validator produced before the table became a CodeSpec."""
    import hashlib

    from service.grading.plan import canonical

    code, problems = load_code_spec(SEED_TABLE)
    assert problems == []
    digest = hashlib.sha256(canonical(code.as_dict()).encode()).hexdigest()
    assert digest == SEED_TABLE_DIGEST


@pytest.mark.parametrize("field, value, path", [
    ("random_cases", "3", "code.random_cases"),          # numbers as TOML or JSON write them, not strings
    ("random_cases", True, "code.random_cases"),
    ("timeout", "10", "code.timeout"),
    ("differentiable", "yes", "code.differentiable"),
    ("differentiable", 1, "code.differentiable"),
    ("memory_mb", 64.5, "code.memory_mb"),
    ("tolerances", {"eps": "1e-6"}, "code.tolerances.eps"),
    ("tolerances", {"epsilon": 1e-6}, "code.tolerances.epsilon"),
])
def test_table_values_are_taken_as_written_never_coerced(field, value, path):
    table = copy.deepcopy(SEED_TABLE)
    table["code"][field] = value
    code, problems = load_code_spec(table)
    assert code is None and path in _fields(problems), problems


def test_every_problem_of_a_table_is_reported_at_once():
    table = copy.deepcopy(SEED_TABLE)
    table["code"]["inputs"][0]["shape"] = [0]
    table["code"]["inputs"][2]["type"] = "complex"
    table["code"]["variants"][0]["set"]["nope"] = {"value": 1.0}
    table["code"]["boundary"][0]["expected_grad"] = {"x": [1.0]}
    assert {"code.inputs[0].shape", "code.inputs[2].type", "code.variants[0].set.nope"} <= _fields(load_code_spec(table)[1])


@pytest.mark.parametrize("typ", [{}, [], 1, None, True])
def test_a_type_that_is_not_a_string_is_a_problem_not_a_crash(typ):
    # found by the OpenAPI fuzz test: {"type": {}} raised TypeError (an unhashable key)
    assert "inputs[0].type" in _fields(validate_run_inputs([{"type": typ}]))


def test_a_table_whose_jacobian_is_too_wide_for_a_grade_is_refused():
    """A grade's gradcheck compares whole rows of the Jacobian: a sample of its columns would fail
    every submission, so the table is refused instead (a run checks such inputs by projections)."""
    from service.grading.spec import MAX_JACOBIAN_SIDE

    table = copy.deepcopy(SEED_TABLE)
    table["code"]["inputs"][0]["shape"] = [MAX_JACOBIAN_SIDE - 4 + 1]  # with w's 4 elements: one too many
    code, problems = load_code_spec(table)
    assert code is None and any(f == "code.inputs" and "at most 256" in m for f, m in problems), problems
    table["code"]["inputs"][0]["shape"] = [MAX_JACOBIAN_SIDE - 4]
    assert load_code_spec(table)[1] == []
    table["code"]["inputs"][0]["shape"] = [MAX_JACOBIAN_SIDE]
    table["code"]["differentiable"] = False  # no gradcheck: no limit
    assert load_code_spec(table)[1] == []
