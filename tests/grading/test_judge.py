"""The judge's process handling and feedback: limits, crashes, output, tracebacks, runs, faults."""

from __future__ import annotations

import json
import math
import os
import signal
import time

import pytest

from service.grading.errors import GraderFault
from service.grading.judge import Judge
from tests.grading.support import SECRET, load_exercise

REF_TIMEOUT = 1.5


def _ref(ex):
    return ex["files"]["reference.py"]


def test_result_shape_is_json_and_complete(judge, clamp_exercise):
    r = judge.grade(clamp_exercise, clamp_exercise["files"]["wrong/forgot_grad_output.py"])
    json.dumps(r, allow_nan=False)  # strict JSON: no NaN anywhere
    assert set(r) >= {"score", "status", "checks", "diagnostics", "likely_causes", "feedback", "error", "output", "timings"}
    for c in r["checks"]:
        assert set(c) >= {"name", "weight", "passed", "message"}
    assert abs(sum(c["weight"] for c in r["checks"]) - 1.0) < 1e-5
    d = next(d for d in r["diagnostics"] if d["check"] == "gradcheck")
    assert d["input"] == "x" and isinstance(d["index"], list)
    assert {"numerical", "analytical", "atol", "rtol", "likely_cause"} <= set(d)
    assert d["likely_cause"] == "forgot_grad_output"


def test_syntax_error_names_line_and_column(judge, clamp_exercise):
    r = judge.grade(clamp_exercise, "import torch\n\nclass ClampFn(torch.autograd.Function)\n    pass\n")
    assert r["status"] == "syntax_error" and r["score"] == 0.0
    assert r["error"]["line"] == 3 and r["error"]["column"]
    assert "line 3, column" in r["checks"][0]["message"]


def test_infinite_loop_times_out_and_next_grade_works(judge, clamp_exercise):
    t0 = time.monotonic()
    r = judge.grade(clamp_exercise, "while True:\n    pass\n", timeout=REF_TIMEOUT)
    assert r["status"] == "timeout" and r["score"] == 0.0
    assert time.monotonic() - t0 < REF_TIMEOUT + 2
    loop_in_backward = _ref(clamp_exercise).replace("(x,) = ctx.saved_tensors", "while True: pass")
    assert judge.grade(clamp_exercise, loop_in_backward, timeout=REF_TIMEOUT)["status"] == "timeout"
    assert judge.grade(clamp_exercise, _ref(clamp_exercise))["status"] == "passed"


def test_segfault_is_a_crash_with_the_signal(judge, clamp_exercise):
    r = judge.grade(clamp_exercise, "import ctypes\nctypes.string_at(0)\n")
    assert r["status"] == "crashed"
    assert "SIGSEGV" in r["checks"][-1]["message"]


def test_traceback_is_trimmed_to_the_learners_frames(judge, clamp_exercise):
    code = _ref(clamp_exercise).replace("mask = (x >= ctx.low)", "mask = undefined_name + (x >= ctx.low)")
    r = judge.grade(clamp_exercise, code)
    assert r["status"] == "failed"
    err = r["error"]
    assert err["type"] == "NameError" and err["where"] == "backward"
    assert 'File "submission.py", line' in err["traceback"]
    assert "harness" not in err["traceback"] and "site-packages" not in err["traceback"]
    assert "undefined_name" in err["traceback"]


def test_output_is_captured_and_capped(judge, clamp_exercise):
    code = _ref(clamp_exercise) + "\nimport sys\nprint('hello from the learner')\nsys.stderr.write('e' * 200000)\n"
    r = judge.grade(clamp_exercise, code)
    assert r["status"] == "passed"
    assert r["output"]["stdout"] == "hello from the learner\n"
    assert len(r["output"]["stderr"]) == 64 * 1024 and r["output"]["truncated"]


def test_starting_a_process_is_forbidden(judge, clamp_exercise):
    code = _ref(clamp_exercise) + "\nimport subprocess\np = subprocess.Popen(['sleep', '60'])\nprint(p.pid)\n"
    r = judge.grade(clamp_exercise, code)
    assert r["status"] == "forbidden" and r["score"] == 0.0 and r["output"]["stdout"] == ""
    assert "forbids" in r["checks"][0]["message"] or "forbids" in json.dumps(r)


