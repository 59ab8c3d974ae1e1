/* #/attempts?... : the attempt search: filters, sorts, Load more, CSV export. */

import { API, cache, downloadButton, get, listOf, problemBox, query } from "../api.js";
import { el, empty, enc, link } from "../dom.js";
import { badge, learnerName, scoreCell, timeEl } from "../format.js";
import { render } from "../router.js";
import { DEFAULT_SORT, SORTS, STATUSES, VERDICTS } from "../vocabulary.js";
import { causeChoices, causeTitle, loadTerms, statusTitle, words } from "../terms.js";

const FILTERS = ["course", "exercise", "learner", "client", "status", "verdict", "likely_cause", "score_min",
  "score_max", "since", "until", "sort"];
// The server names the sorts (vocabulary.js); the page says what they mean.
const SORT_LABELS = { "-created_at": "Newest first", created_at: "Oldest first", "-score": "Highest score first",
  score: "Lowest score first" };

function filterForm(params) {
  const field = (name, label, input) => el("div", { class: "field" }, el("label", { for: "f-" + name }, label), input);
  const text = (name, extra) => el("input", Object.assign({ id: "f-" + name, name, type: "text", value: params.get(name) || "" }, extra || {}));
  const select = (name, options, blank) => {
    const s = el("select", { id: "f-" + name, name }, el("option", { value: "" }, blank),
      options.map(([v, l]) => el("option", { value: v }, l)));
    s.value = params.get(name) || "";
    return s;
  };
  const exerciseList = el("datalist", { id: "exercise-slugs" }, (cache.exerciseSlugs || []).map((x) => el("option", { value: x })));
  if (!cache.exerciseSlugs) {
    get(API + "/stats").then(({ data }) => {
      cache.exerciseSlugs = (data || []).map((s) => s.exercise);
      exerciseList.replaceChildren(...cache.exerciseSlugs.map((x) => el("option", { value: x })));
    }).catch(() => { /* suggestions only */ });
  }
  // Scores are typed as percentages (the address keeps them so); the API takes fractions (apiFilters).
  const number = (name) => el("input", { id: "f-" + name, name, type: "number", min: 0, max: 100, step: "any",
    value: params.get(name) || "", inputmode: "decimal" });
  const when = (name) => el("input", { id: "f-" + name, name, type: "datetime-local", value: params.get(name) || "" });
  const form = el("form", { class: "filters", id: "attempt-filters", role: "search", "aria-label": "Filter attempts" },
    // A course's page links here with ?course=: the filter stays on (a course's staff see theirs alone anyway).
    el("input", { type: "hidden", name: "course", value: params.get("course") || "" }),
    field("exercise", "Exercise", text("exercise", { list: "exercise-slugs", placeholder: "any" })), exerciseList,
    field("learner", "Learner", text("learner", { placeholder: "exact id" })),
    field("client", "Client", text("client", { placeholder: "client name" })),
    field("status", "Status", select("status", STATUSES.map((s) => [s, words(s)]), "any")),
    field("verdict", "Verdict", select("verdict", VERDICTS.map((s) => [s, statusTitle(s)]), "any")),
    field("likely_cause", "Likely cause", causeChoices().length
        && (!params.get("likely_cause") || causeChoices().some(([name]) => name === params.get("likely_cause")))
      ? select("likely_cause", causeChoices(), "any") : text("likely_cause", { placeholder: "a cause's name" })),
    field("score_min", "Score from (%)", number("score_min")),
    field("score_max", "Score to (%)", number("score_max")),
    field("since", "Submitted after", when("since")),
    field("until", "Submitted before", when("until")),
    field("sort", "Sort", select("sort", SORTS.filter((s) => s !== DEFAULT_SORT).map((s) => [s, SORT_LABELS[s] || s]),
      SORT_LABELS[DEFAULT_SORT] || DEFAULT_SORT)),
    el("div", { class: "field buttons" },
      el("button", { type: "submit" }, "Apply filters"),
      el("button", { type: "button", class: "secondary", id: "reset-filters" }, "Reset")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = {};
    for (const name of FILTERS) {
      const input = form.elements.namedItem(name);
      if (input && input.value.trim() !== "") values[name] = input.value.trim();
    }
    const target = "#/attempts" + query(values);
    if (location.hash === target) render(); else location.hash = target;
  });
  form.querySelector("#reset-filters").addEventListener("click", () => { location.hash = "#/attempts"; });
  return form;
}

