// A code exercise's answer: the editor (its draft kept in this browser as the learner types), Run
// on the exercise's sample inputs, Submit and the grade, and a way back to the starter code.

import { el, clear, uid } from "../dom.js";
import { percent } from "../format.js";
import { createEditor, getCode, setCode, KEYBOARD_NOTE } from "./editor.js";
import { renderCodeGrade, renderRun, reveal, runStatus } from "./results.js";
import { debounce, loadDraft, postAttempt, runCode, saveDraft, section, waitForGrade } from "./common.js";

// The editor and the lines around it, with restore(attempt) for the earlier attempts' button.
export function codeInput({ session, detail, exercise, status }) {
  const starter = (detail.code && detail.code.starter) || "";
  // A preview keeps its own draft per version: the author's trials never land in a learner's draft.
  const draftId = exercise && exercise.preview ? `preview.${detail.slug}.${exercise.version}` : `exercise.${detail.slug}`;
  const saved = loadDraft(session, draftId);
  const save = debounce((code) => saveDraft(session, draftId, code), 300);
  const label = el("p", { id: uid("code-label"), class: "label" }, "Code");
  const holder = el("div", { class: "editor" });
  const editor = createEditor(holder, { doc: saved ?? starter, label: "Code", onChange: save });
  window.addEventListener("pagehide", () => save.flush(getCode(editor)));
  label.addEventListener("click", () => editor.focus());
  return {
    elements: [label, el("p", { id: uid("code-note"), class: "muted small" }, KEYBOARD_NOTE), holder,
      el("p", { class: "muted small draft-note" }, "Your draft is saved in this browser as you type.")],
    code: () => getCode(editor),
    saveNow: (code) => save.flush(code),
    reset() {
      setCode(editor, starter);
      status.textContent = "The editor holds the starter code again.";
      editor.focus();
    },
    restore(attempt) {
      setCode(editor, attempt.code || "");
      saveDraft(session, draftId, attempt.code || "");
      status.textContent = "That attempt's code is in the editor.";
      editor.focus();
    },
  };
}

// The "Your answer" section: the editor, Run, Submit, Start again, the status line, the run and the grade.
export function codeAnswer({ api, detail, exercise, input, status, actions, afterSubmit }) {
  const slug = detail.slug;
  const runButton = el("button", { type: "button" }, "Run");
  const submitButton = el("button", { type: "button", class: "primary" }, "Submit");
  const resetButton = el("button", { type: "button", class: "secondary" }, "Start again from the starter code");
  const runBox = el("div", { class: "run-box", tabindex: "-1" });
  const resultBox = el("div", { class: "result", tabindex: "-1" });
  actions.add(runButton, "run");
  actions.add(submitButton, "submit");
  resetButton.addEventListener("click", input.reset);

  // The server calls the exercise's entry point on its sample inputs (never its hidden ones).
  runButton.addEventListener("click", () => actions.perform("Run", status, async () => {
    clear(runBox);
    status.textContent = "Running your code…";
    // A preview runs the version it shows (a draft too: POST runs takes its number from a course's staff).
    const target = exercise && exercise.preview && exercise.version ? { exercise: slug, version: exercise.version } : { exercise: slug };
    const run = await runCode(api, { code: input.code(), ...target });
    runBox.append(renderRun(run));
    reveal(runBox);
    status.textContent = runStatus(run);
  }));

  submitButton.addEventListener("click", () => actions.perform("Submit", status, async () => {
    clear(resultBox);
    clear(runBox); // the grade is about this code; an older run's result would only confuse
    status.textContent = "Submitting…";
    const code = input.code();
    input.saveNow(code);
    const submitted = await postAttempt(api, exercise, { code });
    status.textContent = "Submitted: grading…";
    actions.showStanding(submitted.standing);
    const { attempt, pending } = await waitForGrade(api, submitted, exercise);
    if (pending) {
      status.textContent = "Still grading: your attempt is stored, and its grade will show under your earlier attempts.";
    } else {
      resultBox.append(renderCodeGrade(attempt));
      reveal(resultBox);
      actions.showStanding(attempt.standing);
      status.textContent = attempt.status === "graded" ? `Graded: score ${percent(attempt.score ?? 0)}.` : "The grader failed: try again later.";
    }
    afterSubmit(attempt); // the history takes the attempt as it stands (not awaited: the buttons come back at once)
  }));

  return section("Your answer", ...input.elements, el("div", { class: "buttons" }, runButton, submitButton, resetButton),
    status, runBox, resultBox);
}
