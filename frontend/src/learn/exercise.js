// The exercise page (/learn/{slug}): the prompt, hints one at a time, the answer form or the code
// editor with Run and Submit, the grade, and the learner's earlier attempts.
//
// The page shows the learner's own variant of the exercise (their order of the choices, their
// values of a numeric item's parameters), which their answers are graded in. The server embeds it
// when it knows the learner (an LTI launch); otherwise the embedded detail is the shared one and,
// for an exercise that varies per learner (`per_learner`), the page asks the API for the signed-in
// learner's variant (GET exercises/{slug} with the token) before it shows the question.

import { el, append, clear } from "../dom.js";
import { values } from "../format.js";
import { markdownBlock } from "./markdown.js";
import { errorText, showSession } from "./common.js";
import { exerciseActions } from "./actions.js";
import { hintsPanel } from "./hints.js";
import { codeAnswer, codeInput } from "./code-answer.js";
import { quizAnswer, quizInput } from "./quiz-answer.js";
import { earlierAttempts } from "./attempts.js";

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

// Why the page may not show the learner's own values, or null.
function variantNotice(detail, problem) {
  if (problem) return el("div", { class: "notice warn", role: "alert" }, el("p", {}, problem));
  if (detail.per_learner && !detail.learner && detail.kind === "numeric") {
    return el("div", { class: "notice" }, el("p", {},
      "Each learner answers this question with values of their own (the names in braces below): sign in to see yours."));
  }
  return null;
}

// How the grader calls a code exercise's entry point, and with what; null for a quiz.
function callBlock(code) {
  if (!code) return null;
  const about = el("div", { class: "call" });
  if (code.call) about.append(el("p", {}, "The grader calls it as ", el("code", {}, code.call), ", with:"));
  if (code.inputs && code.inputs.length) {
    about.append(el("ul", { class: "inputs" }, code.inputs.map((i) => {
      const text = i.description || i.type;
      let shape = "";
      if (i.type === "tensor" && i.shape) shape = ` (shape ${values(i.shape)}${text.includes(i.dtype) ? "" : `, ${i.dtype}`})`;
      return el("li", {}, el("code", {}, i.name), ": ", text, shape);
    })));
  }
  return about;
}

// The page, top to bottom: the session's notice, the prompt, hints, the rules as they stand, the
// answer, the earlier attempts. The session decides what can be done, again at each change.
function renderExercise({ api, session, detail, root, problem }) {
  clear(root);
  const notice = el("div", { class: "session-notice" });
  const actions = exerciseActions({ api, session, slug: detail.slug });
  const status = el("p", { class: "status", role: "status", "aria-live": "polite" });
  const isCode = detail.kind === "code";
  const input = isCode ? codeInput({ session, detail, status }) : quizInput({ detail, status });
  const attempts = earlierAttempts({ api, session, detail, restore: input.restore });
  const parts = { api, detail, input, status, actions, afterSubmit: attempts.load };
  append(root, [
    notice,
    variantNotice(detail, problem),
    el("div", { class: "prompt" }, markdownBlock(detail.prompt)),
    isCode ? callBlock(detail.code) : null,
    hintsPanel(detail.hints || []),
    actions.element,
    isCode ? codeAnswer(parts) : quizAnswer(parts),
    attempts.element,
  ]);
  const update = () => {
    showSession(session, [notice], detail.slug);
    actions.setBusy(false);
    actions.loadStanding();
  };
  session.addEventListener("change", update);
  update();
  attempts.load();
}
