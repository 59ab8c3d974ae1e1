// The way on from an exercise page: once the learner has passed the exercise (a graded attempt the
// grader found correct, in any answer of the API the page reads: the POST's, the polled grade, the
// earlier attempts), the page offers "Next: <title>" beside the result, leading where the page's
// navigation (service/templates/learn/exercise.html, #next-exercise) leads: the next exercise in
// the lesson's order, or the lesson's Key points after its last one.
//
// It watches the API's answers rather than the result's rendering, so the answer panels need not
// know about it: watchPasses wraps the page's api, initWayOn listens for the passes it reports.

import { el } from "../dom.js";

const PASSED = "gradquiz:passed";

function passed(attempt, slug) {
  return Boolean(attempt) && typeof attempt === "object" && attempt.exercise === slug
    && attempt.status === "graded" && attempt.correct === true;
}

// The page's exercise (article[data-slug]); null on the lesson and assignment pages.
function pageSlug() {
  const article = document.querySelector("article.exercise[data-slug]");
  return article ? article.dataset.slug : null;
}

// `api`, whose answers are watched for a pass at the page's exercise (reported as a PASSED event on
// the document, its detail the attempt). Everything else passes through unchanged.
export function watchPasses(api) {
  const slug = pageSlug();
  if (!slug) return api;
  const call = async (...args) => {
    const answer = await api.call(...args);
    const data = answer && answer.data;
    const attempts = data && Array.isArray(data.attempts) ? data.attempts : [data];
    const pass = attempts.find((attempt) => passed(attempt, slug));
    if (pass) document.dispatchEvent(new CustomEvent(PASSED, { detail: pass }));
    return answer;
  };
  return { ...api, call };
}

// "Next: <title>", once, placed before the answer's result (or at the end of the exercise).
export function initWayOn() {
  const next = document.getElementById("next-exercise");
  if (!next) return; // no way on: a course's own exercise, the last of all, a preview
  document.addEventListener(PASSED, () => {
    if (document.getElementById("next-after-pass")) return;
    const title = next.dataset.title || next.textContent.replace(/^Next:\s*/, "");
    const offer = el("p", { id: "next-after-pass", class: "way-on", role: "status" },
      el("span", { class: "way-on-done" }, el("span", { "aria-hidden": "true" }, "✓ "), "You have passed this exercise. "),
      el("a", { href: next.getAttribute("href"), class: "button", rel: "next" }, `Next: ${title}`));
    const result = document.querySelector("#exercise .result");
    if (result) result.before(offer);
    else document.getElementById("exercise")?.append(offer);
  });
}