def test_process_group_is_killed_without_seccomp(clamp_exercise):
    # The layer that forbids processes is off here: the kill of the child's group must still reach them.
    with Judge(SECRET, layers=["limits"], custom_ops=False) as unfiltered:
        code = _ref(clamp_exercise) + "\nimport subprocess\np = subprocess.Popen(['sleep', '60'])\nprint(p.pid)\n"
        r = unfiltered.grade(clamp_exercise, code)
    pid = int(r["output"]["stdout"].split()[0])
    for _ in range(50):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the submission's subprocess outlived the grade")


def test_memory_limit_is_an_error_not_a_dead_worker(judge, clamp_exercise):
    code = _ref(clamp_exercise) + "\nbig = torch.empty(4 * 1024 ** 3, dtype=torch.uint8)\n"
    r = judge.grade(clamp_exercise, code)
    assert r["status"] == "memory_limit" and r["score"] == 0.0
    assert r["error"]["where"] == "load"
    assert judge.grade(clamp_exercise, _ref(clamp_exercise))["score"] == 1.0


def test_regrade_is_deterministic(judge, clamp_exercise):
    code = clamp_exercise["files"]["wrong/strict_comparison.py"]
    a, b = judge.grade(clamp_exercise, code), judge.grade(clamp_exercise, code)
    for r in (a, b):
        r.pop("timings")
    assert a == b


def test_run_reports_output_exception_and_gradcheck(judge, clamp_exercise):
    r = judge.run("print('hi')\n")
    assert r["status"] == "ok" and r["output"]["stdout"] == "hi\n"
    r = judge.run("def f():\n    raise ValueError('boom')\nf()\n")
    assert r["status"] == "error" and r["error"]["type"] == "ValueError"
    assert r["error"]["traceback"].count('File "submission.py"') == 2
    inputs = [{"name": "x", "type": "tensor", "shape": [6], "range": [-2.0, 2.0], "avoid": [-1.0, 1.0], "avoid_margin": 0.05},
              {"type": "float", "value": -1.0}, {"type": "float", "value": 1.0}]
    ok = judge.run(_ref(clamp_exercise), "ClampFn", inputs)
    assert ok["status"] == "ok" and ok["gradcheck"]["passed"] is True
    bad = judge.run(clamp_exercise["files"]["wrong/forgot_grad_output.py"], "ClampFn",
                    [dict(inputs[0], dtype="float64")] + inputs[1:])
    # invisible with grad_output = ones (the gradients shown are the lesson's), exposed by the Jacobian
    assert bad["gradients"]["x"] == ok["gradients"]["x"] or bad["inputs"] != ok["inputs"]
    assert bad["gradcheck"]["passed"] is False and bad["passed"] is False
    assert bad["gradcheck"]["likely_cause"] == "forgot_grad_output"
    assert ("not multiplied by grad_output" in bad["gradcheck"]["torch_message"]
            or "Jacobian mismatch" in bad["gradcheck"]["torch_message"])
    sq = load_exercise("square-function")
    wrong = judge.run(sq["files"]["wrong/missing_two.py"], "SquareFn", [{"name": "x", "type": "tensor", "shape": [3]}])
    assert wrong["gradcheck"]["passed"] is False
    d = wrong["gradcheck"]["diagnostics"][0]
    assert d["input"] == "x" and "numerical" in d and "analytical" in d
    assert wrong["gradcheck"]["torch_message"] and "Jacobian mismatch" in wrong["gradcheck"]["torch_message"]
    assert d["likely_cause"] == "constant_factor" and d["factor"] == 0.5  # missing_two: x instead of 2x
    flipped = _ref(sq).replace("return grad_output * 2 * x", "return -grad_output * 2 * x")
    assert flipped != _ref(sq)
    sign = judge.run(flipped, "SquareFn", [{"name": "x", "type": "tensor", "shape": [3]}])
    assert sign["gradcheck"]["diagnostics"][0]["likely_cause"] == "wrong_sign"
    # float32 cannot meet gradcheck's tolerances: the checks run on float64 copies, and say so
    f32 = judge.run(_ref(sq), "SquareFn", [{"name": "x", "type": "tensor", "shape": [3], "dtype": "float32"}])
    assert f32["gradcheck"]["passed"] is True and "float64 copies" in f32["gradcheck"]["note"]
    assert f32["forward"]["outputs"][0]["dtype"] == "float32" and f32["inputs"][0]["dtype"] == "float32"
    f32_wrong = judge.run(sq["files"]["wrong/missing_two.py"], "SquareFn",
                          [{"name": "x", "type": "tensor", "shape": [3], "dtype": "float32"}])
    assert f32_wrong["gradcheck"]["passed"] is False and f32_wrong["gradcheck"]["likely_cause"] == "constant_factor"
    with pytest.raises(ValueError):
        judge.run("x = 1", "F", [{"type": "tensor", "shape": [-1]}])
    assert judge.run("while True: pass", timeout=1.0)["status"] == "timeout"
    assert judge.run("import os\nos.fork()\n")["status"] == "forbidden"
    assert judge.run("import ctypes\nctypes.string_at(0)\n")["status"] == "crashed"
    assert judge.run("while True:\n    print('x' * 65536)\n")["status"] == "output_limit"


