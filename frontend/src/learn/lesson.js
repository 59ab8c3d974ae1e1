// The lesson page (/learn): the lesson's concepts in order, each worked example in an editor whose
// Run button runs it in the grading sandbox, and the exercises that practise each concept.

import { el, uid } from "../dom.js";
import { markdownBlock } from "./markdown.js";
import { createEditor, getCode, setCode, KEYBOARD_NOTE } from "./editor.js";
import { renderRun } from "./results.js";
import { debounce, errorText, loadDraft, runCode, saveDraft, showSession } from "./common.js";

const KINDS = {
  single_choice: "one choice",
  multiple_choice: "several choices",
  short_answer: "short answer",
  numeric: "numbers",
  code: "code",
};

function exerciseList(exercises) {
  return el("ul", { class: "exercise-list" }, exercises.map((e) => el("li", {},
    el("a", { href: e.url }, e.title), " ", el("span", { class: "tag" }, KINDS[e.kind] || e.kind),
    el("span", { class: "visually-hidden" }, `, difficulty ${e.difficulty} of 5`),
    el("span", { class: "difficulty", "aria-hidden": "true", title: `difficulty ${e.difficulty} of 5` }, "●".repeat(e.difficulty)))));
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
      const result = await runCode(api, body);
      out.append(renderRun(result));
      const r = result.result || {};
      status.textContent = r.error ? "Run finished: the code raised an exception."
        : r.gradcheck ? `Run finished: the numerical check ${r.gradcheck.passed ? "passed" : "failed"}.` : "Run finished.";
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

  root.append(markdownBlock(lesson.intro), notice);
  root.append(el("nav", { "aria-label": "Concepts", class: "toc" }, el("h2", {}, "In this lesson"),
    el("ol", {}, lesson.concepts.map((c) => el("li", {}, el("a", { href: `#${c.id}` }, c.title))))));

  for (const concept of lesson.concepts) {
    const headingId = uid("concept");
    const part = el("section", { id: concept.id, "aria-labelledby": headingId, class: "concept" },
      el("h2", { id: headingId }, concept.title), markdownBlock(concept.markdown));
    for (const example of concept.examples) part.append(exampleBlock({ api, session, example, controls }));
    if (concept.exercises.length) part.append(el("h3", {}, "Practise"), exerciseList(concept.exercises));
    root.append(part);
  }
  if (lesson.more.length) {
    const id = uid("concept");
    root.append(el("section", { "aria-labelledby": id, class: "concept" }, el("h2", { id }, "More exercises"), exerciseList(lesson.more)));
  }

  const update = () => {
    showSession(session, [notice]);
    for (const button of controls) button.disabled = session.state !== "active";
  };
  session.addEventListener("change", update);
  update();
}
