/* #/learners/{learner}?client= : one learner's progress across exercises, and their courses (the
 * roster's name in each, whether they left). */

import { API, get, problemBox, query } from "../api.js";
import { el, empty, enc, link, loading, section, table } from "../dom.js";
import { badge, fmtNumber, fmtScore, learnerName, timeEl } from "../format.js";
import { VERDICTS } from "../vocabulary.js";

/** The courses whose roster names this learner: their name and e-mail there, and when they left. */
function courses(learner, memberships) {
  return section("Courses", table(["Course", "Client", "Name", "E-mail", "In the course"], memberships.map((m) =>
    el("tr", {},
      el("td", {}, link("#/attempts" + query({ course: m.course_id, learner }), m.course)),
      el("td", {}, m.client), el("td", {}, m.name || "—"), el("td", {}, m.email || "—"),
      el("td", {}, m.status === "left"
        ? [el("span", { class: "badge b-left" }, "left the course"), " ", timeEl(m.left_at)]
        : "yes"))), { caption: "The learner's courses", captionHidden: true }));
}

export async function viewLearner(root, ctx, learner) {
  document.title = learner + " · gradquiz dashboard";
  const client = ctx.params.get("client") || "";
  const heading = el("h1", { class: "learner" }, learner);
  root.append(el("div", { class: "page-head" },
    el("div", {}, el("p", { class: "crumbs" }, "Learner", client ? " of " + client : ""), heading),
    el("div", { class: "actions" }, link("#/attempts" + query({ learner, client }), "All attempts"))));
  const box = section("Progress", loading());
  root.append(box);
  try {
    const { data } = await get(API + "/learners/" + enc(learner) + "/progress" + query({ client }));
    const memberships = (data && data.memberships) || [];
    const named = memberships.find((m) => m.name);
    if (named) {
      heading.replaceChildren(...learnerName({ learner, learner_name: named.name }));
      document.title = named.name + " · gradquiz dashboard";
    }
    if (memberships.length) root.insertBefore(courses(learner, memberships), box);
    const rows = (data && data.exercises) || [];
    box.replaceChildren(el("h2", {}, "Progress"), rows.length ? table(["Exercise", "Attempts", "Best", "Latest", "Passed",
      "First attempt", "First passed", "Attempts to pass"], rows.map((r) => el("tr", {},
      el("td", {}, link("#/attempts" + query({ exercise: r.exercise, learner, client }), r.exercise)),
      el("td", { class: "num" }, fmtNumber(r.attempts)), el("td", { class: "num" }, fmtScore(r.best_score)),
      el("td", { class: "num" }, fmtScore(r.latest_score)), el("td", {}, r.passed ? badge("passed", VERDICTS) : "—"),
      el("td", {}, timeEl(r.first_attempt_at)), el("td", {}, timeEl(r.first_passed_at)),
      el("td", { class: "num" }, fmtNumber(r.attempts_to_first_pass))))) : empty("No attempts."));
  } catch (e) {
    box.replaceChildren(el("h2", {}, "Progress"), problemBox(e, { optional: "Learner progress is not available on this server yet." }));
  }
}