def test_broken_reference_is_a_grader_fault(judge, clamp_exercise):
    broken = dict(clamp_exercise, files=dict(clamp_exercise["files"]))
    broken["files"]["reference.py"] = broken["files"]["wrong/forgot_grad_output.py"]
    with pytest.raises(GraderFault):
        judge.grade(broken, _ref(clamp_exercise))
    broken["files"]["reference.py"] = "raise RuntimeError('no')"
    with pytest.raises(GraderFault):
        judge.grade(broken, _ref(clamp_exercise))
    assert judge.grade(clamp_exercise, _ref(clamp_exercise))["score"] == 1.0


def test_zygote_is_clean_and_restarts(monkeypatch, clamp_exercise):
    monkeypatch.setenv("GRADQUIZ_FAKE_SECRET", "do-not-leak-4242")
    with Judge(SECRET + b"-other") as j:
        info = j.info()
        assert info["zygote"]["threads"] == 1 and info["zygote"]["num_threads"] == 1
        code = ("import os\nprint(sorted(os.environ))\n"
                "try:\n    print(open('/proc/self/environ','rb').read().count(b'4242'))\n"
                "except OSError:\n    print(0)\n"
                "import gc\nprint(sum(1 for o in gc.get_objects() if isinstance(o, str) and 'grading-tests-secret' in o))\n")
        out = j.run(code)["output"]["stdout"].splitlines()
        assert "GRADQUIZ_FAKE_SECRET" not in out[0] and out[1] == "0" and out[2] == "0"
        os.kill(info["zygote_pid"], signal.SIGKILL)
        time.sleep(0.2)
        r = None
        for _ in range(2):  # the spare of the dead zygote may fault once; the worker retries
            try:
                r = j.grade(clamp_exercise, _ref(clamp_exercise))
                break
            except GraderFault:
                continue
        assert r is not None and r["score"] == 1.0
        assert j.info()["zygote_pid"] != info["zygote_pid"]


def test_run_results_are_strict_json(judge):
    code = ("import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        return x * float('nan')\n    @staticmethod\n    def backward(ctx, g):\n        return g * float('inf')\n")
    r = judge.run(code, "F", [{"type": "tensor", "shape": [2]}])
    json.dumps(r, allow_nan=False)
    assert r["gradcheck"]["passed"] is False


_TORCHSCRIPT_FN = '''
import inspect
from typing import List

import torch
import torch.nn.functional as F


@torch.jit.script
def pad(x: torch.Tensor, p: List[int], mode: str = "reflect") -> torch.Tensor:
    return F.pad(x.view(1, 1, -1), p, mode=mode).view(-1)  # TorchScript compiles torch's F.pad too


@torch.jit.script
class Scale(object):
    def __init__(self, k: float):
        self.k = k

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.k


@torch.jit.script
def triple(x: torch.Tensor) -> torch.Tensor:
    return Scale(3.0).apply(pad(x, [1, 1])[1:-1])


class TripleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return triple(x)

    @staticmethod
    def backward(ctx, grad_output):
        return 3.0 * grad_output


assert "def forward" in inspect.getsource(TripleFn)
'''

