// Results as the learner reads them, a tutor's answer first: ONE verdict line (the score and the
// headline of a grade), then, when something failed, the likely cause in plain words with what to
// do and the one failing case that shows it; then what the learner's code raised. Everything else
// (the check list with its weights, the tables of values, what the code printed) is folded under
// <details>. Names of checks, causes and error stages come from the terms table (terms.js), never
// from identifiers. Everything from the server is text.
//
// DOM hooks: .verdict (the heading line), .capped (why a score is capped), .cause (.cause-title,
// .cause-advice), .example, .error-block, details.all-checks, details.values, details.output.
// The server's `diagnosis` ({headline, cause: {title, advice}, example, failed_checks}) drives the
// first lines; without one (an older server, a quiz) they are made from the report.

import { penaltyNote } from "./standing.js";
import { el } from "../dom.js";
import { num, percent, values } from "../format.js";
import { markdownBlock } from "./markdown.js";
import { causeTerm, checkTitle, stageWords, statusVerdict } from "./terms.js";

// "Your code does not parse." after "Not yet: " reads "your code does not parse."
function lowerFirst(text) {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function mark(passed) {
  return el("span", { class: passed ? "mark ok" : "mark bad" }, passed ? "✓ passed" : "✗ failed");
}

function fold(className, summary, children, open = false) {
  const parts = [children].flat(Infinity).filter(Boolean);
  if (!parts.length) return null;
  return el("details", { class: `more ${className}`, open }, el("summary", {}, summary), ...parts);
}

function pre(label, text, className = "output") {
  return [el("h4", {}, label), el("pre", { class: className, tabindex: "0" }, String(text))];
}

// "Your code raised ZeroDivisionError while backward ran: division by zero", and its traceback.
export function errorBlock(error) {
  if (!error) return null;
  const words = error.where ? stageWords(error.where) : null;
  const message = String(error.message ?? "");
  return el("div", { class: "error-block" },
    el("p", {}, el("strong", {}, `Your code raised ${error.type || "an exception"}${words ? ` ${words}` : ""}`), message ? `: ${message}` : "."),
    error.traceback ? el("pre", { class: "output", tabindex: "0", "aria-label": "Traceback" }, String(error.traceback)) : null);
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

// A table whose cells carry their column's header (data-label): on a phone each row reads as a block.
// Its roles are written out because a table shown as blocks (display: block) loses them in browsers.
function table(caption, head, rows) {
  return el("div", { class: "table-wrap" }, el("table", { class: "blocks", role: "table" },
    el("caption", {}, caption),
    el("thead", { role: "rowgroup" }, el("tr", { role: "row" }, head.map((cell) => el("th", { scope: "col", role: "columnheader" }, cell)))),
    el("tbody", { role: "rowgroup" }, rows.map((row) => el("tr", { role: "row" }, row.map((cell, i) => (i === 0
      ? el("th", { scope: "row", role: "rowheader", "data-label": head[i] }, cell)
      : el("td", { role: "cell", "data-label": head[i] }, cell))))))));
}

function inputValue(input) {
  if ("values" in input) return values(input.values);
  if ("value" in input) return values(input.value);
  return "";
}

function diagnosticsTable(diagnostics, caption) {
  if (!diagnostics || !diagnostics.length) return null;
  const rows = diagnostics.map((d) => [
    checkTitle(d.check) || "",
    [d.case, d.input].filter(Boolean).join(", "),
    d.index !== undefined ? values(d.index) : "",
    d.input_value !== undefined ? num(d.input_value) : "",
    d.analytical !== undefined ? values(d.analytical) : "",
    d.numerical !== undefined ? values(d.numerical) : "",
    d.expected !== undefined ? values(d.expected) : "",
  ]);
  const head = ["check", "input", "worst element", "input value", "your backward", "finite differences", "expected"];
  const used = head.map((_, i) => (i === 1 || rows.some((row) => row[i] !== ""))); // no empty column
  return table(caption, head.filter((_, i) => used[i]), rows.map((row) => row.filter((_, i) => used[i])));
}

// One check of the list: its mark, its title (when the terms table names it), its message, its weight.
function checkItem(c) {
  const title = checkTitle(c.name);
  const message = String(c.message ?? "");
  return el("li", { class: c.passed ? "ok" : "bad" }, mark(c.passed), " ",
    title ? el("strong", {}, title) : null, title && message ? ": " : "", message,
    c.weight ? el("span", { class: "muted" }, ` (${percent(c.weight, 1)} of the score)`) : null);
}

function checkList(checks) {
  if (!checks || !checks.length) return null;
  return el("ul", { class: "checks" }, checks.map(checkItem));
}

// The likely cause: the diagnosis's, else the first the report names (by name from the terms table,
// or as the report's advice text). Returns {title, advice} or null.
function causeOf(diagnosis, names, texts) {
  if (diagnosis && diagnosis.cause && (diagnosis.cause.title || diagnosis.cause.advice)) return diagnosis.cause;
  if (diagnosis) return null; // the server has looked: no cause it can name
  for (const name of names || []) {
    const term = causeTerm(name);
    if (term) return { title: term.title, advice: term.advice };
  }
  const text = (texts || []).find((t) => typeof t === "string" && t.trim());
  return text ? { title: null, advice: text } : null;
}

// The first lines after the verdict: the cause and what to do, and the example that shows it.
function causeBlock(cause, example) {
  if (!cause && !example) return null;
  const box = el("div", { class: "cause" });
  if (cause) {
    box.append(el("p", { class: "cause-title" },
      el("strong", {}, cause.title ? `Likely cause: ${cause.title}.` : "Likely cause:"), " ",
      cause.advice ? el("span", { class: "cause-advice" }, String(cause.advice)) : null));
  }
  if (example) box.append(el("p", { class: "example" }, String(example)));
  return box;
}

// Why the scoring policy capped a score (attempt.scoring), in one line; null when it did not.
export function cappedNote(attempt) {
  const scoring = attempt && attempt.scoring;
  if (!scoring || !scoring.capped || scoring.checks_score === null || scoring.checks_score === undefined) return null;
  return el("p", { class: "capped" }, scoring.policy === "gate"
    ? `Your backward fails a check, so this attempt scores at most ${percent(scoring.cap)}: the checks it passed add up to ${percent(scoring.checks_score)}.`
    : `Only a fully correct answer scores here: this one would earn ${percent(scoring.checks_score)} with partial credit.`);
}

// Brings a result just shown into view, its first lines at the top, when they are off the screen
// (the learner pressed Run or Submit above it). Focus stays where it is: the status line announces it.
export function reveal(box) {
  const top = box.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight * 0.6) box.scrollIntoView({ block: "start" });
}

// The verdict heading: "Score: 58%. Not yet: your backward's gradients are wrong."
function verdictLine(className, text) {
  return el("h3", { class: `verdict ${className}`, tabindex: "-1" }, text);
}

// The status line after a run (the run's own result is shown under it): the numerical check's
// verdict, and whether another check (forward mode, vmap, in place, a custom op's) failed beside it.
export function runStatus(run) {
  const r = run.result || {};
  if (run.status !== "finished") return `The run is ${run.status}.`;
  if (r.error) return "Run finished: your code raised an exception.";
  if (r.gradcheck) {
    const also = r.gradcheck.passed && r.passed === false ? ", another check failed" : "";
    return `Run finished: the numerical check ${r.gradcheck.passed ? "passed" : "failed"}${also}.`;
  }
  if (r.checks && r.checks.length) return `Run finished: ${r.passed ? "every check passed" : "some checks failed"}.`;
  return r.forward ? "Run finished, with no numerical check (see why below)." : "Run finished.";
}

// POST /api/v1/runs' answer: the run, its result and (a newer server's) diagnosis.
export function renderRun(run) {
  const r = run.result || {};
  const box = el("div", { class: "run-result" });
  if (run.status === "error") {
    box.append(verdictLine("bad", "Run: the sandbox failed to run the code (not your code's fault): try again."));
    return box;
  }
  if (run.status !== "finished") {
    box.append(verdictLine("", `Run: the run is ${run.status}.`));
    return box;
  }
  const diagnosis = run.diagnosis || null;
  const checks = r.checks || [];
  const diags = checks.flatMap((c) => c.diagnostics || []);
  let headline;
  let passed = r.passed === true;
  if (diagnosis && diagnosis.headline) {
    headline = diagnosis.headline;
    passed = Boolean(diagnosis.passed);
  } else if (r.status && r.status !== "ok" && r.status !== "error" && statusVerdict(r.status)) headline = statusVerdict(r.status);
  else if (r.error) headline = "Your code raised an exception.";
  else if (checks.length) headline = passed ? "Every check passed on these inputs." : "Some checks failed on these inputs.";
  else headline = "Your code ran.";
  box.append(verdictLine(passed ? "ok" : (r.error || checks.length || (r.status && r.status !== "ok") ? "bad" : ""), `Run finished. ${headline}`));
  const cause = causeOf(diagnosis, r.likely_causes || checks.map((c) => c.likely_cause).filter(Boolean), diags.map((d) => d.hint));
  const block = causeBlock(passed ? null : cause, diagnosis && !passed ? diagnosis.example : null);
  if (block) box.append(block);
  box.append(errorBlock(r.error) || []);
  if (r.forward && !r.gradcheck && !checks.length && !r.error) {
    const returned = (r.forward.outputs || []).map((o) => (o.kind === "tensor" ? "a tensor" : o.type || o.kind)).join(", ");
    box.append(el("p", { class: "notice" }, `No gradients and no numerical check: forward returned ${returned || "nothing"}, not a tensor that requires grad.`));
  }

  const listed = [checkList(checks)];
  if (r.gradcheck && r.gradcheck.note) listed.push(el("p", { class: "muted" }, String(r.gradcheck.note)));
  box.append(fold("all-checks", "All checks", listed) || []);

  const tables = [];
  if (r.inputs && r.inputs.length) {
    tables.push(table("Inputs", ["input", "type", "values"], r.inputs.map((i) => [i.name,
      i.type === "tensor" ? `tensor ${values(i.shape || [])} ${i.dtype}` : i.type, inputValue(i)])));
  }
  if (r.forward && r.forward.outputs) {
    tables.push(table("Forward", ["output", "shape and dtype", "values"], r.forward.outputs.map((o, i) => [
      `output ${i}`, o.kind === "tensor" ? `${values(o.shape || [])} ${o.dtype}${o.requires_grad ? ", requires grad" : ""}` : String(o.type || o.kind || ""),
      o.values !== undefined ? values(o.values) : (o.value !== undefined ? values(o.value) : "")])));
  }
  if (r.gradients) {
    tables.push(table("Gradients (of y.sum(), grad_output = ones)", ["input", "gradient"],
      Object.entries(r.gradients).map(([name, g]) => [name, values(g)])));
  }
  tables.push(diagnosticsTable(diags, "Where it went wrong (the worst element of each failed check)"));
  box.append(fold("values", "Values", tables) || []);
  // A plain script (no Function to check): what it printed is the whole answer, shown open.
  const printed = r.output && (r.output.stdout || r.output.stderr || r.output.truncated);
  if (printed || !checks.length) box.append(fold("output", "Output", outputBlocks(r.output), !checks.length && !r.error) || []);
  return box;
}

// A graded code attempt (GET /api/v1/attempts/{id}). Scores as whole percentages (the status line
// says the same); a check's weight to one decimal.
export function renderCodeGrade(attempt) {
  const box = el("div", { class: "grade" });
  const report = attempt.report || {};
  if (attempt.status === "error" || report.status === "internal_error") {
    box.append(verdictLine("bad", ["Not graded.", statusVerdict("internal_error")].filter(Boolean).join(" ")));
    return box;
  }
  const diagnosis = attempt.diagnosis || null;
  const passed = diagnosis ? Boolean(diagnosis.passed) : report.status === "passed";
  // Without a diagnosis (an older server): the status's verdict from the terms table; a status the
  // table lacks says "Not yet." alone, and the cause, the error and the checks below tell the rest.
  const verdict = statusVerdict(report.status);
  const headline = diagnosis && diagnosis.headline ? diagnosis.headline
    : passed ? "Every check passed." : verdict ? `Not yet: ${lowerFirst(verdict)}` : "Not yet.";
  box.append(verdictLine(passed ? "ok" : "bad", `Score: ${percent(attempt.score ?? 0)}. ${headline}`));
  box.append(cappedNote(attempt) || [], penaltyNote(attempt) || []);
  if (!passed) {
    const cause = causeOf(diagnosis, report.likely_causes, report.feedback);
    box.append(causeBlock(cause, diagnosis ? diagnosis.example : null) || []);
  }
  box.append(errorBlock(report.error) || []);
  box.append(fold("all-checks", "All checks", checkList(report.checks)) || []);
  box.append(fold("values", "Values", diagnosticsTable(report.diagnostics, "The worst element of each failed comparison")) || []);
  if (report.output && (report.output.stdout || report.output.stderr)) box.append(fold("output", "Output", outputBlocks(report.output)));
  if (attempt.explanation) box.append(el("h4", {}, "Explanation"), markdownBlock(attempt.explanation));
  return box;
}

// One choice the grade names: picked and right, picked and wrong, or right and missed (the server
// lists a missed right choice only when the rules show the explanation).
function choiceMark(f) {
  if (f.selected && f.correct) return ["choice-right", "✓ Your pick is right:"];
  if (f.selected) return ["choice-wrong", "✗ Your pick is wrong:"];
  return ["choice-missed", "Missed: a right answer you did not pick:"];
}

// A graded quiz attempt; choiceText looks a choice id up (choice kinds).
export function renderQuizGrade(attempt, choiceText) {
  const box = el("div", { class: "grade" });
  box.append(verdictLine(attempt.correct ? "ok" : "bad", `Score: ${percent(attempt.score ?? 0)}. ${attempt.correct ? "Correct." : "Not quite."}`));
  box.append(cappedNote(attempt) || [], penaltyNote(attempt) || []);
  const feedback = attempt.feedback || [];
  const choices = feedback.filter((f) => f.choice !== undefined);
  if (choices.length) {
    const missed = choices.filter((f) => !f.selected).length;
    box.append(el("ul", { class: "feedback choice-marks" }, choices.map((f) => {
      const [className, about] = choiceMark(f);
      return el("li", { class: className, dataset: { choice: f.choice } },
        el("span", { class: "choice-mark" }, about), " ", el("span", { class: "choice-ref" }, choiceText(f.choice)),
        f.feedback ? markdownBlock(f.feedback) : null);
    })));
    if (!attempt.correct && !missed && attempt.explanation === null) {
      box.append(el("p", { class: "muted" }, "Which answers are right is shown with the explanation."));
    }
  }
  const answers = feedback.filter((f) => f.choice === undefined);
  if (answers.length) {
    box.append(el("ul", { class: "feedback" }, answers.map((f) => el("li", {},
      f.answer !== undefined ? `Your answer ${values(f.answer)}: ` : "", markdownBlock(f.feedback)))));
  }
  if (attempt.explanation) box.append(el("h4", {}, "Explanation"), markdownBlock(attempt.explanation));
  return box;
}
