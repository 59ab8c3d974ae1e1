/* #/ : the pass rate by exercise, every exercise, the gradebook downloads. */

import { API, cache, downloadButton, get, loadExerciseIndex, problemBox, query } from "../api.js";
import { chartTable, hbarChart } from "../charts.js";
import { card, el, empty, enc, link, loading, section, table } from "../dom.js";
import { badge, fmtNumber, percent } from "../format.js";

export async function viewOverview(root, ctx) {
  // ?course= (a course's page links here): that course's figures; a course's staff get theirs anyway.
  const course = ctx.params.get("course") || "";
  root.append(el("div", { class: "page-head" }, el("h1", {}, "Overview"),
    el("div", { class: "actions" },
      link("#/attempts" + query({ course }), el("span", {}, "Browse attempts")),
      downloadButton("Gradebook CSV (best)", API + "/gradebook.csv" + query({ policy: "best", course }), "gradebook-best.csv"),
      downloadButton("Gradebook CSV (latest)", API + "/gradebook.csv" + query({ policy: "latest", course }), "gradebook-latest.csv"))));
  const cards = el("div", { class: "cards" });
  const chartBox = section("Pass rate by exercise", loading());
  const tableBox = section("Exercises", loading());
  root.append(cards, chartBox, tableBox);

  let stats;
  try {
    stats = (await get(API + "/stats" + query({ course }))).data || [];
  } catch (e) {
    chartBox.replaceChildren(el("h2", {}, "Pass rate by exercise"),
      problemBox(e, { optional: "Statistics are not available on this server yet (GET /api/v1/admin/stats)." }));
    tableBox.remove();
    return;
  }
  cache.exerciseSlugs = stats.map((s) => s.exercise);
  const attempts = stats.reduce((n, s) => n + (s.attempts || 0), 0);
  const active = stats.filter((s) => (s.attempts || 0) > 0);
  cards.append(card("Exercises", stats.length), card("With attempts", active.length),
    card("Attempts", fmtNumber(attempts)));

  chartBox.replaceChildren(el("h2", {}, "Pass rate by exercise"));
  if (!active.length) {
    chartBox.append(empty("No attempts yet. The chart fills in as learners answer."));
  } else {
    chartBox.append(hbarChart(active.map((s) => ({
      label: s.exercise,
      value: s.pass_rate || 0,
      href: "#/exercises/" + enc(s.exercise) + query({ course }),
      title: s.exercise + ": " + percent(s.pass_rate, 1) + " of learners passed (" + (s.passed_learners || 0) + " of " +
        (s.learners || 0) + " learners, " + (s.attempts || 0) + " attempts)",
    })), { name: "pass-rate", max: 1, format: (v) => percent(v, 1), caption: "Pass rate by exercise: the share of learners who passed",
      axisLabel: "share of learners who passed", legend: "Exercises with at least one attempt. Select a bar for the exercise." }),
    chartTable("Pass rates as a table", ["Exercise", "Pass rate", "Passed learners", "Learners"],
      active.map((s) => [s.exercise, percent(s.pass_rate, 1), s.passed_learners, s.learners])));
  }

  let index = null;
  try { index = await loadExerciseIndex(); } catch (e) { index = null; }
  const published = new Map((index || []).map((x) => [x.slug || x.exercise, x.published]));
  const headers = ["Exercise", "Title", "Kind", "Attempts", "Learners", "Passed", "Pass rate"];
  if (index) headers.push("Published");
  tableBox.replaceChildren(el("h2", {}, "Exercises"), table(headers, stats.map((s) => el("tr", { dataset: { exercise: s.exercise } },
    el("td", {}, link("#/exercises/" + enc(s.exercise) + query({ course }), s.exercise)),
    el("td", {}, s.title || ""),
    el("td", {}, s.kind || ""),
    el("td", { class: "num" }, fmtNumber(s.attempts)),
    el("td", { class: "num" }, fmtNumber(s.learners)),
    el("td", { class: "num" }, fmtNumber(s.passed_learners)),
    el("td", { class: "num" }, percent(s.pass_rate, 1)),
    index ? el("td", {}, published.has(s.exercise) ? (published.get(s.exercise) ? "yes" : badge("unpublished")) : "—") : null,
  )), { caption: "Every exercise", captionHidden: true }));
}
