/* #/attempts/{id} : one attempt in full, its override form, regrading it. */

import { API, get, post, problemBox, query } from "../api.js";
import { dl, el, empty, enc, link, section, table, toast } from "../dom.js";
import { badge, fmtDuration, fmtNumber, fmtScore, learnerName, percent, prettyJson, shortId, timeEl } from "../format.js";
import { render } from "../router.js";
import { startRegrade } from "./regrades.js";
import { STATUSES, VERDICTS } from "../vocabulary.js";
import { causeTitle, checkTitle, loadTerms, statusTitle } from "../terms.js";

export async function viewAttempt(root, ctx, id) {
  document.title = "Attempt " + shortId(id) + " · gradquiz dashboard";
  let a;
  try {
    [a] = await Promise.all([get(API + "/attempts/" + enc(id)).then((r) => r.data), loadTerms()]);
  } catch (e) {
    root.append(el("h1", {}, "Attempt"), problemBox(e, { optional: "Attempt details are not available on this server yet." }));
    return;
  }
  // Each part, in the page's order; a part with nothing to show is null.
  for (const part of [heading, facts, submitted, feedback, checks, raised, diagnostics, output, timings, delivery,
    overrides, events]) {
    const node = part(a);
    if (node) root.append(node);
  }
}

function heading(a) {
  const regrade = el("button", { type: "button", class: "secondary", id: "regrade-attempt" }, "Regrade this attempt…");
  regrade.addEventListener("click", () => startRegrade({ attempt: a.id }, regrade));
  return el("div", { class: "page-head" },
    el("div", {}, el("p", { class: "crumbs" }, link("#/attempts", "Attempts"), " / ",
      link("#/attempts" + query({ exercise: a.exercise }), a.exercise)),
    el("h1", {}, "Attempt ", el("code", { title: a.id }, shortId(a.id)))),
    el("div", { class: "actions" }, regrade));
}

function facts(a) {
  const scoreText = [el("span", { class: "score big", id: "attempt-score" }, fmtScore(a.score))];
  if (a.overridden) scoreText.push(" ", el("span", { class: "badge b-overridden" }, "overridden"),
    el("span", { class: "muted" }, " grader: " + fmtScore(a.grader_score)));
  return el("section", { class: "card" }, dl([
    ["Exercise", link("#/exercises/" + enc(a.exercise), a.exercise)],
    ["Version", (a.exercise_version !== undefined && a.exercise_version !== null ? "v" + a.exercise_version : "") +
      (a.exercise_version_digest ? " · " + String(a.exercise_version_digest).slice(0, 12) : "")],
    ["Learner", el("span", { id: "attempt-learner" }, learnerName(a, "#/learners/" + enc(a.learner) + query({ client: a.client })))],
    a.learner_email ? ["E-mail", el("span", { id: "attempt-learner-email" }, a.learner_email)] : null,
    ["Client", a.client],
    ["Status", badge(a.status, STATUSES)],
    ["Verdict", badge(a.verdict, VERDICTS, a.verdict ? statusTitle(a.verdict) : null)],
    ["Score", el("span", {}, scoreText)],
    ["Likely cause", a.likely_cause ? el("span", { title: a.likely_cause }, causeTitle(a.likely_cause)) : null],
    a.report_status ? ["Report status", el("span", { id: "attempt-report-status", title: a.report_status }, statusTitle(a.report_status))] : null,
    a.grader_version ? ["Grader", a.grader_version] : null,
  ]));
}

function submitted(a) {
  return a.code !== null && a.code !== undefined
    ? section("Submitted code", el("pre", { class: "code", id: "attempt-code" }, el("code", {}, a.code)))
    : section("Answer", el("pre", { class: "code", id: "attempt-answer" }, JSON.stringify(a.answer, null, 2)));
}

function feedback(a) {
  if (!Array.isArray(a.feedback) || !a.feedback.length) return null;
  return section("Feedback", el("ul", { class: "feedback", id: "attempt-feedback" }, a.feedback.map(feedbackItem)));
}

function checks(a) {
  const checks = a.checks || [];
  if (!checks.length) return null;
  return section("Checks", table(["", "Check", "Weight", "Message", "Likely cause"], checks.map((c) =>
    el("tr", { class: c.passed ? "passed" : "failed", dataset: { check: c.name } },
      el("td", {}, el("span", { class: "badge " + (c.passed ? "b-passed" : "b-failed") }, c.passed ? "passed" : "failed")),
      el("td", { title: c.name }, checkTitle(c.name)),
      el("td", { class: "num" }, c.weight === null || c.weight === undefined ? "—" : percent(c.weight, 1)),
      el("td", { class: "message" }, c.message || ""),
      el("td", {}, causeTitle(c.likely_cause)))), { class: "checks", caption: "Checks", captionHidden: true }));
}

