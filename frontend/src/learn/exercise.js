// The exercise page (/learn/{slug}): the prompt, hints one at a time, the answer form or the code
// editor with Run and Submit, the grade, and the learner's earlier attempts.
//
// The page shows the learner's own variant of the exercise (their order of the choices, their
// values of a numeric item's parameters), which their answers are graded in. The server embeds it
// when it knows the learner (an LTI launch); otherwise the embedded detail is the shared one and,
// for an exercise that varies per learner (`per_learner`), the page asks the API for the signed-in
// learner's variant (GET exercises/{slug} with the token) before it shows the question.

import { el, clear, uid } from "../dom.js";
import { percent, values } from "../format.js";
import { markdownBlock, markdownInline } from "./markdown.js";
import { createEditor, getCode, setCode, KEYBOARD_NOTE } from "./editor.js";
import { renderCodeGrade, renderQuizGrade, renderRun } from "./results.js";
import { debounce, errorText, loadDraft, runCode, saveDraft, showSession } from "./common.js";
import { standingPanel } from "./standing.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function newKey() {
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`;
}

function section(title, ...children) {
  const id = uid("section");
  return el("section", { "aria-labelledby": id, class: "panel" }, el("h2", { id }, title), ...children);
}

// The detail to show: the embedded one, or the signed-in learner's variant when it is not that.
async function learnersDetail(api, session, embedded, root) {
  const wanted = embedded.per_learner && session.token && session.learner && session.allows(embedded.slug)
    && embedded.learner !== session.learner;
  if (!wanted) return { detail: embedded, problem: null };
  clear(root);
  root.append(el("p", { class: "muted", role: "status" }, "Loading your version of this exercise…"));
  try {
    const { data } = await api.call("GET", `exercises/${encodeURIComponent(embedded.slug)}`);
    if (data && data.slug === embedded.slug && data.learner === session.learner) return { detail: data, problem: null };
    return { detail: embedded, problem: "Your own version of this exercise could not be loaded." };
  } catch (error) {
    return { detail: embedded, problem: `Your own version of this exercise could not be loaded. ${errorText(error)}` };
  }
}

export async function initExercise({ api, session }) {
  const embedded = JSON.parse(document.getElementById("gradquiz-exercise").textContent);
  const root = document.getElementById("exercise");
  const { detail, problem } = await learnersDetail(api, session, embedded, root);
  renderExercise({ api, session, detail, root, problem });
}

function renderExercise({ api, session, detail, root, problem }) {
  clear(root);
  const slug = detail.slug;
  const isCode = detail.kind === "code";
  const controls = []; // buttons that need a token
  const notice = el("div", { class: "session-notice" });
  root.append(notice);
  if (problem) root.append(el("div", { class: "notice warn", role: "alert" }, el("p", {}, problem)));
  else if (detail.per_learner && !detail.learner && detail.kind === "numeric") {
    root.append(el("div", { class: "notice" }, el("p", {},
      "Each learner answers this question with values of their own (the names in braces below): sign in to see yours.")));
  }

  // --- the prompt --------------------------------------------------------------------------
  root.append(el("div", { class: "prompt" }, markdownBlock(detail.prompt)));
  if (isCode && detail.code) {
    const c = detail.code;
    const about = el("div", { class: "call" });
    if (c.call) about.append(el("p", {}, "The grader calls it as ", el("code", {}, c.call), ", with:"));
    if (c.inputs && c.inputs.length) {
      about.append(el("ul", { class: "inputs" }, c.inputs.map((i) => {
        const text = i.description || i.type;
        let shape = "";
        if (i.type === "tensor" && i.shape) shape = ` (shape ${values(i.shape)}${text.includes(i.dtype) ? "" : `, ${i.dtype}`})`;
        return el("li", {}, el("code", {}, i.name), ": ", text, shape);
      })));
    }
    root.append(about);
  }

  // --- hints, one at a time ----------------------------------------------------------------
  const hints = detail.hints || [];
  if (hints.length) {
    const list = el("ol", { class: "hints", "aria-live": "polite" });
    const button = el("button", { type: "button", class: "secondary" });
    let shown = 0;
    const label = () => {
      button.textContent = shown === 0 ? `Show a hint (${hints.length} in all)` : `Show hint ${shown + 1} of ${hints.length}`;
    };
    button.addEventListener("click", () => {
      const item = el("li", { tabindex: "-1" }, el("span", { class: "visually-hidden" }, `Hint ${shown + 1}: `), markdownBlock(hints[shown]));
      list.append(item);
      shown += 1;
      if (shown >= hints.length) {
        button.remove();
        list.after(el("p", { class: "muted" }, "That was the last hint."));
      } else label();
      item.focus();
    });
    label();
    root.append(section("Hints", list, button));
  }

  // --- the rules as they stand for the learner -------------------------------------------------
  const rules = standingPanel();
  let standing = null; // the latest known; its refusal keeps Submit off, runs: false keeps Run off
  const submits = []; // the Submit button
  const runs = []; // the Run button
  const showStanding = (latest) => {
    standing = latest || null;
    rules.show(standing);
    setBusy(false);
  };
  const loadStanding = async () => {
    if (session.state !== "active" || !session.allows(slug)) return showStanding(null);
    try {
      const { data } = await api.call("GET", `exercises/${encodeURIComponent(slug)}/standing`);
      showStanding(data);
    } catch {
      showStanding(null); // the rules still hold on Submit: its refusal says why
    }
  };
  root.append(rules.element);

  // --- the answer ----------------------------------------------------------------------------
  const status = el("p", { class: "status", role: "status", "aria-live": "polite" });
  const resultBox = el("div", { class: "result", tabindex: "-1" });
  let restore = () => {};
  let loadAttempts = async () => {};

  const setBusy = (busy) => {
    for (const button of controls) {
      button.disabled = busy || session.state !== "active" || !session.allows(slug)
        || (submits.includes(button) && Boolean(standing && standing.refused))
        || (runs.includes(button) && Boolean(standing && standing.rules && standing.rules.runs === false));
    }
  };
  // A refused submission (problem+json /problems/attempt-refused/...) carries the learner's standing.
  const refusedStanding = (error) => {
    if (error && error.problem && error.problem.standing) showStanding(error.problem.standing);
  };

  if (isCode) {
    const labelId = uid("code-label");
    const noteId = uid("code-note");
    const starter = (detail.code && detail.code.starter) || "";
    const draftId = `exercise.${slug}`;
    const saved = loadDraft(session, draftId);
    const save = debounce((code) => saveDraft(session, draftId, code), 300);
    const holder = el("div", { class: "editor" });
    const runButton = el("button", { type: "button" }, "Run");
    const submitButton = el("button", { type: "button", class: "primary" }, "Submit");
    const resetButton = el("button", { type: "button", class: "secondary" }, "Start again from the starter code");
    const runBox = el("div", { class: "run-box", tabindex: "-1" });
    controls.push(runButton, submitButton);
    submits.push(submitButton);
    runs.push(runButton);
    root.append(section("Your answer",
      el("p", { id: labelId, class: "label" }, "Code"),
      el("p", { id: noteId, class: "muted small" }, KEYBOARD_NOTE),
      holder,
      el("p", { class: "muted small draft-note" }, "Your draft is saved in this browser as you type."),
      el("div", { class: "buttons" }, runButton, submitButton, resetButton),
      status, runBox, resultBox));
    const editor = createEditor(holder, { doc: saved ?? starter, label: "Code", onChange: save });
    window.addEventListener("pagehide", () => save.flush(getCode(editor)));
    document.getElementById(labelId).addEventListener("click", () => editor.focus());

    resetButton.addEventListener("click", () => {
      setCode(editor, starter);
      status.textContent = "The editor holds the starter code again.";
      editor.focus();
    });

    runButton.addEventListener("click", async () => {
      setBusy(true);
      clear(runBox);
      status.textContent = "Running your code…";
      const code = getCode(editor);
      try {
        // The server calls the exercise's entry point on its sample inputs (never its hidden ones).
        const run = await runCode(api, { code, exercise: slug });
        runBox.append(renderRun(run));
        const r = run.result || {};
        status.textContent = run.status !== "finished" ? `The run is ${run.status}.`
          : r.error ? "Run finished: your code raised an exception."
            : r.gradcheck ? `Run finished: the numerical check ${r.gradcheck.passed ? "passed" : "failed"}.`
              : r.forward ? "Run finished, with no numerical check (see why below)." : "Run finished.";
      } catch (error) {
        status.textContent = `Run failed. ${errorText(error)}`;
        refusedStanding(error);
      } finally {
        setBusy(false);
      }
    });

    submitButton.addEventListener("click", async () => {
      setBusy(true);
      clear(resultBox);
      clear(runBox); // the grade is about this code; an older run's result would only confuse
      status.textContent = "Submitting…";
      try {
        const code = getCode(editor);
        save.flush(code);
        let { data } = await api.call("POST", `exercises/${encodeURIComponent(slug)}/attempts`,
          { body: { code }, headers: { "Idempotency-Key": newKey() } });
        status.textContent = "Submitted: grading…";
        showStanding(data.standing);
        for (let tries = 0; (data.status === "queued" || data.status === "running") && tries < 8; tries += 1) {
          ({ data } = await api.call("GET", `attempts/${data.id}?wait=25`));
          if (data.status === "queued" || data.status === "running") await sleep(300);
        }
        if (data.status === "queued" || data.status === "running") {
          status.textContent = "Still grading: your attempt is stored, and its grade will show under your earlier attempts.";
        } else {
          resultBox.append(renderCodeGrade(data));
          showStanding(data.standing);
          status.textContent = data.status === "graded" ? `Graded: score ${percent(data.score ?? 0)}.` : "The grader failed: try again later.";
        }
        loadAttempts(); // not awaited: the buttons come back at once
      } catch (error) {
        status.textContent = `Submit failed. ${errorText(error)}`;
        refusedStanding(error);
      } finally {
        setBusy(false);
      }
    });

    restore = (attempt) => {
      setCode(editor, attempt.code || "");
      saveDraft(session, draftId, attempt.code || "");
      status.textContent = "That attempt's code is in the editor.";
      editor.focus();
    };
  } else {
    const form = quizForm(detail);
    const submitButton = el("button", { type: "submit", class: "primary" }, "Submit");
    controls.push(submitButton);
    submits.push(submitButton);
    form.element.append(el("div", { class: "buttons" }, submitButton));
    root.append(section("Your answer", form.element, status, resultBox));
    const choiceText = (id) => {
      const choice = (detail.choices || []).find((c) => c.id === id);
      return choice ? markdownInline(choice.text) : id;
    };
    form.element.addEventListener("submit", async (event) => {
      event.preventDefault();
      const answer = form.read();
      if (answer.problem) {
        status.textContent = answer.problem;
        answer.focus?.focus();
        return;
      }
      setBusy(true);
      clear(resultBox);
      status.textContent = "Submitting…";
      try {
        const { data } = await api.call("POST", `exercises/${encodeURIComponent(slug)}/attempts`,
          { body: { answer: answer.value }, headers: { "Idempotency-Key": newKey() } });
        resultBox.append(renderQuizGrade(data, choiceText));
        showStanding(data.standing);
        status.textContent = `Graded: ${data.correct ? "correct" : "not quite"}, score ${percent(data.score ?? 0)}.`;
        loadAttempts(); // not awaited: the buttons come back at once
      } catch (error) {
        status.textContent = `Submit failed. ${errorText(error)}`;
        refusedStanding(error);
      } finally {
        setBusy(false);
      }
    });
    restore = (attempt) => {
      form.write(attempt.answer);
      status.textContent = "That attempt's answer is back in the form.";
      form.focus();
    };
  }

  // --- earlier attempts ------------------------------------------------------------------------
  const attemptsList = el("ul", { class: "attempts" });
  const attemptsStatus = el("p", { class: "muted" });
  root.append(section("Your earlier attempts", attemptsStatus, attemptsList));

  let loads = 0; // only the latest load fills the list
  loadAttempts = async () => {
    const load = ++loads;
    clear(attemptsList);
    if (session.state !== "active") {
      attemptsStatus.textContent = "Sign in to see your earlier attempts.";
      return;
    }
    if (!session.learner) {
      attemptsStatus.textContent = "Your token does not say who you are, so earlier attempts cannot be listed.";
      return;
    }
    attemptsStatus.textContent = "Loading…";
    try {
      const { data, headers } = await api.call("GET",
        `learners/${encodeURIComponent(session.learner)}/attempts?exercise=${encodeURIComponent(slug)}&page_size=50`);
      if (load !== loads) return;
      const attempts = data.attempts || [];
      let total = attempts.length;
      try {
        total = JSON.parse(headers.get("X-Pagination") || "{}").total ?? total;
      } catch {
        /* no pagination header */
      }
      attemptsStatus.textContent = attempts.length ? `${total} attempt${total === 1 ? "" : "s"}, newest first.` : "No attempts yet.";
      attempts.forEach((attempt, index) => attemptsList.append(attemptItem(attempt, total - index)));
    } catch (error) {
      attemptsStatus.textContent = `Your earlier attempts could not be loaded. ${errorText(error)}`;
    }
  };

  function attemptItem(attempt, number) {
    const when = new Date(attempt.created_at).toLocaleString();
    const score = attempt.score === null || attempt.score === undefined ? attempt.status : percent(attempt.score);
    const panelId = uid("attempt");
    const open = el("button", { type: "button", class: "link", "aria-expanded": "false", "aria-controls": panelId },
      `Attempt ${number}: ${score}${attempt.late ? " (late)" : ""}, ${when}`);
    const panel = el("div", { id: panelId, class: "attempt-detail", hidden: true });
    open.addEventListener("click", () => {
      const expanded = open.getAttribute("aria-expanded") === "true";
      open.setAttribute("aria-expanded", String(!expanded));
      panel.hidden = expanded;
      if (!expanded && !panel.childElementCount) {
        const again = el("button", { type: "button", class: "secondary" }, isCode ? "Restore into the editor" : "Put this answer back in the form");
        again.addEventListener("click", () => restore(attempt));
        if (isCode) panel.append(el("pre", { class: "code", tabindex: "0", "aria-label": `Code of attempt ${number}` }, attempt.code || ""));
        else panel.append(el("p", {}, "Answer: ", el("code", {}, JSON.stringify(attempt.answer))));
        panel.append(again);
        if (attempt.status === "graded" || attempt.status === "error") {
          panel.append(isCode ? renderCodeGrade(attempt) : renderQuizGrade(attempt, (id) => {
            const c = (detail.choices || []).find((x) => x.id === id);
            return c ? markdownInline(c.text) : id;
          }));
        } else panel.append(el("p", {}, `This attempt is ${attempt.status}.`));
      }
    });
    return el("li", {}, open, panel);
  }

  // --- the session decides what can be done --------------------------------------------------
  const update = () => {
    showSession(session, [notice], slug);
    setBusy(false);
    loadStanding();
  };
  session.addEventListener("change", update);
  update();
  loadAttempts();
}

// The form of a quiz kind: its element, read() -> {value} or {problem, focus}, write(answer).
function quizForm(detail) {
  const element = el("form", { class: "quiz", novalidate: true });
  const name = uid("answer");
  if (detail.kind === "single_choice" || detail.kind === "multiple_choice") {
    const single = detail.kind === "single_choice";
    const inputs = [];
    const fieldset = el("fieldset", {}, el("legend", {}, single ? "Choose one answer" : "Choose every answer that is right"));
    for (const choice of detail.choices || []) {
      const id = uid("choice");
      const input = el("input", { type: single ? "radio" : "checkbox", name, id, value: choice.id });
      inputs.push(input);
      fieldset.append(el("div", { class: "choice" }, input, el("label", { for: id }, markdownInline(choice.text))));
    }
    element.append(fieldset);
    return {
      element,
      read() {
        const picked = inputs.filter((i) => i.checked).map((i) => i.value);
        if (single) return picked.length ? { value: picked[0] } : { problem: "Choose an answer first.", focus: inputs[0] };
        return { value: picked };
      },
      write(answer) {
        const picked = new Set([answer].flat().map(String));
        for (const input of inputs) input.checked = picked.has(input.value);
      },
      focus() {
        (inputs.find((i) => i.checked) || inputs[0])?.focus();
      },
    };
  }
  if (detail.kind === "short_answer") {
    const id = uid("short");
    const input = el("input", { type: "text", id, name, autocomplete: "off", spellcheck: "false" });
    element.append(el("label", { for: id, class: "label" }, "Your answer"), input);
    return {
      element,
      read: () => (input.value.trim() ? { value: input.value } : { problem: "Write an answer first.", focus: input }),
      write(answer) {
        input.value = answer ?? "";
      },
      focus: () => input.focus(),
    };
  }
  // numeric: one number, or a list of answer_length numbers
  const count = detail.answer_length || 1;
  const fields = [];
  const group = count > 1 ? el("fieldset", {}, el("legend", {}, `Your answer: ${count} numbers, in order`)) : element;
  for (let i = 0; i < count; i += 1) {
    const id = uid("number");
    const input = el("input", { type: "text", inputmode: "decimal", id, autocomplete: "off", class: "number" });
    fields.push(input);
    group.append(el("div", { class: "number-field" },
      el("label", { for: id, class: count > 1 ? "" : "label" }, count > 1 ? `Number ${i + 1}` : "Your answer (a number)"), input));
  }
  if (group !== element) element.append(group);
  const parse = (text) => {
    const cleaned = text.trim().replace(/−/g, "-");
    return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(cleaned) ? Number(cleaned) : null;
  };
  return {
    element,
    read() {
      const numbers = [];
      for (const [i, input] of fields.entries()) {
        const value = parse(input.value);
        if (value === null || !Number.isFinite(value)) {
          return { problem: count > 1 ? `Number ${i + 1} is not a number (write it like -0.5 or 2).` : "Write a number, like -0.5 or 2.", focus: input };
        }
        numbers.push(value);
      }
      return { value: detail.answer_length ? numbers : numbers[0] };
    },
    write(answer) {
      const list = [answer].flat();
      fields.forEach((input, i) => {
        input.value = list[i] === undefined ? "" : String(list[i]);
      });
    },
    focus: () => fields[0].focus(),
  };
}
