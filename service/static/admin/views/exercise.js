/* #/exercises/{slug} : one exercise's statistics, versions, publishing, regrade. */

import { API, caller, downloadButton, get, listOf, loadExerciseIndex, post, problemBox, query } from "../api.js";
import { chartTable, vbarChart } from "../charts.js";
import { $, card, el, empty, enc, link, loading, section, table, toast } from "../dom.js";
import { badge, fmtDuration, fmtNumber, fmtScore, percent, timeEl } from "../format.js";
import { startRegrade } from "./regrades.js";
import { exerciseRules } from "./rules.js";
import { causeTitle, checkTitle, loadTerms } from "../terms.js";

export async function viewExercise(root, ctx, slug) {
  document.title = slug + " · gradquiz dashboard";
  // ?course= (from a course's overview): the course's figures, attempts and regrade; a course's staff get theirs anyway.
  const course = ctx.params.get("course") || "";
  const actions = el("div", { class: "actions" });
  root.append(el("div", { class: "page-head" },
    el("div", {}, el("p", { class: "crumbs" }, link("#/" + query({ course }), "Overview"), " / exercise"), el("h1", {}, slug),
      el("p", { class: "subtitle", id: "exercise-subtitle" })),
    actions));
  actions.append(
    link("#/attempts" + query({ exercise: slug, course }), "Attempts"),
    downloadButton("Attempts CSV", API + "/attempts.csv" + query({ exercise: slug, course }), slug + "-attempts.csv"),
    downloadButton("Gradebook CSV", API + "/gradebook.csv" + query({ exercise: slug, course }), slug + "-gradebook.csv"));
  const regrade = el("button", { type: "button", id: "regrade-exercise" }, course ? "Regrade the course's attempts…" : "Regrade all attempts…");
  regrade.addEventListener("click", () => startRegrade(course ? { exercise: slug, course: Number(course) } : { exercise: slug }, regrade));
  actions.append(regrade);
  const publishBox = el("span", { class: "publish" });
  actions.append(publishBox);

  const cards = el("div", { class: "cards" });
  const charts = el("div", { class: "grid-2" });
  const lists = el("div", { class: "grid-2" });
  const versions = section("Versions", loading());
  root.append(cards, charts, lists, exerciseRules(slug), versions);

  loadPublish(slug, publishBox);
  loadVersions(slug, versions);

  let s;
  try {
    s = (await get(API + "/exercises/" + enc(slug) + "/stats" + query({ course }))).data;
  } catch (e) {
    cards.replaceWith(problemBox(e, { optional: "Exercise statistics are not available on this server yet." }));
    return;
  }
  cards.append(...[
    card("Attempts", fmtNumber(s.attempts)), card("Graded", fmtNumber(s.graded)),
    card("Learners", fmtNumber(s.learners)), card("Passed learners", fmtNumber(s.passed_learners)),
    card("Pass rate (learners)", percent(s.pass_rate, 1)), card("Pass rate (attempts)", percent(s.attempt_pass_rate, 1)),
    s.mean_best_score !== undefined ? card("Mean best score (counted)", fmtScore(s.mean_best_score)) : null,
    s.mean_best_raw_score !== undefined ? card("Mean best score (raw, before penalties)", fmtScore(s.mean_best_raw_score)) : null,
    card("Median attempts to first pass", fmtNumber(s.median_attempts_to_first_pass)),
    card("Median time to first pass", fmtDuration(s.median_seconds_to_first_pass))].filter(Boolean));

  if (s.counters_as_of) {
    cards.after(el("p", { class: "muted", id: "counters-as-of" },
      "Figures include every grade made before ", timeEl(s.counters_as_of), "; newer grades are still being counted."));
  }
  charts.append(histogram(s), attemptsByDay(s));
  await loadTerms();
  lists.append(counted(slug, "Most common failing checks", s.failing_checks, null, "Check", checkTitle),
    counted(slug, "Most common likely causes", s.likely_causes, (n) => ({ likely_cause: n }), "Likely cause", causeTitle));
}