/** The exception the submission raised. */
function raised(a) {
  if (!a.error || typeof a.error !== "object" || !Object.keys(a.error).length) return null;
  return section("Error raised by the submission", a.error.message ? el("p", { class: "message" }, a.error.message) : null,
    el("pre", { class: "code output" }, a.error.traceback || prettyJson(a.error)));
}

function diagnostics(a) {
  if (!Array.isArray(a.diagnostics) || !a.diagnostics.length) return null;
  const value = (v) => v === undefined || v === null ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v);
  return section("Diagnostics",
    table(["Check", "Input", "Case", "Where", "Numerical", "Analytical", "Hint"], a.diagnostics.map((d) => el("tr", {},
      el("td", { title: value(d.check) }, d.check ? checkTitle(d.check) : "—"), el("td", {}, value(d.input)), el("td", {}, value(d.case)),
      el("td", {}, value(d.index)), el("td", { class: "num" }, value(d.numerical)),
      el("td", { class: "num" }, value(d.analytical)), el("td", { class: "message" }, d.hint || "")))),
    el("details", { class: "chart-table" }, el("summary", {}, "Every diagnostic in full (JSON)"),
      el("pre", { class: "code output", id: "attempt-diagnostics" }, prettyJson(a.diagnostics))));
}

function output(a) {
  const output = a.output || {};
  if (!output.stdout && !output.stderr) return null;
  return section("Output",
    el("h3", {}, "stdout"), el("pre", { class: "code output" }, output.stdout || "(empty)"),
    el("h3", {}, "stderr"), el("pre", { class: "code output" }, output.stderr || "(empty)"));
}

function timings(a) {
  const timings = a.timings || {};
  const phases = [["Submitted", timeEl(timings.created_at || a.created_at)],
    ["Grading started", timeEl(timings.started_at || a.started_at)], ["Graded", timeEl(timings.graded_at || a.graded_at)],
    ["Waited in the queue", fmtMs(timings.queued_ms)], ["Grading took", fmtMs(timings.grading_ms)],
    a.code !== null && a.code !== undefined && a.tries !== undefined ? ["Worker claims", a.tries] : null];
  const report = timings.report || {};
  return section("Timings", dl(phases),
    Object.keys(report).length ? el("div", {}, el("h3", {}, "The judge's timings"), table(["Phase", "Time"], Object.entries(report).map(([k, v]) =>
      el("tr", {}, el("td", {}, el("code", {}, k)), el("td", { class: "num" }, typeof v === "number" ? fmtTiming(k, v) : prettyJson(v)))))) : null);
}

/** LMS passbacks and webhook deliveries of the attempt's grade. */
function delivery(a) {
  return section("Delivery",
    el("h3", {}, "LMS grade passback"),
    (a.passbacks || []).length ? table(["Status", "Tries", "Score sent", "Last HTTP status", "Last error", "Delivered"],
      a.passbacks.map((p) => el("tr", {}, el("td", {}, badge(p.status)), el("td", { class: "num" }, p.tries),
        el("td", { class: "num" }, fmtSentScore(p.sent_score)), el("td", { class: "num" }, p.last_status_code || "—"),
        el("td", { class: "message" }, p.last_error || ""), el("td", {}, timeEl(p.delivered_at))))) : empty("No LMS passback for this attempt."),
    el("h3", {}, "Webhooks"),
    (a.webhook_deliveries || []).length ? table(["Event", "Endpoint", "Status", "Tries", "Last HTTP status", "Last error", "Delivered"],
      a.webhook_deliveries.map((w) => el("tr", {}, el("td", {}, w.event_type), el("td", { class: "num" }, w.endpoint_id),
        el("td", {}, badge(w.status)), el("td", { class: "num" }, w.tries), el("td", { class: "num" }, w.last_status_code || "—"),
        el("td", { class: "message" }, w.last_error || ""), el("td", {}, timeEl(w.delivered_at))))) : empty("No webhook deliveries."));
}

function overrides(a) {
  const overrides = a.overrides || [];
  return section("Overrides",
    overrides.length ? table(["When", "Who", "Old score", "New score", "Reason"], overrides.map((o) =>
      el("tr", { dataset: { override: o.id } }, el("td", {}, timeEl(o.created_at)), el("td", {}, o.actor),
        el("td", { class: "num" }, fmtScore(o.old_score)), el("td", { class: "num" }, fmtScore(o.new_score)),
        el("td", { class: "message" }, o.reason))), { class: "overrides", caption: "Score overrides of this attempt", captionHidden: true })
      : empty("The score has not been overridden."),
    overrideForm(a));
}

