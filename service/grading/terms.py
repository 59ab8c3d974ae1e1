"""The words of grading, in one place: what each check is called and checks, what each likely
cause is called and what to do about it, where an exception was raised (an error's `where`), and
what a report's status means.

Every page (the learner pages, the dashboard) and every sentence the grader writes for a learner
takes its names from here: the API serves this table (GET /api/v1/terms), the learner pages embed
it, and diagnosis.py builds its sentences from it. What each check weighs and how it decides:
registry.py, under the same names. LIKELY_CAUSES is a view of this table.

No identifier of the code appears in a title, description, advice or verdict, except the Python and
torch names a learner writes themselves (forward, backward, grad_output, ctx.save_for_backward...).

Torch-free, stdlib only: imported by the web process.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
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


#: Every check, of grades and of runs (registry.CHECKS, in their order): one term
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
    CheckTerm("forward_ad", "Forward-mode check (jvp)",
              "jvp agrees with finite differences of forward along random tangents, as "
              "torch.autograd.gradcheck(check_forward_ad=True) checks; a zero tangent gives zero; an input without "
              "a tangent is handled; and jvp agrees with backward: <J v, u> = <v, J^T u>.",
              failed="Not yet: your jvp (forward mode) is wrong."),
    CheckTerm("in_place", "In-place Function",
              "A forward that changes an input in place marks it with ctx.mark_dirty and returns it: called on a copy "
              "of each input inside a bigger expression, it returns that very tensor, whose version counter moves, "
              "and the gradient through the whole expression, uses of the input after the call included, matches "
              "finite differences; on a leaf that requires grad, torch refuses it.",
              failed="Not yet: your in-place Function is not safe inside a bigger expression."),
    CheckTerm("vmap", "Works under vmap",
              "torch.func.vmap of your Function over a batch gives the same outputs and gradients as calling it on "
              "each batch entry alone, with the batch at the front, at the end (in_dims and out_dims other than 0), "
              "and with some inputs shared by the whole batch.",
              failed="Not yet: your Function does not work under vmap."),
    CheckTerm("batched_grad", "Batched backward",
              "backward for a batch of grad_outputs at once (torch.func.vmap over backward, as "
              "torch.autograd.gradcheck's check_batched_grad) gives the same gradients as for each grad_output alone.",
              failed="Not yet: your backward does not work for a batch of grad_outputs."),
    # a custom op (torch.library.custom_op): torch.library.opcheck's four tests, each decided by the judge
    CheckTerm("op_schema", "Custom op keeps to its schema",
              "The op changes no input its schema does not declare (mutates_args), and returns new tensors: no "
              "output is an input or shares its memory, as torch.library.opcheck's schema test checks.",
              failed="Not yet: your custom op does not do what its schema says."),
    CheckTerm("op_autograd_registration", "Custom op's autograd formula",
              "Gradients flow through the op by an autograd formula registered with register_autograd (its "
              "backward and setup_context), as torch.library.opcheck's autograd registration test checks, and "
              "setup_context saves what backward needs.",
              failed="Not yet: gradients cannot flow through your custom op."),
    CheckTerm("op_fake_tensor", "Custom op's fake kernel",
              "The op has a fake kernel (register_fake), and on fake tensors it returns outputs with the shape, "
              "dtype, device and strides of the real outputs, as torch.library.opcheck's fake tensor test checks.",
              failed="Not yet: your custom op's fake kernel does not describe its outputs."),
    CheckTerm("op_aot_dispatch", "Custom op under torch.compile",
              "Traced as torch.compile traces it (AOTAutograd, dynamic shapes), the op computes the same outputs "
              "and gradients as it does eagerly, as torch.library.opcheck's AOT dispatch test checks.",
              failed="Not yet: your custom op does not work under torch.compile."),
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
    CauseTerm("jvp_missing", "The Function has no jvp",
              "Forward mode calls a static jvp(ctx, *tangents): add one that returns the derivative of forward "
              "times the tangents, one tangent per output, and save what it needs with ctx.save_for_forward(...)."),
    CauseTerm("jvp_ignores_tangent", "jvp ignores the tangent",
              "Multiply your derivative by each input's tangent (for example x_t * torch.cos(x)): a zero tangent "
              "must give a zero output tangent."),
    CauseTerm("jvp_wrong_derivative", "jvp computes a different derivative",
              "Work out the derivative of forward again and compare jvp with it at the values shown: jvp returns the "
              "derivative times the tangent."),
    CauseTerm("jvp_wrong_count", "jvp does not return one tangent per output",
              "jvp returns one tangent per forward output (not one per input, as backward does): the tangent alone "
              "for a single output, a tuple of them for several."),
    CauseTerm("jvp_wrong_shape", "jvp returns a tangent of the wrong shape",
              "Each tangent jvp returns has its output's shape (no sum, no extra dimension)."),
    CauseTerm("jvp_missing_tangent", "jvp fails when an input has no tangent",
              "An input without a tangent reaches jvp as zeros, or as None after ctx.set_materialize_grads(False): "
              "check for None and treat it as zero, and give the same result as for a zero tangent."),
    CauseTerm("jvp_backward_disagree", "jvp and backward disagree",
              "Both are derivatives of the same forward, so <J v, u> must equal <v, J^T u>: jvp matches finite "
              "differences here, so look at backward."),
    CauseTerm("jvp_signature", "jvp takes the wrong arguments",
              "jvp(ctx, *tangents) gets one tangent per forward input, in order (None for an input that is not a "
              "tensor), as forward gets its inputs."),
    CauseTerm("jvp_not_saved_for_forward", "jvp reads tensors that were not saved for it",
              "In forward (or setup_context), save what jvp needs with ctx.save_for_forward(...): in jvp, "
              "ctx.saved_tensors holds only those."),
    CauseTerm("jvp_modifies_tangent", "jvp changes a tangent in place",
              "Compute a new tensor (x_t * mask, not x_t.mul_(mask)); only an input that forward changes in place "
              "(marked dirty) has its tangent changed in place."),
    CauseTerm("jvp_not_in_place", "jvp of a forward that changes its input must change that input's tangent",
              "forward marks its input dirty, so jvp must update that input's tangent in place and return it (for "
              "example x_t.mul_(2))."),
    CauseTerm("jvp_error", "jvp raised an exception", "Read the error below and fix that line of jvp."),
    CauseTerm("forward_not_repeatable", "forward gives different values for the same input",
              "Make forward a pure function of its inputs (no random noise, no state kept between calls)."),
    CauseTerm("not_marked_dirty", "forward changes its input without ctx.mark_dirty",
              "Mark each input forward changes in place with ctx.mark_dirty(x) and return that input itself "
              "(return x): then every later use of x goes through your backward."),
    CauseTerm("dirty_not_returned", "forward marks an input dirty but returns another tensor",
              "Return the very input you changed in place (return x, not x.clone() or a new tensor): torch requires "
              "each tensor given to ctx.mark_dirty to be an output."),
    CauseTerm("overwritten_input", "backward uses the input's value after forward overwrote it",
              "A tensor saved before an in-place change holds the new values by the time backward runs: save a copy "
              "before the change (ctx.save_for_backward(x.clone())), or write backward from the output."),
    CauseTerm("leaf_in_place", "An in-place change on a leaf that requires grad",
              "Mark the input you change with ctx.mark_dirty(x): torch then refuses a leaf that requires grad, "
              "instead of letting its values change under autograd."),
    CauseTerm("dirty_not_input", "ctx.mark_dirty is given a tensor that is not an input",
              "Give ctx.mark_dirty only the inputs forward changes in place; a tensor forward made itself needs no "
              "marking."),
    CauseTerm("not_in_place", "forward does not change its input in place",
              "This exercise asks for an in-place Function: change the input in place (for example "
              "x.clamp_(min=0)), mark it with ctx.mark_dirty(x) and return it."),
    CauseTerm("vmap_setup_context_missing", "Your Function is not ready for vmap: it has no setup_context",
              "torch.func.vmap needs torch 2's style: forward(x, ...) takes no ctx, a static setup_context(ctx, inputs, "
              "output) saves what backward needs, and the class sets generate_vmap_rule = True."),
    CauseTerm("vmap_rule_missing", "Your Function is not ready for vmap: it has no vmap rule",
              "Set generate_vmap_rule = True in the class (a forward and backward written with torch operations get "
              "their batched version for free), or write a vmap staticmethod; not both."),
    CauseTerm("vmap_in_place", "An in-place operation on a batched tensor",
              "Under vmap a tensor may carry a batch your code does not see: compute a new tensor instead of writing "
              "into one (x.clamp(...), not x.clamp_(...)), and make a buffer you fill from the batched tensor "
              "(torch.zeros_like(x), not torch.zeros(x.shape)). generate_vmap_rule cannot batch a Function that marks "
              "its input dirty: give it a vmap staticmethod instead."),
    CauseTerm("vmap_data_dependent", ".item(), NumPy or Python control flow on a tensor's values under vmap",
              "Under vmap one tensor holds a whole batch, so it has no single value: use torch operations "
              "(torch.where(mask, a, b) for an if/else, x * mask instead of x[mask] = ...), and no .item(), .tolist(), "
              ".numpy() or float(t)."),
    CauseTerm("vmap_wrong_out_dims", "Your vmap staticmethod returns the wrong out_dims",
              "Return, for each output, the dimension that holds the batch in the tensor you return (None if it has "
              "none): for a result computed elementwise, the in_dims of the input it came from, not always 0."),
    CauseTerm("vmap_mismatch", "The batched result differs from one call per batch entry",
              "Under vmap each batch entry must be computed as if alone: no sum, mean or maximum over the batch "
              "dimension, no sizes written in advance (use x.shape, -1 or expand_as), and a vmap staticmethod must "
              "put each output's batch where its out_dims says."),
    CauseTerm("vmap_error", "Your Function raised an exception under vmap",
              "Read the error below: under vmap every tensor carries a batch dimension your code does not see, and "
              "an operation torch cannot batch raises."),
    CauseTerm("batched_grad_mismatch", "Batched backward differs from one grad_output at a time",
              "backward must treat grad_output as one more tensor, possibly carrying a batch it does not see: compute "
              "with torch operations on it, reshape with its own shape (expand_as, reshape_as), and keep no state "
              "between calls."),
    # custom ops (torch.library.custom_op)
    CauseTerm("op_undeclared_mutation", "The op changes an input its schema does not declare",
              'Declare every input the op changes in mutates_args (for example mutates_args=("x",)), or compute '
              "a new tensor instead of changing the input in place."),
    CauseTerm("op_output_aliases_input", "An output is an input, or shares its memory",
              "A custom op returns new tensors: return x.clone() or a newly computed tensor, not x itself or a view "
              "of it (such as x.view(...) or x[0])."),
    CauseTerm("op_no_autograd_formula", "No autograd formula is registered",
              "Register one with op.register_autograd(backward, setup_context=setup_context), so gradients flow "
              "through the op."),
    CauseTerm("op_autograd_wrong_key", "Autograd is wired inside the op, not registered",
              "Register the gradient with op.register_autograd(...); do not call a torch.autograd.Function from the "
              "op's implementation."),
    CauseTerm("op_setup_context_error", "setup_context saves wrongly",
              "setup_context(ctx, inputs, output) gets the op's inputs as a tuple: unpack it (x, scale = inputs), "
              "save tensors with ctx.save_for_backward(...) and plain values on ctx (ctx.scale = scale): "
              "everything backward reads."),
    CauseTerm("op_no_fake_kernel", "No fake kernel is registered",
              "Register one with @op.register_fake: a function of the same inputs that returns empty tensors shaped "
              "like the real outputs (for example torch.empty_like(x)), so torch.compile can trace the op."),
    CauseTerm("op_fake_wrong_metadata", "The fake kernel returns the wrong shape or dtype",
              "Return tensors with exactly the shape, dtype, device and strides of the real outputs, made from the "
              "inputs' shapes (torch.empty_like(x), x.new_empty(...))."),
    CauseTerm("op_fake_kernel_error", "The fake kernel raised an exception",
              "A fake kernel runs on fake tensors, which have shapes but no values: it cannot read values (no .item(), "
              ".tolist() or .numpy(), no if on a tensor's value)."),
    CauseTerm("op_not_traceable", "The op runs eagerly but not when compiled",
              "torch.compile traces the op with fake tensors of symbolic shapes: the fake kernel may only make "
              "tensors from the inputs' shapes, and backward may only use torch operations (no .item() or "
              ".numpy())."),
    CauseTerm("op_compiled_differs", "Compiled, the op computes different values",
              "Make the op a function of its inputs (no randomness, no state kept between calls), its fake kernel "
              "exact, and backward a function of what setup_context saved."),
)

#: Named likely causes: name -> title and advice in one line (a report's hint and feedback).
LIKELY_CAUSES: Mapping[str, str] = MappingProxyType({name: term.sentence for name, term in CAUSES.items()})

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
    StageTerm("jvp", "in jvp (forward mode)", "Your jvp"),
    StageTerm("zero_tangent", "in jvp, called with zero tangents", "Your jvp", " when called with zero tangents"),
    StageTerm("input_without_tangent", "in jvp, called for an input without a tangent", "Your jvp",
              " when an input had no tangent"),
    StageTerm("forward_ad", "during the forward-mode check", "Your code", " during the forward-mode check"),
    StageTerm("vmap", "under torch.func.vmap, over a batch of inputs", "Your Function", " under torch.func.vmap"),
    StageTerm("vmap backward", "in backward, through torch.func.vmap", "Your backward",
              " when called through torch.func.vmap"),
    StageTerm("batched backward", "in backward, called with a batch of grad_outputs at once", "Your backward",
              " when called with a batch of grad_outputs at once"),
    StageTerm("op call", "when the grader called your custom op", "Your custom op", " when the grader called it"),
    StageTerm("op implementation", "in your custom op's function, called directly", "Your custom op's function",
              " when the grader called it directly"),
    StageTerm("fake tensors", "while your custom op ran on fake tensors (its fake kernel)", "Your fake kernel",
              " when your custom op ran on fake tensors"),
    StageTerm("compiled", "while your custom op was traced as torch.compile traces it", "Your custom op",
              " when it was traced as torch.compile traces it"),
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
