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

// Where the page reads and answers the exercise: `exercise_api` when the server names it (a course
// exercise, a preview of a draft version), else exercises/{slug}; every exercise-scoped call (the
// detail, attempts, standing) goes through it. A preview's attempts are counted for nobody.
export function exerciseEndpoint(embedded) {
  const base = embedded.exercise_api || `exercises/${encodeURIComponent(embedded.slug)}`;
  const preview = Boolean(embedded.preview);
  const fromPath = /\/learn\/preview\/[^/]+\/[^/]+\/(\d+)/.exec(location.pathname);
  return { base, preview, version: embedded.version ?? (fromPath ? Number(fromPath[1]) : null) };
}

// A page shell embeds no detail (a course exercise opened without a launch of its course, a
// preview): the page fetches it with its token. A shell that is not a preview says "not found"
// until then, and keeps saying it when there is no token or the token may not see the exercise.
async function fetchedDetail(api, session, exercise, root) {
  clear(root);
  if (!session.token) {
    if (exercise.preview) {
      root.append(el("div", { class: "notice warn", role: "alert" }, el("p", {},
        "Open the preview from the dashboard (Preview as a learner): the page needs its sign-in to show the draft.")));
    }
    return null;
  }
  const loading = el("p", { class: "muted", role: "status" }, "Loading the exercise…");
  root.append(loading);
  try {
    const { data } = await api.call("GET", exercise.base);
    loading.remove();
    return data;
  } catch (error) {
    clear(root);
    if (exercise.preview || error.status !== 404) {
      root.append(el("div", { class: "notice warn", role: "alert" }, el("p", {}, `The exercise could not be loaded. ${errorText(error)}`)));
    }
    return null;
  }
}

// The shell's own words ("not found", the server's note on a preview) give way to the exercise.
function leaveShell() {
  const message = document.getElementById("shell-message");
  if (message) {
    const next = message.nextElementSibling;
    if (next && next.tagName === "P") next.remove();
    message.remove();
  }
  for (const banner of document.querySelectorAll("article > .preview-banner")) banner.remove();
}

// The detail to show: the embedded one, or the signed-in learner's variant when it is not that.
async function learnersDetail(api, session, embedded, exercise, root) {
  const wanted = embedded.per_learner && session.token && session.learner && session.allows(embedded.slug)
    && embedded.learner !== session.learner;
  if (!wanted) return { detail: embedded, problem: null };
  clear(root);
  root.append(el("p", { class: "muted", role: "status" }, "Loading your version of this exercise…"));
  try {
    const { data } = await api.call("GET", exercise.base);
    if (data && data.slug === embedded.slug && data.learner === session.learner) return { detail: data, problem: null };
    return { detail: embedded, problem: "Your own version of this exercise could not be loaded." };
  } catch (error) {
    return { detail: embedded, problem: `Your own version of this exercise could not be loaded. ${errorText(error)}` };
  }
}

// The page's data: the exercise's detail (gradquiz-exercise), or a shell's {slug, exercise_api, preview}.
function embeddedData() {
  const block = document.getElementById("gradquiz-exercise") || document.getElementById("gradquiz-shell");
  return block ? JSON.parse(block.textContent) : null;
}

export async function initExercise({ api, session }) {
  const embedded = embeddedData();
  const root = document.getElementById("exercise");
  if (!embedded || !root) return; // a page with nothing to show (a plain "not found")
  const exercise = exerciseEndpoint(embedded);
  if (!embedded.kind) {
    const detail = await fetchedDetail(api, session, exercise, root);
    if (!detail) return;
    if (detail.preview) exercise.preview = true;
    // A preview's: where it is answered (a path on this server: the token goes nowhere else).
    if (typeof detail.attempts_url === "string" && /^\/[^/\\]/.test(detail.attempts_url)) exercise.attempts = detail.attempts_url;
    if (detail.version !== undefined && exercise.version === null) exercise.version = detail.version;
    leaveShell();
    showTitle(detail, exercise);
    renderExercise({ api, session, detail, exercise, root, problem: null });
    return;
  }
  const { detail, problem } = await learnersDetail(api, session, embedded, exercise, root);
  renderExercise({ api, session, detail, exercise, root, problem });
}

// The heading and the tab's title of a shell, once the detail is known.
function showTitle(detail, exercise) {
  const heading = document.getElementById("exercise-title");
  if (heading && detail.title) heading.textContent = detail.title;
  if (detail.title) document.title = `${exercise.preview ? "Preview: " : ""}${detail.title} · gradquiz`;
  const article = document.querySelector("article.exercise");
  if (article) article.dataset.kind = detail.kind || "";
}

// A preview says so before anything else: its attempts are graded but counted for nobody.
function previewBanner(exercise) {
  if (!exercise.preview) return null;
  const version = exercise.version === null || exercise.version === undefined ? "" : ` ${exercise.version}`;
  return el("div", { class: "notice preview-banner", role: "note" }, el("p", {},
    el("strong", {}, `Preview of version${version}: `), "attempts here are not counted. They are graded as a learner's would be, never stored in the gradebook nor sent to the LMS."));
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
function renderExercise({ api, session, detail, exercise, root, problem }) {
  clear(root);
  const notice = el("div", { class: "session-notice" });
  const actions = exerciseActions({ api, session, slug: detail.slug, exercise });
  const status = el("p", { class: "status", role: "status", "aria-live": "polite" });
  const isCode = detail.kind === "code";
  const input = isCode ? codeInput({ session, detail, exercise, status }) : quizInput({ detail, status });
  const attempts = earlierAttempts({ api, session, detail, restore: input.restore, preview: exercise.preview });
  const parts = { api, detail, exercise, input, status, actions, afterSubmit: attempts.add };
  append(root, [
    previewBanner(exercise),
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
