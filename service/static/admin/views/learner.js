/* #/learners/{learner}?client= : one learner's progress across exercises. */

import { API, get, problemBox, query } from "../api.js";
import { el, empty, enc, link, loading, section, table } from "../dom.js";
import { badge, fmtNumber, fmtScore, timeEl } from "../format.js";
import { VERDICTS } from "../vocabulary.js";

export async function viewLearner(root, ctx, learner) {
  document.title = learner + " · gradquiz dashboard";
  const client = ctx.params.get("client") || "";
  root.append(el("div", { class: "page-head" },
    el("div", {}, el("p", { class: "crumbs" }, "Learner", client ? " of " + client : ""), el("h1", { class: "learner" }, learner)),
    el("div", { class: "actions" }, link("#/attempts" + query({ learner, client }), "All attempts"))));
  const box = section("Progress", loading());
  root.append(box);
  try {
    const { data } = await get(API + "/learners/" + enc(learner) + "/progress" + query({ client }));
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