/** The API's query for the filters in the page's address (datetime-local values become ISO). */
function apiFilters(params) {
  const out = {};
  for (const name of FILTERS) {
    let v = params.get(name);
    if (!v) continue;
    if ((name === "since" || name === "until") && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v)) {
      const d = new Date(v);
      if (!Number.isNaN(d.getTime())) v = d.toISOString();
    }
    if ((name === "score_min" || name === "score_max") && Number.isFinite(Number(v))) v = String(Number(v) / 100);
    out[name] = v;
  }
  return out;
}

function attemptRow(a) {
  return el("tr", { dataset: { attemptId: a.id } },
    el("td", {}, link("#/attempts/" + enc(a.id), timeEl(a.created_at))),
    el("td", {}, link("#/exercises/" + enc(a.exercise), a.exercise), a.exercise_version ? el("span", { class: "muted" }, " v" + a.exercise_version) : null),
    el("td", { class: "learner" }, learnerName(a, "#/learners/" + enc(a.learner) + query({ client: a.client }))),
    el("td", {}, a.client || ""),
    el("td", {}, badge(a.status, STATUSES)),
    el("td", {}, badge(a.verdict, VERDICTS, a.verdict ? statusTitle(a.verdict) : null)),
    el("td", { class: "num" }, scoreCell(a)),
    el("td", { title: a.likely_cause || null }, causeTitle(a.likely_cause)),
    el("td", {}, link("#/attempts/" + enc(a.id), el("span", { class: "open" }, "Open"))));
}

export async function viewAttempts(root, ctx) {
  document.title = "Attempts · gradquiz dashboard";
  await loadTerms();
  if (!ctx.alive()) return;
  const filters = apiFilters(ctx.params);
  const exportBox = el("div", { class: "actions" },
    downloadButton("Export these as CSV", API + "/attempts.csv" + query(filters), "attempts.csv"));
  root.append(el("div", { class: "page-head" }, el("h1", {}, "Attempts"), exportBox),
    el("section", { class: "card" }, filterForm(ctx.params)));
  const body = el("tbody", {});
  const count = el("p", { class: "count", id: "attempt-count", "aria-live": "polite" });
  const more = el("button", { type: "button", class: "secondary", id: "load-more", hidden: true }, "Load more");
  const results = el("section", { class: "card" }, count,
    el("div", { class: "table-wrap" }, el("table", { id: "attempts-table" },
      el("caption", { class: "visually-hidden" }, "Attempts matching the filters"),
      el("thead", {}, el("tr", {}, ["Submitted", "Exercise", "Learner", "Client", "Status", "Verdict", "Score",
        "Likely cause", ""].map((h) => el("th", { scope: "col", class: h === "Score" ? "num" : null }, h)))), body)),
    el("div", { class: "more" }, more));
  root.append(results);

  let cursor = null, shown = 0;
  async function page() {
    more.disabled = true;
    more.textContent = "Loading…";
    try {
      const { items, next } = listOf(await get(API + "/attempts" + query(Object.assign({}, filters, { limit: 50, cursor }))));
      if (!ctx.alive()) return;
      body.append(...items.map(attemptRow));
      shown += items.length;
      cursor = next && next.cursor;
      count.textContent = shown ? shown + (shown === 1 ? " attempt" : " attempts") + (cursor ? " shown, more match" : "") : "";
      if (!shown) results.insertBefore(empty("No attempt matches these filters."), count);
      more.hidden = !cursor;
    } catch (e) {
      results.insertBefore(problemBox(e, { optional: "Attempt search is not available on this server yet." }), count);
      more.hidden = true;
    } finally {
      more.disabled = false;
      more.textContent = "Load more";
    }
  }
  more.addEventListener("click", page);
  await page();
}
