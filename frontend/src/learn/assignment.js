// The assignment page (/learn/assignment): the exercises of the assignment the learner's token was
// launched for (an LMS link of several exercises), in order, with each one's status and counted
// score, and the assignment's score as the LMS's gradebook gets it (GET assignment with the token).
// Each exercise opens in this tab: the token stays in the tab's sessionStorage (session.js), never
// in a URL. The list is read again whenever the learner comes back to the page.
// Everything from the server goes on the page as text.

import { el, clear } from "../dom.js";
import { num, percent } from "../format.js";
import { errorText, showSession } from "./common.js";

const RULES = {
  mean: "The assignment's score is the mean of its exercises' scores, out of 100.",
  sum: "The assignment's score is each exercise's score times its points, added up, out of the points' total.",
};

function statusText(part) {
  const tries = `${part.attempts} attempt${part.attempts === 1 ? "" : "s"}`;
  const counted = part.score === null || part.score === undefined ? "no grade yet" : `score ${percent(part.score, 1)}`;
  if (part.status === "passed") return `Passed (${tries}, ${counted})`;
  if (part.status === "tried") return `Tried (${tries}, ${counted})`;
  return "Not tried";
}

function render(root, data) {
  clear(root);
  const title = document.getElementById("assignment-title");
  title.textContent = data.title;
  document.title = `${data.title} · gradquiz`;
  const total = data.score === null || data.score === undefined
    ? `none yet (out of ${num(data.score_maximum)})`
    : `${num(Math.round(data.score * 100) / 100)} out of ${num(data.score_maximum)}`;
  const graded = data.exercises.filter((part) => part.score !== null && part.score !== undefined).length;
  root.append(
    el("p", {}, RULES[data.scoring] || "", " Exercises not tried count 0; each exercise counts its score under its own policy (your best, or your latest)."),
    el("p", { class: "assignment-total", id: "assignment-total" },
      el("strong", {}, "Your score: "), total,
      el("span", { class: "muted" }, ` (${graded} of ${data.exercises.length} exercises graded)`)),
  );
  const list = el("ol", { class: "assignment-list", "aria-label": "The assignment's exercises, in order" });
  for (const part of data.exercises) {
    const statusClass = part.status === "passed" ? "ok" : part.status === "tried" ? "" : "muted";
    list.append(el("li", { class: `assignment-item status-${part.status}`, "data-slug": part.slug },
      el("div", { class: "assignment-row" },
        el("a", { href: `/learn/${encodeURIComponent(part.slug)}`, class: "assignment-link" }, part.title),
        el("span", { class: `assignment-status ${statusClass}` }, statusText(part)),
        data.scoring === "sum" ? el("span", { class: "muted small" }, `${num(part.points)} point${part.points === 1 ? "" : "s"}`) : null,
      )));
  }
  root.append(list);
}

export async function initAssignment({ api, session }) {
  const root = document.getElementById("assignment");
  const notice = el("div", { class: "session-notice" });
  let busy = false;

  async function load() {
    showSession(session, [notice]);
    if (!session.token) {
      clear(root);
      root.append(notice);
      return;
    }
    if (busy) return;
    busy = true;
    try {
      const { data } = await api.call("GET", "assignment");
      render(root, data);
    } catch (error) {
      clear(root);
      root.append(notice, el("div", { class: "notice warn", role: "alert" },
        el("p", {}, `The assignment could not be loaded. ${errorText(error)}`)));
    } finally {
      busy = false;
    }
  }

  session.addEventListener("change", () => showSession(session, [notice]));
  // Back from an exercise (a new load, or the browser's back-forward cache) or back to the tab.
  window.addEventListener("pageshow", (event) => event.persisted && load());
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && load());
  await load();
}

// On an exercise page opened from an assignment: a way back to it (the crumbs' first link).
export function linkBackToAssignment(session) {
  if (!session.current || !session.current.assignment) return;
  const crumbs = document.querySelector(".crumbs");
  if (!crumbs) return;
  crumbs.prepend(el("a", { href: "/learn/assignment", class: "back-to-assignment" }, "Your assignment"), " › ");
}