function histogram(s) {
  const hist = s.score_histogram || [];
  const histBox = section("Score distribution");
  if (!hist.some((b) => b.count)) histBox.append(empty("No graded attempts yet."));
  else {
    const label = (b) => fmtScore(b.from) + "–" + fmtScore(b.to);
    const short = (b) => Math.round(Number(b.from) * 100) + "–" + fmtScore(b.to);
    histBox.append(vbarChart(hist.map((b) => ({ label: label(b), short: short(b), value: b.count,
      title: label(b) + ": " + b.count + (b.count === 1 ? " learner" : " learners") })),
    { name: "histogram", caption: "Histogram of each learner's best score", axisLabel: "best score per learner",
      legend: "Learners by their best score." }),
    chartTable("Histogram as a table", ["Score", "Learners"], hist.map((b) => [label(b), b.count])));
  }
  return histBox;
}

function attemptsByDay(s) {
  const days = s.attempts_by_day || [];
  const dayBox = section("Attempts over time");
  if (!days.some((d) => d.attempts)) dayBox.append(empty("No attempts in the last 30 days."));
  else {
    dayBox.append(vbarChart(days.map((d) => ({ label: d.day, short: String(d.day).slice(5), value: d.attempts,
      inner: d.passed, title: d.day + ": " + d.attempts + " attempts, " + d.passed + " passed" })),
    { name: "attempts-by-day", caption: "Attempts per day over the last 30 days, with the passed ones",
      axisLabel: "day (UTC)", maxLabels: 6,
      legend: el("span", {}, el("span", { class: "swatch swatch-all" }), " attempts  ",
        el("span", { class: "swatch swatch-passed" }), " passed") }),
    chartTable("Attempts per day as a table", ["Day", "Attempts", "Passed"], days.map((d) => [d.day, d.attempts, d.passed])));
  }
  return dayBox;
}

/** Names with their counts (failing checks, likely causes); `filter(name)`: the attempts with it. */
function counted(slug, title, rows, filter, noun, name) {
  return section(title, rows && rows.length
    ? table([noun, "Attempts"], rows.map((r) => el("tr", { dataset: { name: r.name } },
      el("td", { title: r.name }, filter ? link("#/attempts" + query(Object.assign({ exercise: slug }, filter(r.name))), name(r.name)) : name(r.name)),
      el("td", { class: "num" }, fmtNumber(r.count)))))
    : empty("None."));
}

async function loadPublish(slug, box) {
  let index;
  try { index = await loadExerciseIndex(); } catch (e) { index = null; }
  const entry = (index || []).find((x) => (x.slug || x.exercise) === slug);
  if (!entry) return;
  const sub = $("exercise-subtitle");
  if (sub) {
    sub.replaceChildren(entry.title || "", entry.kind ? " · " + entry.kind : "",
      entry.version !== undefined ? " · version " + (entry.version && entry.version.number !== undefined ? entry.version.number : entry.version) : "",
      " · ", entry.published ? badge("published", ["published"]) : badge("unpublished", ["unpublished"]));
  }
  // Publishing acts on every course: a course's own staff see the state but cannot change it.
  if (caller.info && caller.info.course) return;
  const button = el("button", { type: "button", class: entry.published ? "secondary" : "", id: "publish-toggle" },
    entry.published ? "Unpublish" : "Publish");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await post(API + "/exercises/" + enc(slug) + (entry.published ? "/unpublish" : "/publish"));
      toast(entry.published ? "Unpublished: learners no longer see " + slug : "Published " + slug);
      box.replaceChildren();
      loadPublish(slug, box);
    } catch (e) {
      toast((e.problem.title || "Error") + ": " + (e.problem.detail || e.status), "error");
      button.disabled = false;
    }
  });
  box.replaceChildren(button);
}

async function loadVersions(slug, box) {
  try {
    const { items } = listOf(await get(API + "/exercises/" + enc(slug) + "/versions"));
    box.replaceChildren(el("h2", {}, "Versions"), items.length ? table(["Version", "Digest", "Created", "Attempts", "Current"],
      items.map((v) => el("tr", {},
        el("td", { class: "num" }, v.number !== undefined ? v.number : v.version),
        el("td", {}, el("code", {}, String(v.digest || v.content_digest || "").slice(0, 12))),
        el("td", {}, timeEl(v.created_at)),
        el("td", { class: "num" }, fmtNumber(v.attempts)),
        el("td", {}, v.current ? badge("current", ["current"]) : "")))) : empty("No versions."));
  } catch (e) {
    box.replaceChildren(el("h2", {}, "Versions"),
      problemBox(e, { optional: "Exercise versions are not available on this server yet." }));
  }
}
