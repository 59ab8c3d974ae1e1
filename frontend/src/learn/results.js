// Results as the learner reads them: a run's output, values and numerical check, and a grade's
// score, checks, worst element, likely cause and explanation. Everything from the server is text.

import { penaltyNote } from "./standing.js";
import { el } from "../dom.js";
import { num, percent, values } from "../format.js";
import { markdownBlock } from "./markdown.js";

const VERDICTS = {
  passed: "every check passed",
  failed: "some checks failed",
  syntax_error: "the code does not parse",
  too_large: "the code is too large",
  timeout: "the code ran too long and was stopped",
  memory_limit: "the code ran out of memory",
  output_limit: "the code printed far too much",
  forbidden: "the code tried something the sandbox forbids",
  crashed: "the code crashed before it reported",
  bad_output: "the code sent back something that is not a result",
  internal_error: "the grader failed (not your code): try again later",
};

function checkName(name) {
  return String(name).replace(/_/g, " ");
}

function mark(passed) {
  return el("span", { class: passed ? "mark ok" : "mark bad" }, passed ? "✓ passed" : "✗ failed");
}

function pre(label, text, className = "output") {
  return [el("h4", {}, label), el("pre", { class: className, tabindex: "0" }, String(text))];
}

export function errorBlock(error) {
  if (!error) return null;
  const where = error.where ? ` in ${error.where}` : "";
  return el("div", { class: "error-block" },
    el("p", {}, el("strong", {}, `${error.type || "Error"}${where}: `), String(error.message ?? "")),
    error.traceback ? el("pre", { class: "output", tabindex: "0" }, String(error.traceback)) : null);
}

function outputBlocks(output) {
  if (!output) return [];
  const blocks = [];
  if (output.stdout) blocks.push(...pre("Printed (stdout)", output.stdout));
  if (output.stderr) blocks.push(...pre("Errors and warnings (stderr)", output.stderr));
  if (!output.stdout && !output.stderr) blocks.push(el("p", { class: "muted" }, "Nothing was printed."));
  if (output.truncated) blocks.push(el("p", { class: "muted" }, "The output was cut: it was longer than the sandbox keeps."));
  return blocks;
}

function table(caption, head, rows) {
  return el("div", { class: "table-wrap" }, el("table", {},
    el("caption", {}, caption),
    el("thead", {}, el("tr", {}, head.map((cell) => el("th", { scope: "col" }, cell)))),
    el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell, i) => (i === 0 ? el("th", { scope: "row" }, cell) : el("td", {}, cell))))))));
}

function inputValue(input) {
  if ("values" in input) return values(input.values);
  if ("value" in input) return values(input.value);
  return "";
}

function diagnosticsTable(diagnostics, caption) {
  if (!diagnostics || !diagnostics.length) return null;
  const rows = diagnostics.map((d) => [
    checkName(d.check || ""),
    [d.case, d.input].filter(Boolean).join(", "),
    d.index !== undefined ? values(d.index) : "",
    d.input_value !== undefined ? num(d.input_value) : "",
    d.analytical !== undefined ? values(d.analytical) : "",
    d.numerical !== undefined ? values(d.numerical) : "",
    d.expected !== undefined ? values(d.expected) : "",
  ]);
  const head = ["check", "input", "worst element", "input value", "your backward", "finite differences", "expected"];
  const used = head.map((_, i) => i < 2 || rows.some((row) => row[i] !== "")); // no empty column
  return table(caption, head.filter((_, i) => used[i]), rows.map((row) => row.filter((_, i) => used[i])));
}

function causeList(items) {
  const unique = [...new Set((items || []).filter(Boolean))];
  if (!unique.length) return null;
  return el("div", { class: "causes" }, el("h4", {}, "Likely cause"), el("ul", {}, unique.map((text) => el("li", {}, text))));
}

