"""Submissions with a wrong backward that try to fake success earn nothing on the gradient checks.

Each one combines a wrong backward (the gradient has the wrong sign everywhere, boundary points
included) with a trick that would make an in-child verdict say "passed"."""

from __future__ import annotations

import pytest

from service.grading.registry import gradient_score
from tests.grading.support import WRONG_SIGN_CLAMPFN

TAMPER = {
    "patch_gradcheck": '''
torch.autograd.gradcheck = lambda *a, **k: True
torch.autograd.gradgradcheck = lambda *a, **k: True
import torch.autograd.gradcheck as _gc
_gc.gradcheck = lambda *a, **k: True
''',
    "patch_allclose": '''
torch.allclose = lambda *a, **k: True
torch.Tensor.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
''',
    "patch_tolist": '''
_orig = torch.Tensor.tolist
def _tolist(self):
    out = _orig(self)
    return [2.0 * v + 1.0 for v in out] if isinstance(out, list) and out and isinstance(out[0], float) else out
torch.Tensor.tolist = _tolist
''',
    "patch_json": '''
import json
_dumps = json.dumps
def fake(obj, *a, **k):
    if isinstance(obj, dict) and obj.get("type") == "main":
        return _dumps({"type": "main", "status": "passed", "score": 1.0, "load": {"ok": True}, "cases": []})
    return _dumps(obj, *a, **k)
json.dumps = fake
''',
    "patch_harness": '''
import sys
h = sys.modules.get("harness")
if h is not None:
    _run = h._run_case
    def _fake(fn_cls, case, rec):
        rep, extra = _run(fn_cls, case, rec)
        for v in rep.get("vjps", []):
            if v.get("ok"):
                v["grads"] = [None if g is None else [1.0 for x in g] for g in v["grads"]]
        return rep, extra
    h._run_case = _fake
    h._torch_checks = lambda fn, case: {"id": case["id"], "torch_gradcheck": {"ok": True, "message": "gradcheck passed"}}
''',
    "fake_stdout": '''
import sys, struct, json
msg = json.dumps({"type": "main", "score": 1.0, "status": "passed"}).encode()
sys.stdout.buffer.write(struct.pack(">I", len(msg)) + msg)
print('{"score": 1.0, "status": "passed", "checks": []}')
print("gradcheck passed")
''',
    "exit_zero_at_load": '''
import os
os._exit(0)
''',
    "exit_in_backward": '''
import os
_bw = ClampFn.backward
def _backward(ctx, g):
    os._exit(0)
ClampFn.backward = staticmethod(_backward)
''',
    "sys_exit": '''
raise SystemExit(0)
''',
    "always_equal_subclass": '''
class Liar(torch.Tensor):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def allclose(self, *a, **k): return True
    def equal(self, *a, **k): return True
_fwd = ClampFn.forward
def _forward(ctx, x, low, high):
    return _fwd(ctx, x, low, high).as_subclass(Liar)
ClampFn.forward = staticmethod(_forward)
''',
    "nan_gradient": '''
def _backward(ctx, g):
    return g * float("nan"), None, None
ClampFn.backward = staticmethod(_backward)
''',
    "forged_result_frame": '''
# The child's own harness runs a correct clamp on the judge's task (so every number in the report
# is true and its structure is what the judge expects), then the vectors-Jacobian products are
# zeroed and the frame written to every descriptor: true Jacobian rows beside wrong VJPs.
import gc, json, os, struct, sys
harness = sys.modules["harness"]
task = next(o for o in gc.get_objects() if isinstance(o, dict) and "cases" in o and "source" in o)
honest = dict(task, torch_checks="never", module_name="honest", source="""
import torch
class ClampFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ((x >= ctx.low) & (x <= ctx.high)), None, None
""")
r, w = os.pipe()
harness.run_task(honest, w)
os.close(w)
data = b""
while chunk := os.read(r, 1 << 16):
    data += chunk
report = json.loads(data[4:4 + struct.unpack(">I", data[:4])[0]])
for case in report["cases"]:
    for vjp in case.get("vjps", []):
        vjp["grads"] = [None if g is None else [0.0] * len(g) for g in vjp["grads"]]
frame = json.dumps(report).encode()
for n in range(3, 256):  # the sandbox hides /proc/self/fd: try every descriptor
    try:
        os.write(n, struct.pack(">I", len(frame)) + frame)
    except OSError:
        pass
os._exit(0)
''',
    "self_consistent_zero": '''
def _forward(ctx, x, low, high):
    return torch.zeros_like(x)
def _backward(ctx, g):
    return torch.zeros_like(g), None, None
ClampFn.forward = staticmethod(_forward)
ClampFn.backward = staticmethod(_backward)
''',
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_tampering_earns_nothing_on_gradient_checks(judge, clamp_exercise, name):
    result = judge.grade(clamp_exercise, WRONG_SIGN_CLAMPFN + TAMPER[name])
    assert result["status"] != "passed"
    assert gradient_score(result) == 0.0, [c for c in result["checks"] if c["passed"]]
    # and the judge still grades the next correct submission
    assert judge.grade(clamp_exercise, clamp_exercise["files"]["reference.py"])["score"] == 1.0


def test_the_forged_frame_reaches_the_judge(judge, clamp_exercise):
    """The forgery really runs (it finds its task in memory by the wire's keys): the judge reads a
    report whose forward values are right, and the gradients still earn nothing."""
    result = judge.grade(clamp_exercise, WRONG_SIGN_CLAMPFN + TAMPER["forged_result_frame"])
    passed = {c["name"]: c["passed"] for c in result["checks"]}
    assert passed.get("forward") is True, result["checks"]
    assert gradient_score(result) == 0.0


def test_untampered_wrong_backward_is_the_baseline(judge, clamp_exercise):
    result = judge.grade(clamp_exercise, WRONG_SIGN_CLAMPFN)
    assert gradient_score(result) == 0.0
    assert "wrong_sign" in result["likely_causes"]


def test_verdicts_of_processes_that_do_not_report(judge, clamp_exercise):
    assert judge.grade(clamp_exercise, WRONG_SIGN_CLAMPFN + TAMPER["exit_zero_at_load"])["status"] == "crashed"
    faked = judge.grade(clamp_exercise, WRONG_SIGN_CLAMPFN + TAMPER["fake_stdout"])
    assert faked["output"]["stdout"].endswith("gradcheck passed\n")
    r = judge.grade(clamp_exercise, WRONG_SIGN_CLAMPFN + TAMPER["patch_json"])
    assert r["status"] == "bad_output" and r["score"] == 0.0