_NUMPY_FN = '''
import numpy as np
import torch


class NpSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = np.fft.irfft(np.fft.rfft(x.detach().numpy()), n=x.shape[0])  # numpy.fft: a lazy submodule
        return torch.from_numpy(np.sin(a))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.cos(x)
'''

_INTS_FN = '''
import torch


class ReshapeGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, size, index, mask):
        assert isinstance(size, torch.Size), type(size)
        assert index.dtype == torch.int64 and mask.dtype == torch.bool and not index.requires_grad
        ctx.in_shape = x.shape
        ctx.save_for_backward(index, mask)
        return x.reshape(size).index_select(1, index) * mask

    @staticmethod
    def backward(ctx, grad_output):
        index, mask = ctx.saved_tensors
        g = grad_output.new_zeros(2, 3).index_add(1, index, grad_output * mask)
        return g.reshape(ctx.in_shape), None, None, None
'''


def test_run_takes_real_world_functions_as_written(judge):
    """TorchScript helpers (and the torch functions they call), inspect, numpy inside forward, and
    inputs of the types real Functions take: a torch.Size, an int64 index tensor, a bool mask."""
    xs = [0.5, -1.0, 2.0, 0.25]
    r = judge.run(_TORCHSCRIPT_FN, "TripleFn", [{"name": "x", "type": "tensor", "value": xs}])
    assert r["status"] == "ok", r
    assert r["forward"]["outputs"][0]["values"] == pytest.approx([3 * v for v in xs])
    assert r["gradcheck"]["passed"] is True

    r = judge.run(_NUMPY_FN, "NpSin", [{"name": "x", "type": "tensor", "value": xs}])
    assert r["status"] == "ok", r
    assert r["forward"]["outputs"][0]["values"] == pytest.approx([math.sin(v) for v in xs], abs=1e-12)
    assert r["gradcheck"]["passed"] is True

    inputs = [{"name": "x", "type": "tensor", "value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]},
              {"name": "size", "type": "ints", "value": [2, 3], "container": "size"},
              {"name": "index", "type": "tensor", "dtype": "int64", "value": [2, 0]},
              {"name": "mask", "type": "tensor", "dtype": "bool", "value": [[True, False], [True, True]]}]
    r = judge.run(_INTS_FN, "ReshapeGather", inputs)
    assert r["status"] == "ok", r
    out = r["forward"]["outputs"][0]
    assert out["shape"] == [2, 2] and out["values"] == pytest.approx([3.0, 0.0, 6.0, 4.0])
    assert r["gradcheck"]["passed"] is True


def test_a_judge_told_to_stop_does_not_wait_for_a_spare_still_being_forked():
    """A worker stopping (SIGTERM) closes its judge: a slot's spare child the zygote has not answered
    for yet is not waited for (the zygote's exit ends its children), so the worker stops at once
    instead of after SPAWN_TIMEOUT (30 s) per slot."""
    from concurrent.futures import Future

    judge = Judge(SECRET, slots=2, timeout=10.0, custom_ops=False)
    pool = judge._pool
    assert pool.wait_warm(30)
    for slot in pool._slots:  # as if each slot's next spare were asked for and not yet forked
        pool._discard(slot.take_spare())
        slot.spare = Future()
    started = time.monotonic()
    judge.close()
    assert time.monotonic() - started < 10, "closing waited for the unanswered spares"


def test_a_run_of_clampfn_exposes_a_backward_wrong_only_above_the_bounds_whatever_the_source(judge, clamp_exercise):
    # A Run has one random case, seeded with the source. Before ClampFn's inputs declared `cover`,
    # 3 of these 20 edits of one wrong Function drew no x above 1, and their Run passed.
    from service.grading.runs import exercise_run_inputs
    from service.grading.spec import load_code_spec

    inputs = exercise_run_inputs(load_code_spec(clamp_exercise["spec"])[0])
    wrong = _ref(clamp_exercise).replace("(x >= ctx.low) & (x <= ctx.high)", "x >= ctx.low")
    assert wrong != _ref(clamp_exercise)
    for edit in range(20):
        run = judge.run(f"{wrong}\n# edit {edit}\n", "ClampFn", inputs)
        assert run["status"] == "ok" and run["passed"] is False, (edit, run["inputs"])
