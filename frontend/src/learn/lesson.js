// The lesson page (/learn): the lesson's concepts in order, each worked example in an editor whose
// Run button runs it in the grading sandbox, and the exercises that practise each concept, marked
// with the learner's progress (one GET /api/v1/progress when the page has a token); the difficulty
// dots explained once, near the top; the "Key points" recap closes the lesson.

import { el, uid } from "../dom.js";
import { percent } from "../format.js";
import { markdownBlock } from "./markdown.js";
import { createEditor, getCode, setCode, KEYBOARD_NOTE } from "./editor.js";
import { renderRun, runStatus } from "./results.js";
import { debounce, errorText, loadDraft, runCode, saveDraft, showSession } from "./common.js";

const KINDS = {
  single_choice: "one choice",
  multiple_choice: "several choices",
  short_answer: "short answer",
  numeric: "numbers",
  code: "code",
};

// Each item: the link, its kind, its difficulty (dots, read out in words), and its progress mark
// (`.progress-mark`, filled by markProgress once the learner's progress is known).
function exerciseList(exercises) {
  return el("ul", { class: "exercise-list" }, exercises.map((e) => el("li", { dataset: { slug: e.slug } },
    el("a", { href: e.url }, e.title), " ", el("span", { class: "tag" }, KINDS[e.kind] || e.kind),
    el("span", { class: "visually-hidden" }, `, difficulty ${e.difficulty} of 5`),
    el("span", { class: "difficulty", "aria-hidden": "true", title: `difficulty ${e.difficulty} of 5` }, "●".repeat(e.difficulty)),
    el("span", { class: "progress-mark" }))));
}

// The difficulty scale, once, near the top: the dots are hidden from screen readers in the lists
// (each item says "difficulty N of 5" in words), so the legend's words say the same.
function difficultyLegend() {
  return el("p", { id: "difficulty-legend", class: "difficulty-legend" },
    "Difficulty: ",
    el("span", { class: "difficulty", "aria-hidden": "true" }, "●"), " easy (1 of 5) … ",
    el("span", { class: "difficulty", "aria-hidden": "true" }, "●●●●●"), " hard (5 of 5).");
}

// One item's mark: a tick and "done", or "tried" with the best score so far; nothing when not started.
function fillMark(item, row) {
  const mark = item.querySelector(".progress-mark");
  item.dataset.state = row.state;
  mark.dataset.state = row.state;
  if (row.state === "passed") {
    mark.replaceChildren(el("span", { "aria-hidden": "true" }, "✓ "), "done");
  } else if (row.state === "tried") {
    const best = typeof row.best_score === "number" ? `, best ${percent(row.best_score)}` : "";
    mark.replaceChildren(`tried${best}`);
  } else {
    mark.replaceChildren();
  }
}

// GET progress once, then every list item the answer names is marked; the summary counts them.
async function markProgress({ api, root, summary }) {
  let rows;
  try {
    const { data } = await api.call("GET", "progress");
    rows = Array.isArray(data && data.exercises) ? data.exercises : [];
  } catch {
    return; // the lists stay unmarked: the lesson reads the same without them
  }
  const bySlug = new Map(rows.map((row) => [row.slug, row]));
  const items = [...root.querySelectorAll(".exercise-list li[data-slug]")];
  let listed = 0;
  let done = 0;
  for (const item of items) {
    const row = bySlug.get(item.dataset.slug);
    if (!row) continue;
    listed += 1;
    if (row.state === "passed") done += 1;
    fillMark(item, row);
  }
  if (listed) {
    summary.hidden = false;
    summary.textContent = `You have done ${done} of the ${listed} exercises listed here.`;
  }
}

// A worked example: its editor (a draft kept in this browser), Run and Reset, and the run's result.
// Its Run button joins `controls`, the buttons the session turns on and off.
function exampleBlock({ api, session, example, controls }) {
  const labelId = uid("code-label");
  const noteId = uid("code-note");
  const draftId = `lesson.${example.id}`;
  const save = debounce((code) => saveDraft(session, draftId, code), 300);
  const holder = el("div", { class: "editor" });
  const run = el("button", { type: "button" }, "Run");
  const reset = el("button", { type: "button", class: "secondary" }, "Reset");
  const status = el("p", { class: "status", role: "status", "aria-live": "polite" });
  const out = el("div", { class: "run-box" });
  controls.push(run);
  const block = el("div", { class: "example" },
    el("h3", { id: labelId }, `Example: ${example.title}`),
    example.caption ? markdownBlock(example.caption) : null,
    el("p", { id: noteId, class: "muted small" }, KEYBOARD_NOTE),
    holder, el("div", { class: "buttons" }, run, reset), status, out);
  const editor = createEditor(holder, { doc: loadDraft(session, draftId) ?? example.code, label: `Code of the example ${example.title}`,
    onChange: save });
  reset.addEventListener("click", () => {
    setCode(editor, example.code);
    status.textContent = "The example is as the lesson wrote it again.";
  });
  run.addEventListener("click", async () => {
    run.disabled = true;
    out.replaceChildren();
    status.textContent = "Running…";
    try {
      const body = { code: getCode(editor) };
      if (example.entry_point) Object.assign(body, { entry_point: example.entry_point, inputs: example.inputs });
      for (const check of example.checks || []) body[check] = true;
      const result = await runCode(api, body);
      out.append(renderRun(result));
      status.textContent = runStatus(result);
    } catch (error) {
      status.textContent = `Run failed. ${errorText(error)}`;
    } finally {
      run.disabled = session.state !== "active";
    }
  });
  return block;
}

export function initLesson({ api, session }) {
  const lesson = JSON.parse(document.getElementById("gradquiz-lesson").textContent);
  const root = document.getElementById("lesson");
  root.replaceChildren();
  const controls = [];
  const notice = el("div", { class: "session-notice" });

  const parts = [...lesson.concepts, ...(lesson.recap ? [lesson.recap] : [])];
  const summary = el("p", { id: "lesson-progress", class: "lesson-progress", hidden: true });
  root.append(markdownBlock(lesson.intro), notice);
  root.append(el("nav", { "aria-label": "Concepts", class: "toc" }, el("h2", {}, "In this lesson"),
    el("ol", {}, parts.map((c) => el("li", {}, el("a", { href: `#${c.id}` }, c.title))))));
  root.append(difficultyLegend(), summary);

  for (const concept of lesson.concepts) {
    const headingId = uid("concept");
    const part = el("section", { id: concept.id, "aria-labelledby": headingId, class: "concept" },
      el("h2", { id: headingId }, concept.title), markdownBlock(concept.markdown));
    for (const example of concept.examples) part.append(exampleBlock({ api, session, example, controls }));
    if (concept.exercises.length) part.append(el("h3", {}, "Practise"), exerciseList(concept.exercises));
    root.append(part);
  }
  if (lesson.recap) {
    const id = uid("concept");
    root.append(el("section", { id: lesson.recap.id, "aria-labelledby": id, class: "recap" },
      el("h2", { id }, lesson.recap.title), markdownBlock(lesson.recap.markdown)));
  }
  if (lesson.more.length) {
    const id = uid("concept");
    root.append(el("section", { id: lesson.more_id || "more-exercises", "aria-labelledby": id, class: "concept" },
      el("h2", { id }, "More exercises"), exerciseList(lesson.more)));
  }

  const update = () => {
    showSession(session, [notice]);
    for (const button of controls) button.disabled = session.state !== "active";
  };
  session.addEventListener("change", update);
  update();
  // The learner's progress, once (a token renewed later is the same learner).
  if (session.token) markProgress({ api, root, summary });
}