function events(a) {
  const events = a.events || [];
  if (!events.length) return null;
  return section("Events", table(["When", "Type", "Grade"], events.map((ev) => el("tr", {},
    el("td", {}, timeEl(ev.created_at)), el("td", {}, el("code", {}, ev.type)),
    el("td", {}, ev.data ? "score " + fmtScore(ev.data.score) + (ev.data.status ? " · " + ev.data.status : "") : "—")))));
}

function feedbackItem(f) {
  if (typeof f === "string") return el("li", { class: "advice" }, el("p", {}, f));
  if (!f || typeof f !== "object") return el("li", {}, el("p", {}, prettyJson(f)));
  const what = f.choice !== undefined ? f.choice : f.answer !== undefined ? prettyJson(f.answer) : null;
  return el("li", { class: f.correct === true ? "right" : f.correct === false ? "wrong" : "" },
    el("div", { class: "feedback-head" },
      what !== null ? el("code", {}, what) : null,
      f.selected !== undefined ? el("span", { class: "muted" }, f.selected ? "picked" : "not picked") : null,
      f.correct !== undefined ? el("span", { class: "badge " + (f.correct ? "b-passed" : "b-failed") },
        f.correct ? "a correct choice" : "an incorrect choice") : null),
    el("p", {}, f.feedback || f.message || ""));
}

function fmtMs(ms) {
  return ms === null || ms === undefined ? null : fmtDuration(Number(ms) / 1000);
}

function fmtSentScore(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "object") {
    if (v.scoreGiven !== undefined) return fmtNumber(v.scoreGiven) + (v.scoreMaximum !== undefined ? " / " + fmtNumber(v.scoreMaximum) : "");
    return prettyJson(v);
  }
  return fmtScore(v);
}

function fmtTiming(name, value) {
  if (/_ms$|ms$/.test(name)) return fmtNumber(value, 1) + " ms";
  return fmtDuration(value);
}

function overrideForm(a) {
  const error = el("div", { class: "form-error", "aria-live": "assertive" });
  const score = el("input", { id: "override-score", name: "score", type: "number", min: 0, max: 100, step: "0.01",
    required: true, inputmode: "decimal", value: a.score === null || a.score === undefined ? "" : String(Math.round(a.score * 10000) / 100) });
  const reason = el("textarea", { id: "override-reason", name: "reason", rows: 2, required: true, maxlength: 2000,
    placeholder: "Why the score changes: kept in the audit log, for staff" });
  const comment = el("textarea", { id: "override-comment", name: "learner_comment", rows: 2, maxlength: 2000,
    placeholder: "Optional: sent to the learner's LMS with the score" });
  const submit = el("button", { type: "submit" }, "Override score");
  const form = el("form", { class: "override", id: "override-form", novalidate: true },
    el("h3", {}, "Override the score"),
    el("p", { class: "muted" }, "The grader's score is kept; the new score counts. The change is logged with your key's name, the time and the reason."),
    el("div", { class: "field-row" },
      el("div", { class: "field" }, el("label", { for: "override-score" }, "New score (%)"), score),
      el("div", { class: "field grow" }, el("label", { for: "override-reason" }, "Reason (required, staff only)"), reason),
      el("div", { class: "field grow" }, el("label", { for: "override-comment" }, "Comment for the learner (optional)"), comment),
      el("div", { class: "field buttons" }, submit)),
    error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.replaceChildren();
    const value = Number(score.value) / 100; // typed as a percentage, sent as a fraction
    if (score.value.trim() === "" || !Number.isFinite(value) || value < 0 || value > 1) {
      error.append(el("p", { class: "problem" }, "The score is a percentage from 0 to 100."));
      score.focus();
      return;
    }
    if (!reason.value.trim()) {
      error.append(el("p", { class: "problem" }, "Give a reason: it goes into the audit log."));
      reason.focus();
      return;
    }
    submit.disabled = true;
    try {
      const body = { score: value, reason: reason.value.trim() };
      if (comment.value.trim()) body.learner_comment = comment.value.trim();
      await post(API + "/attempts/" + enc(a.id) + "/override", body);
      toast("Score set to " + fmtScore(value));
      render();
    } catch (e) {
      error.append(problemBox(e, { optional: e.problem && e.problem.detail ? null : "Overrides are not available on this server yet." }));
      submit.disabled = false;
    }
  });
  return form;
}
