// What the pages share: the session line in the header, the sign-in notice, drafts, panels, runs and attempts.

import { el, clear, uid } from "../dom.js";
import { ApiError } from "./api.js";

export function describeSession(session) {
  if (session.state === "active") {
    const who = session.learner ? `Signed in as ${session.learner}` : "Signed in";
    return session.current.role === "instructor" ? `${who} (instructor)` : who;
  }
  if (session.state === "ended") return "Session ended";
  return "Not signed in";
}

// The notice under the title when the page cannot run or submit; null when it can.
export function sessionNotice(session) {
  if (session.state === "active") return null;
  if (session.state === "ended") {
    return el("div", { class: "notice warn", role: "alert" },
      el("p", {}, el("strong", {}, "Your session has ended. "),
        "Your work is kept in this browser. Open this exercise again from your course (or the site that sent you here) to sign in again, then run and submit it."));
  }
  return el("div", { class: "notice" },
    el("p", {}, el("strong", {}, "You are not signed in, "), "so Run and Submit are off. You can read everything here."),
    el("p", {}, "To sign in, open this page from your course in your learning platform (LMS), or from the site that gave you access: it opens the page with a learner token for you."));
}

// A titled panel of the exercise page, named by its heading.
export function section(title, ...children) {
  const id = uid("section");
  return el("section", { "aria-labelledby": id, class: "panel" }, el("h2", { id }, title), ...children);
}

// slug: the exercise on the page (none on the lesson page).
export function showSession(session, notices, slug = null) {
  const status = document.getElementById("session-status");
  if (status) status.textContent = describeSession(session);
  for (const holder of notices) {
    clear(holder);
    let notice = sessionNotice(session);
    if (!notice && slug && !session.allows(slug)) {
      notice = el("div", { class: "notice warn" }, el("p", {}, el("strong", {}, "Your sign-in is for other exercises, "),
        "so Run and Submit are off here. Open this exercise from your course (or the site that sent you) to answer it."));
    }
    if (notice) holder.append(notice);
  }
}

// Drafts: per learner (or "guest") and per exercise or lesson example, in localStorage.
export function draftKey(session, id) {
  return `gradquiz.draft.${session.learner || "guest"}.${id}`;
}

export function loadDraft(session, id) {
  try {
    for (const key of [draftKey(session, id), `gradquiz.draft.guest.${id}`]) {
      const raw = localStorage.getItem(key);
      if (raw !== null) return JSON.parse(raw).code;
    }
  } catch {
    /* storage off or a draft from elsewhere */
  }
  return null;
}

export function saveDraft(session, id, code) {
  try {
    localStorage.setItem(draftKey(session, id), JSON.stringify({ code, saved_at: new Date().toISOString() }));
  } catch {
    /* storage full or off: the draft lives as long as the page */
  }
}

export function debounce(fn, ms) {
  let timer = null;
  const run = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  run.flush = (...args) => {
    clearTimeout(timer);
    fn(...args);
  };
  return run;
}


const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const pending = (attempt) => attempt.status === "queued" || attempt.status === "running";

function newKey() {
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`;
}

// POST {exercise}/attempts once (its Idempotency-Key makes a retried request the same attempt).
// `exercise` is where the page reads the exercise (exerciseEndpoint: exercises/{slug}, or a preview's).
export async function postAttempt(api, exercise, body) {
  const { data } = await api.call("POST", exercise.attempts || `${exercise.base}/attempts`,
    { body, headers: { "Idempotency-Key": newKey() } });
  return data;
}

// The attempt once graded, or as it stands after eight long polls. A preview attempt is polled at the
// `url` its POST answered (it is no attempt of the learner's: /preview-attempts/{id}).
export async function waitForGrade(api, attempt, exercise) {
  let data = attempt;
  const preview = Boolean(exercise && exercise.preview && attempt.url);
  for (let tries = 0; pending(data) && tries < 8; tries += 1) {
    ({ data } = await api.call("GET", preview ? `${attempt.url}?wait=25` : `attempts/${data.id}?wait=25`));
    if (pending(data)) await sleep(300);
  }
  return { attempt: data, pending: pending(data) };
}

// POST /api/v1/runs, then follow Location until the run has finished.
export async function runCode(api, body) {
  let { status, data, headers } = await api.call("POST", "runs", { body: { wait: 20, ...body } });
  for (let tries = 0; status === 202 && tries < 6; tries += 1) {
    const location = headers.get("Location") || `${api.base}/runs/${data.id}`;
    ({ status, data, headers } = await api.call("GET", `${location}?wait=20`));
    if (data.status === "finished" || data.status === "error") break;
    await sleep(200);
  }
  return data;
}

// The error's text for a status line (a problem's detail, or why the call was refused).
export function errorText(error) {
  if (error instanceof ApiError) {
    if (error.status === 401) return "Your session has ended: your work is kept here; sign in again to go on.";
    if (error.status === 403) return `Refused: ${error.message}`;
    if (error.status === 429) return "Too many requests in a short time: wait a moment and try again.";
    return error.message;
  }
  return `Something went wrong: ${error.message || error}`;
}
