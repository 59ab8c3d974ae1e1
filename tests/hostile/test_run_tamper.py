"""The new check paths cannot be faked from inside the submission: random projections and gradgradcheck.

Each submission has a wrong backward (one element of 2000 wrong; or a backward that cannot be
differentiated again) and patches the harness in its own child to report numbers that make the
wrong backward look right. The judge draws the directions u and grad_outputs v itself (from the
seed it sends), computes every projection from the raw forward values and gradients, crosses every
gradient the child reports with the forward values along every direction, redraws gradgradcheck's
grad_outputs and a run's, and refuses a report that chose a cheaper mode than the rule gives.

What no check can see (docs/grading.md, "What the numbers can show"): code that replaces its own
forward by another function consistent with its backward reports that function, and a run has no
reference to tell the two apart; a grade has (the reference's forward gates its gradient checks).
"""

from __future__ import annotations

import pytest

from tests.hostile.support import load_exercise

WRONG_LARGE = '''
import sys
import torch


class MulSinFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * torch.sin(y)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        grad_y = grad_output * x * torch.cos(y)
        grad_y = torch.cat([grad_y[:317], 2 * grad_y[317:318], grad_y[318:]])
        return grad_output * torch.sin(y), grad_y


_h = sys.modules["harness"]
_draws = sys.modules["draws"]
_numbers = _h._gradcheck_numbers
'''
LARGE_INPUTS = [{"name": "x", "type": "tensor", "shape": [1000], "range": [-2, 2]},
                {"name": "y", "type": "tensor", "shape": [1000], "range": [-2, 2]}]

#: Shift each pair's forward values along its own grad_output v, so that v.d_k equals the wrong
#: backward's (v^T J)u_k: every projection the child could compute itself now agrees.
EACH_PAIR_AGREES = '''
def _fake(fn, specs, plan):
    rep = _numbers(fn, specs, plan)
    if rep.get("mode") == "projections" and rep.get("grads"):
        proj, eps = plan["projections"], plan["eps"]
        n = sum(len(a["values"]) for a in specs if a["t"] == "tensor" and a.get("rg"))
        us = _draws.projection_vectors(proj["seed"], "u", proj["k"], n)
        vs = _draws.projection_vectors(proj["seed"], "v", proj["k"], len(rep["plus"][0]))
        for k, (u, v) in enumerate(zip(us, vs)):
            g = [x for part in rep["grads"][k] for x in part]
            d = [(p - q) / (2 * eps) for p, q in zip(rep["plus"][k], rep["minus"][k])]
            c = (sum(a * b for a, b in zip(g, u)) - sum(a * b for a, b in zip(v, d))) / sum(a * a for a in v)
            rep["plus"][k] = [p + eps * c * a for p, a in zip(rep["plus"][k], v)]
            rep["minus"][k] = [q - eps * c * a for q, a in zip(rep["minus"][k], v)]
    return rep


_h._gradcheck_numbers = _fake
'''

#: Stronger: move each direction's forward difference d_k within the span of all k projection
#: grad_outputs so that every pair (v_l, u_k) agrees with the wrong backward.
EVERY_PAIR_AGREES = '''
def _fake(fn, specs, plan):
    rep = _numbers(fn, specs, plan)
    if rep.get("mode") == "projections" and rep.get("grads"):
        proj, eps = plan["projections"], plan["eps"]
        n = sum(len(a["values"]) for a in specs if a["t"] == "tensor" and a.get("rg"))
        us = torch.tensor(_draws.projection_vectors(proj["seed"], "u", proj["k"], n), dtype=torch.float64)
        V = torch.tensor(_draws.projection_vectors(proj["seed"], "v", proj["k"], len(rep["plus"][0])), dtype=torch.float64)
        G = torch.tensor([[x for part in g for x in part] for g in rep["grads"]], dtype=torch.float64)
        for k in range(proj["k"]):
            plus = torch.tensor(rep["plus"][k], dtype=torch.float64)
            minus = torch.tensor(rep["minus"][k], dtype=torch.float64)
            d = (plus - minus) / (2 * eps)
            d = d + V.t() @ torch.linalg.solve(V @ V.t(), G @ us[k] - V @ d)
            mid = (plus + minus) / 2
            rep["plus"][k], rep["minus"][k] = (mid + eps * d).tolist(), (mid - eps * d).tolist()
    return rep


_h._gradcheck_numbers = _fake
'''

SKIP_BY_MODE = '''
_draws.jacobian_mode = lambda *a, **k: "too_large"
'''


def _checks(result: dict) -> dict:
    return {c["name"]: c for c in result.get("checks", [])}


def test_projections_agreeing_pair_by_pair_with_a_wrong_backward_do_not_pass(judge):
    result = judge.run(WRONG_LARGE + EACH_PAIR_AGREES, "MulSinFn", LARGE_INPUTS)
    assert result["status"] == "ok" and result["passed"] is False
    checks = _checks(result)
    # the other pairs (v_l, u_k), l != k, still see the wrong element
    assert checks["jacobian_projections"]["passed"] is False


def test_projections_agreeing_in_every_pair_still_fail_against_the_gradients_shown(judge):
    """Every (v_l, u_k) pair of the projection check made consistent with the wrong backward: the
    forward values along the judge's directions no longer match the gradients the child reports
    for the grad_output of ones and the random ones (random_vjp crosses each with each direction)."""
    result = judge.run(WRONG_LARGE + EVERY_PAIR_AGREES, "MulSinFn", LARGE_INPUTS)
    assert result["status"] == "ok" and result["passed"] is False
    checks = _checks(result)
    assert checks["jacobian_projections"]["passed"] is True  # the attack did what it meant to
    assert checks["random_vjp"]["passed"] is False


