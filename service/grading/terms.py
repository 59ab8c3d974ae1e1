"""The words of grading, in one place: what each check is called and checks, what each likely
cause is called and what to do about it, where an exception was raised (an error's `where`), and
what a report's status means.

Every page (the learner pages, the dashboard) and every sentence the grader writes for a learner
takes its names from here: the API serves this table (GET /api/v1/terms), the learner pages embed
it, and diagnosis.py builds its sentences from it. spec.CHECKS keeps only the checks' weights;
spec.LIKELY_CAUSES and checks.RUN_CHECKS are views of this table.

No identifier of the code appears in a title, description, advice or verdict, except the Python and
torch names a learner writes themselves (forward, backward, grad_output, ctx.save_for_backward...).

Torch-free, stdlib only: imported by the web process.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CheckTerm:
    """A check of a grade or of a run: its short title, what it checks, and the verdict line a
    result opens with when this is the check that failed (diagnosis.py)."""

    name: str
    title: str
    description: str
    failed: str = "Not yet: some checks failed."


@dataclass(frozen=True)
class CauseTerm:
    """A likely cause: what is wrong, in a few words (title), and what to do (advice)."""

    name: str
    title: str
    advice: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "title": self.title, "advice": self.advice}

    @property
    def sentence(self) -> str:
        """Title and advice in one line (a report's `hint` and `feedback`)."""
        return f"{self.title}: {self.advice[:1].lower()}{self.advice[1:]}"


@dataclass(frozen=True)
class StageTerm:
    """Where the learner's code raised (an error's `where`): `words` follows "raised TypeError"
    ("... while Python read your code"); `subject` and `when` make the sentence that starts with
    who raised ("Your backward raised TypeError when called with a grad_output of zeros: ...")."""

    name: str
    words: str
    subject: str = "Your code"
    when: str = ""


@dataclass(frozen=True)
class StatusTerm:
    """A report's status (a grade's or a run's): its short title (a badge, a filter's choice, an
    attempt in a list: "Does not parse") and its verdict, one sentence ("Your code does not parse.")."""

    name: str
    title: str
    verdict: str


def _table(*terms: Any) -> dict[str, Any]:
    return {t.name: t for t in terms}


#: Every check, of grades (spec.CHECKS, in their order) and of runs (checks.RUN_CHECKS): one term
#: where a grade and a run make the same check.
CHECKS: dict[str, CheckTerm] = _table(
    CheckTerm("parses", "Code parses", "The code is valid Python.",
              failed="Your code does not parse."),
    CheckTerm("entry_point", "Function class defined",
              "The class the exercise names exists and subclasses torch.autograd.Function.",
              failed="Not yet: your code does not define the Function the exercise asks for."),
    CheckTerm("forward", "Forward values", "forward computes the same values as the model answer on generated inputs.",
              failed="Not yet: your forward does not compute the right values."),
    CheckTerm("output_shape_dtype", "Output shape and dtype",
              "forward's outputs have the right shape and dtype, and require grad when they should.",
              failed="Not yet: your forward's output is not the right kind of tensor."),
    CheckTerm("inputs_unchanged", "Inputs left unchanged",
              "forward leaves its inputs unchanged (unless it returns them, marked dirty).",
              failed="Not yet: your forward changes its input."),
    CheckTerm("backward_arity", "What backward returns",
              "backward returns one value per forward input, in order: None for each input that takes no gradient "
              "(such as a number), and each gradient shaped like its input.",
              failed="Not yet: your backward does not return the right values."),
    CheckTerm("gradcheck", "Numerical gradient check",
              "backward agrees with finite differences of forward in float64, as torch.autograd.gradcheck checks: "
              "every entry of the Jacobian, calling backward twice with the same grad_output, and zero and "
              "undefined (None) grad_outputs.",
              failed="Not yet: your backward's gradients are wrong."),
    CheckTerm("gradient", "Gradients for random grad_outputs",
              "backward's gradients match the model answer's for random grad_outputs (the chain rule).",
              failed="Not yet: your backward's gradients are wrong."),
    CheckTerm("boundary", "Gradient at the boundary points",
              "The gradient is right at the exercise's boundary points (where the function has a corner).",
              failed="Not yet: your backward's gradients are wrong at the boundary points."),
    CheckTerm("gradgradcheck", "Double backward check",
              "backward can itself be differentiated, and its derivative agrees with finite differences of backward "
              "(as torch.autograd.gradgradcheck checks).",
              failed="Not yet: your backward cannot be differentiated correctly (double backward)."),
    CheckTerm("grad_output_unchanged", "grad_output left unchanged", "backward leaves grad_output unchanged.",
              failed="Not yet: your backward changes grad_output."),
    CheckTerm("technique", "Technique", "The code uses the technique the exercise teaches.",
              failed="Not yet: your code does not use the technique this exercise teaches."),
    CheckTerm("jacobian_projections", "Numerical gradient check (random directions)",
              "For a Jacobian too large to compare entry by entry: backward agrees with finite differences of "
              "forward along random input directions, for random grad_outputs, and handles zero and undefined "
              "grad_outputs.",
              failed="Not yet: your backward's gradients are wrong."),
    CheckTerm("random_vjp", "Gradients for random grad_outputs",
              "backward's gradients for random grad_outputs match finite differences of forward (the chain rule).",
              failed="Not yet: your backward's gradients are wrong."),
    CheckTerm("needs_input_grad", "Gradients when one input requires grad",
              "backward gives the same gradient when only one input requires grad (ctx.needs_input_grad honoured).",
              failed="Not yet: your backward's gradients change with which inputs require grad."),
)

#: Every likely cause a grade or a run names (a wrong/*.py file's `# expect:` names one of these).
CAUSES: dict[str, CauseTerm] = _table(
    CauseTerm("forgot_grad_output", "backward ignores grad_output",
              "Multiply your local derivative by grad_output (the chain rule)."),
    CauseTerm("wrong_sign", "The gradient has the wrong sign", "Check the sign of your derivative."),
    CauseTerm("constant_factor", "The gradient is off by a constant factor",
              "Look for a missing or extra constant in your derivative (such as the 2 in the derivative of x**2)."),
    CauseTerm("gradient_for_non_tensor", "backward returns a gradient for an input that is not a tensor",
              "Return None in the place of each input that is not a tensor (such as a bound)."),
    CauseTerm("wrong_number_of_returns", "backward returns the wrong number of values",
              "Return exactly one value per forward input, in order (None for those that take no gradient)."),
    CauseTerm("boundary_only", "The gradient is wrong only at the boundary points",
              "Check whether your mask uses >= or > (and <= or <)."),
    CauseTerm("float32_imprecise", "The computation runs in float32",
              "float32 is too imprecise for a numerical check: keep the input's dtype (float64) throughout."),
    CauseTerm("not_reduced", "A gradient has the broadcast shape instead of its input's shape",
              "Sum it over the broadcast dimensions (for example with .sum(dim, keepdim=True) or sum_to_size)."),
    CauseTerm("needs_input_grad", "backward ignores which inputs need a gradient",
              "Return None for inputs that need no gradient (check ctx.needs_input_grad)."),
    CauseTerm("grad_output_modified", "backward changes grad_output in place",
              "Compute a new tensor instead (for example grad_output * mask, not grad_output[...] = 0)."),
    CauseTerm("input_modified", "forward changes its input in place",
              "Compute a new tensor instead (for example x.clamp(...), not x.clamp_(...))."),
    CauseTerm("forward_wrong", "forward does not compute what the exercise asks",
              "Fix forward first: the gradients are checked against it."),
    CauseTerm("output_detached", "The output is cut off from autograd",
              "Return the result of your computation directly, without .detach(), .item(), .numpy() or .data."),
    CauseTerm("backward_error", "backward raised an exception", "Read the error below and fix that line of backward."),
    CauseTerm("not_reentrant", "backward gives different answers for the same grad_output",
              "Make backward a pure function of what forward saved and grad_output (no random noise, no state kept "
              "between calls)."),
    CauseTerm("forward_error", "forward raised an exception", "Read the error below and fix that line of forward."),
    CauseTerm("backward_not_differentiable", "backward cannot be differentiated again",
              "Compute backward with torch operations on saved tensors (no .detach(), no torch.no_grad(), no "
              ".item()), so autograd can differentiate it."),
    CauseTerm("wrong_value", "backward computes a different derivative",
              "Work out the derivative of forward again, and compare it with your backward at the value shown."),
    CauseTerm("grad_output_not_used_per_output", "backward takes one grad_output, but forward has several outputs",
              "Accept one grad_output per forward output (for example backward(ctx, grad_values, grad_indices))."),
    CauseTerm("not_marked_non_differentiable", "An output that carries no gradient is not marked",
              "Mark it with ctx.mark_non_differentiable(...) (such as the indices of a max)."),
    CauseTerm("setup_context_missing", "forward is not written in torch 2's style",
              "forward(x, ...) takes no ctx, and a static setup_context(ctx, inputs, output) saves what backward "
              "needs."),
    CauseTerm("output_not_saved", "backward recomputes what forward already computed",
              "Save forward's output with ctx.save_for_backward(...) and reuse it in backward."),
    CauseTerm("materialize_grads_on", "backward is never given None for an unused output",
              "Call ctx.set_materialize_grads(False) in forward or setup_context: an output that gets no gradient "
              "then sends None instead of a tensor of zeros, and backward skips its part."),
    CauseTerm("once_differentiable_missing", "backward does not say that it cannot be differentiated again",
              "Decorate backward with @once_differentiable (under @staticmethod): it uses code autograd cannot "
              "record, and the decorator makes it run without recording and refuse a second derivative."),
    CauseTerm("wrong_dtype", "An output has the wrong dtype", "Keep the input's dtype."),
    CauseTerm("wrong_shape", "An output or a gradient has the wrong shape",
              "Each output must have the expected shape, and each gradient its input's shape."),
    CauseTerm("entry_point_missing", "The Function class is missing",
              "Define the class the exercise names (check its spelling) as a subclass of torch.autograd.Function."),
    CauseTerm("load_error", "Your file raised an exception when it was loaded",
              "Fix the code at the top level of your file (outside forward and backward)."),
)

#: Where an exception can be raised (the `where` of an error: judge.py's parse, harness.py's others).
STAGES: dict[str, StageTerm] = _table(
    StageTerm("parse", "while Python read your code", "Your code", " while Python read it"),
    StageTerm("load", "while your file was loaded (its top-level code)", "Your file", " when it was loaded"),
    StageTerm("entry point", "while the grader looked up your Function class", "Your code",
              " while the grader looked up your Function class"),
    StageTerm("harness", "while the grader prepared the inputs", "Your code", " while the grader prepared the inputs"),
    StageTerm("forward", "in forward", "Your forward"),
    StageTerm("grad_output", "while the grader made a grad_output for your outputs", "Your forward's output",
              " when the grader made a grad_output for it"),
    StageTerm("backward", "in backward", "Your backward"),
    StageTerm("numerical", "in forward, while the numerical check moved the inputs a little", "Your forward",
              " when the numerical check moved the inputs a little"),
    StageTerm("analytical", "in backward, while the numerical check called it for each output element",
              "Your backward", " when the numerical check called it for each output element"),
    StageTerm("zero_grad_output", "in backward, called with a grad_output of zeros", "Your backward",
              " when called with a grad_output of zeros"),
    StageTerm("undefined_grad_output", "in backward, called with an undefined (None) grad_output", "Your backward",
              " when called with an undefined (None) grad_output"),
    StageTerm("gradcheck", "during the numerical gradient check", "Your code", " during the numerical gradient check"),
    StageTerm("gradgradcheck", "during the double backward check", "Your code", " during the double backward check"),
    StageTerm("double backward", "while autograd differentiated your backward", "Your backward",
              " when autograd differentiated it (double backward)"),
)

#: A report's status: a grade's (models.attempt.VERDICTS) and a run's ("ok", "error", ...).
STATUSES: dict[str, StatusTerm] = _table(
    StatusTerm("passed", "Passed", "Every check passed."),
    StatusTerm("failed", "Failed", "Some checks failed."),
    StatusTerm("ok", "Ran", "Your code ran."),
    StatusTerm("error", "Raised an exception", "Your code raised an exception."),
    StatusTerm("syntax_error", "Does not parse", "Your code does not parse."),
    StatusTerm("too_large", "Too large", "Your code is too large."),
    StatusTerm("timeout", "Ran too long", "Your code ran too long and was stopped."),
    StatusTerm("memory_limit", "Out of memory", "Your code ran out of memory."),
    StatusTerm("output_limit", "Printed too much", "Your code printed far too much and was stopped."),
    StatusTerm("forbidden", "Forbidden by the sandbox", "Your code tried something the sandbox forbids and was stopped."),
    StatusTerm("crashed", "Crashed", "Your code crashed before it reported."),
    StatusTerm("bad_output", "No valid result", "Your code sent back something that is not a result."),
    StatusTerm("invalid_inputs", "Invalid inputs", "The inputs of the run are not valid."),
    StatusTerm("internal_error", "Grader failed", "The grader failed (not your code): try again later."),
)


def terms_json() -> dict[str, Any]:
    """The whole table as the API serves it and the learner pages embed it."""
    return {
        "checks": [{"name": t.name, "title": t.title, "description": t.description} for t in CHECKS.values()],
        "causes": [t.as_json() for t in CAUSES.values()],
        "stages": [{"name": t.name, "words": t.words} for t in STAGES.values()],
        "statuses": [{"name": t.name, "title": t.title, "verdict": t.verdict} for t in STATUSES.values()],
    }


@functools.cache
def code_names() -> re.Pattern[str]:
    """A check's, a cause's or a status's name (those with an underscore) standing alone in a
    text: what no learner-facing sentence, and no page's text, may contain. Not grad_output (the
    learner's own argument), and not ctx.needs_input_grad (torch's), though a cause has that name."""
    names = sorted((n for n in {*CHECKS, *CAUSES, *STATUSES} if "_" in n), key=len, reverse=True)
    return re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?!\w)")