// POST /api/v1/runs' result.
export function renderRun(run) {
  const r = run.result || {};
  const box = el("div", { class: "run-result" });
  box.append(el("h3", {}, "Run result"));
  if (run.status === "error") {
    box.append(el("p", { class: "bad" }, "The sandbox failed to run the code (not your code's fault): try again."));
    return box;
  }
  if (run.status !== "finished") {
    box.append(el("p", {}, `The run is ${run.status}.`));
    return box;
  }
  if (r.status && r.status !== "ok") box.append(el("p", { class: "bad" }, `Verdict: ${VERDICTS[r.status] || r.status}.`));
  const err = errorBlock(r.error);
  if (err) box.append(el("h4", {}, "Your code raised an exception"), err);
  box.append(...outputBlocks(r.output));
  if (r.inputs && r.inputs.length) {
    box.append(table("Inputs", ["input", "type", "values"], r.inputs.map((i) => [i.name,
      i.type === "tensor" ? `tensor ${values(i.shape || [])} ${i.dtype}` : i.type, inputValue(i)])));
  }
  if (r.forward && r.forward.outputs) {
    box.append(table("Forward", ["output", "shape and dtype", "values"], r.forward.outputs.map((o, i) => [
      `output ${i}`, o.kind === "tensor" ? `${values(o.shape || [])} ${o.dtype}${o.requires_grad ? ", requires grad" : ""}` : String(o.type || o.kind || ""),
      o.values !== undefined ? values(o.values) : (o.value !== undefined ? values(o.value) : "")])));
  }
  if (r.gradients) {
    box.append(table("Gradients (of y.sum(), grad_output = ones)", ["input", "gradient"],
      Object.entries(r.gradients).map(([name, g]) => [name, values(g)])));
  }
  if (r.forward && !r.gradcheck && !(r.checks && r.checks.length) && !r.error) {
    const returned = (r.forward.outputs || []).map((o) => (o.kind === "tensor" ? "a tensor" : o.type || o.kind)).join(", ");
    box.append(el("p", { class: "notice" }, `No gradients and no numerical check: forward returned ${returned || "nothing"}, not a tensor that requires grad.`));
  }
  if (r.gradcheck) {
    const g = r.gradcheck;
    box.append(el("div", { class: "gradcheck" },
      el("h4", {}, "Numerical check (gradcheck): ", mark(g.passed)),
      g.message ? el("p", {}, String(g.message)) : null,
      g.note ? el("p", { class: "muted" }, String(g.note)) : null));
  }
  if (r.checks && r.checks.length) {
    box.append(el("h4", {}, "Checks"), el("ul", { class: "checks" }, r.checks.map((c) => el("li", { class: c.passed ? "ok" : "bad" },
      mark(c.passed), " ", el("strong", {}, checkName(c.name)), ": ", String(c.message ?? "")))));
    const diags = r.checks.flatMap((c) => c.diagnostics || []);
    const t = diagnosticsTable(diags, "Where it went wrong (the worst element of each failed check)");
    if (t) box.append(t);
    const causes = causeList(diags.map((d) => d.hint));
    if (causes) box.append(causes);
  }
  if (r.passed !== undefined && r.checks) {
    box.append(el("p", { class: r.passed ? "ok summary" : "bad summary" },
      r.passed ? "Every check passed on these inputs." : "Some checks failed on these inputs."));
  }
  return box;
}

// A graded code attempt (GET /api/v1/attempts/{id}). Scores as whole percentages (the status line
// says the same); a check's weight to one decimal.
export function renderCodeGrade(attempt) {
  const box = el("div", { class: "grade" });
  const report = attempt.report || {};
  if (attempt.status === "error" || report.status === "internal_error") {
    box.append(el("h3", {}, "Not graded"), el("p", { class: "bad" }, VERDICTS.internal_error));
    return box;
  }
  box.append(el("h3", {}, `Score: ${percent(attempt.score ?? 0)}`));
  const codePenalty = penaltyNote(attempt);
  if (codePenalty) box.append(codePenalty);
  box.append(el("p", { class: report.status === "passed" ? "ok summary" : "bad summary" },
      report.status === "passed" ? "Every check passed." : `Not yet: ${VERDICTS[report.status] || report.status}.`));
  if (report.checks) {
    box.append(el("h4", {}, "Checks"), el("ul", { class: "checks" }, report.checks.map((c) => el("li", { class: c.passed ? "ok" : "bad" },
      mark(c.passed), " ", el("strong", {}, checkName(c.name)), c.weight ? ` (${percent(c.weight, 1)} of the score)` : "", ": ",
      String(c.message ?? "")))));
  }
  const t = diagnosticsTable(report.diagnostics, "The worst element of each failed comparison");
  if (t) box.append(t);
  const causes = causeList(report.feedback);
  if (causes) box.append(causes);
  const err = errorBlock(report.error);
  if (err) box.append(el("h4", {}, "Your code raised an exception"), err);
  if (report.output && (report.output.stdout || report.output.stderr)) box.append(...outputBlocks(report.output));
  if (attempt.explanation) box.append(el("h4", {}, "Explanation"), markdownBlock(attempt.explanation));
  return box;
}

// A graded quiz attempt; choiceText looks a choice id up (choice kinds).
export function renderQuizGrade(attempt, choiceText) {
  const box = el("div", { class: "grade" });
  box.append(el("h3", {}, `Score: ${percent(attempt.score ?? 0)}`));
  const quizPenalty = penaltyNote(attempt);
  if (quizPenalty) box.append(quizPenalty);
  box.append(el("p", { class: attempt.correct ? "ok summary" : "bad summary" }, attempt.correct ? "Correct." : "Not quite."));
  const feedback = attempt.feedback || [];
  if (feedback.length) {
    box.append(el("h4", {}, "Feedback"), el("ul", { class: "feedback" }, feedback.map((f) => {
      let about = "";
      if (f.choice !== undefined) {
        about = `${f.selected ? "You chose" : "You did not choose"} ${f.correct ? "a right answer" : "a wrong answer"}: `;
      } else if (f.answer !== undefined) about = `Your answer ${values(f.answer)}: `;
      return el("li", {}, about, f.choice !== undefined ? el("span", { class: "choice-ref" }, choiceText(f.choice)) : null,
        markdownBlock(f.feedback));
    })));
  }
  if (attempt.explanation) box.append(el("h4", {}, "Explanation"), markdownBlock(attempt.explanation));
  return box;
}