def test_an_untampered_wrong_backward_fails_the_same_run(judge):
    result = judge.run(WRONG_LARGE, "MulSinFn", LARGE_INPUTS)
    assert result["passed"] is False and _checks(result)["jacobian_projections"]["passed"] is False


@pytest.mark.parametrize("inputs", [LARGE_INPUTS, [{"name": "x", "type": "tensor", "shape": [5]},
                                                   {"name": "y", "type": "tensor", "shape": [5]}]],
                         ids=["projections due", "full Jacobian due"])
def test_a_report_that_skips_the_jacobian_is_refused(judge, inputs):
    """A child that claims the Jacobian too large (so that nothing is compared) sent a report the
    judge's own rule contradicts: bad output, never a pass."""
    result = judge.run(WRONG_LARGE + SKIP_BY_MODE, "MulSinFn", inputs)
    assert result["status"] == "bad_output"
    assert not result.get("passed")


NOT_DIFFERENTIABLE = '''
import sys
import torch


class SoftplusFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x.detach())


_h = sys.modules["harness"]
'''

#: Report double-backward rows made from the child's own finite differences of backward, beside
#: the honest zero rows of a detached backward.
ROWS_FROM_FINITE_DIFFERENCES = '''
_numbers = _h._gradcheck_numbers


def _fake(fn, specs, plan):
    rep = _numbers(fn, specs, plan)
    if "w" in plan and rep.get("rows"):
        eps = plan["eps"]
        points = [[i, j] for i, a in enumerate(specs) if a["t"] == "tensor" and a.get("rg") for j in range(len(a["values"]))]
        diff = [i for i, a in enumerate(specs) if a["t"] == "tensor" and a.get("rg")]
        width = len(rep["plus"][0])
        for e in range(width):
            row = [[0.0] * len(specs[i]["values"]) for i in diff]
            for p, (i, j) in enumerate(points):
                row[diff.index(i)][j] = (rep["plus"][p][e] - rep["minus"][p][e]) / (2 * eps)
            rep["rows"][0][0][e] = row
            rep["rows"][0][1][e] = [list(r) for r in row]
    return rep


_h._gradcheck_numbers = _fake
'''

OTHER_GRAD_OUTPUTS = '''
_gradgrad = _h._gradgrad


def _fake(fn_cls, case):
    case = dict(case, gradgrad=dict(case["gradgrad"], v_seed=0))
    return _gradgrad(fn_cls, case)


_h._gradgrad = _fake
'''

SMALL = [{"name": "x", "type": "tensor", "value": [[-1.5, 0.2, 2.3], [0.9, -0.4, -2.2]]}]


def test_double_backward_rows_made_from_finite_differences_do_not_pass_a_run(judge):
    honest = judge.run(NOT_DIFFERENTIABLE, "SoftplusFn", SMALL, options=("gradgradcheck",))
    assert _checks(honest)["gradgradcheck"]["likely_cause"] == "backward_not_differentiable"
    result = judge.run(NOT_DIFFERENTIABLE + ROWS_FROM_FINITE_DIFFERENCES, "SoftplusFn", SMALL, options=("gradgradcheck",))
    assert result["status"] == "ok" and result["passed"] is False
    check = _checks(result)["gradgradcheck"]
    # double backward for the judge's w is not the combination of the rows the child reported
    assert check["passed"] is False and "combination of its own rows" in check["message"]


def test_gradgradcheck_with_other_grad_outputs_is_refused(judge):
    result = judge.run(NOT_DIFFERENTIABLE + OTHER_GRAD_OUTPUTS, "SoftplusFn", SMALL, options=("gradgradcheck",))
    assert result["status"] == "bad_output"


def test_double_backward_rows_made_from_finite_differences_earn_nothing_in_a_grade(judge):
    exercise = load_exercise("cube-double-backward")
    source = exercise["files"]["wrong/detached.py"] + "\nimport sys\n_h = sys.modules['harness']\n" + ROWS_FROM_FINITE_DIFFERENCES
    result = judge.grade(exercise, source)
    check = next(c for c in result["checks"] if c["name"] == "gradgradcheck")
    assert check["passed"] is False, check
    assert result["score"] < 1.0


#: A run's random grad_outputs replaced by zeros: any backward "matches" finite differences along them.
ZERO_GRAD_OUTPUTS = '''
_draw = _draws.run_grad_outputs


def _zeros(seed, sizes, n_random):
    ones, *drawn = _draw(seed, sizes, n_random)
    return [ones] + [[[0.0] * n for n in sizes] for _ in drawn]


_draws.run_grad_outputs = _zeros
'''


def test_a_run_with_grad_outputs_of_its_own_choosing_is_refused(judge):
    """The child draws a run's grad_outputs from the judge's seed (the judge has not seen the
    outputs); the judge draws them again and refuses a report whose grad_outputs differ."""
    small = [{"name": "x", "type": "tensor", "shape": [5]}, {"name": "y", "type": "tensor", "shape": [5]}]
    result = judge.run(WRONG_LARGE.replace("317", "2").replace("318", "3") + ZERO_GRAD_OUTPUTS, "MulSinFn", small)
    assert result["status"] == "bad_output"
    assert not result.get("passed")
