/* How numbers, scores, times, ids and names are shown. */

import { el } from "./dom.js";

import { percent } from "/vendor/shared/format.js";

export { percent };

/** A score (a fraction from 0 to 1) as the learner pages show it: a percentage ("58%", "58.3%"). */
export function fmtScore(v) {
  if (v === null || v === undefined) return "—";
  const n = Number(v);
  return Number.isFinite(n) ? percent(n, 1) : String(v);
}

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : dateFmt.format(d);
}

export function timeEl(iso) {
  return iso ? el("time", { datetime: iso, title: iso }, fmtTime(iso)) : "—";
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Number(seconds);
  if (!Number.isFinite(s)) return String(seconds);
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 90) return (Math.round(s * 10) / 10) + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  if (s < 172800) return (Math.round(s / 360) / 10) + " h";
  return (Math.round(s / 8640) / 10) + " days";
}

export function fmtNumber(v, digits) {
  if (v === null || v === undefined) return "—";
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  return digits === undefined ? n.toLocaleString() : n.toFixed(digits);
}

export function shortId(id) {
  return String(id || "").slice(0, 8);
}

/** A learner as a person reads them: the name their course's roster gives (service/lti/roster.py)
 * with the LMS's id beside it, or the id alone where nothing names them; `href` links both, and
 * "left the course" follows when the roster no longer has them. */
export function learnerName(person, href) {
  const id = person.learner;
  const label = person.learner_name
    ? [el("span", { class: "person-name" }, person.learner_name), " ", el("span", { class: "muted learner-id" }, id)]
    : [id];
  const parts = [href ? el("a", { href }, label) : el("span", {}, label)];
  if (person.learner_status === "left") {
    parts.push(" ", el("span", { class: "badge b-left", title: "No longer in the course's roster in the LMS" },
      "left the course"));
  }
  return parts;
}

/** A status as a badge: `label` says it (a verdict's title from the terms table), else the status
 * itself, its underscores as spaces ("dry run"): the page shows words, never an identifier. The
 * stored value picks the colour (b-<value>) when `known` lists it. */
export function badge(value, known, label) {
  const text = value === null || value === undefined || value === "" ? "—" : String(value);
  const cls = known && known.includes(text) ? "b-" + text.replace(/[^a-z_]/g, "") : "b-other";
  const shown = text === "—" ? text : label || text.replace(/_/g, " ");
  return el("span", { class: "badge " + cls, title: shown === text ? null : text }, shown);
}

export function scoreCell(item) {
  const parts = [el("span", { class: "score" }, fmtScore(item.score))];
  if (item.overridden) {
    parts.push(" ", el("span", { class: "badge b-overridden", title: "grader's score: " + fmtScore(item.grader_score) },
      "overridden"));
  }
  return parts;
}

export function prettyJson(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}
