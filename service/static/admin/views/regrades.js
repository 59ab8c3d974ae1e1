/* #/regrades and #/regrades/{id} : regrades, the dry run's diff, applying it. */

import { API, get, listOf, post, problemBox } from "../api.js";
import { dl, el, empty, enc, link, loading, section, table, toast } from "../dom.js";
import { badge, fmtNumber, fmtScore, shortId, timeEl } from "../format.js";
import { REGRADE_STATUSES } from "../vocabulary.js";
import { loadTerms, statusTitle } from "../terms.js";

const POLL_MS = 1000;

/** A regrade button's click: first asks, in the page (a dialog would block the tab), then starts the
 * dry run. The question sits under the page's heading, the button stays off while it is asked. */
export function startRegrade(target, button) {
  const head = button.closest(".page-head") || button.parentElement;
  const old = document.getElementById("regrade-ask");
  if (old) old.remove();
  const scope = target.attempt ? "this attempt" : target.course ? "the course's attempts of " + target.exercise : "every attempt of " + target.exercise;
  const yes = el("button", { type: "button", id: "regrade-start" }, "Start the dry run");
  const no = el("button", { type: "button", class: "secondary", id: "regrade-cancel" }, "Cancel");
  const ask = el("section", { class: "card confirm", id: "regrade-ask", role: "group", "aria-labelledby": "regrade-ask-text" },
    el("p", { id: "regrade-ask-text" }, "Grade " + scope + " again with the current version? It runs as a dry run on the grading workers; no score changes until you apply it."),
    yes, " ", no);
  button.disabled = true;
  no.addEventListener("click", () => {
    ask.remove();
    button.disabled = false;
    button.focus();
  });
  yes.addEventListener("click", () => {
    yes.disabled = true;
    no.disabled = true;
    runRegrade(target, button).finally(() => ask.remove());
  });
  head.after(ask);
  yes.focus();
}

async function runRegrade(target, button) {
  try {
    const { data } = await post(API + "/regrades", target);
    toast("Dry run started: nothing changes until you apply it.");
    location.hash = "#/regrades/" + enc(data.id);
  } catch (e) {
    toast((e.problem.title || "Error") + ": " + (e.status === 404 && !e.problem.detail
      ? "regrades are not available on this server yet" : e.problem.detail || e.status), "error");
    button.disabled = false;
    button.focus(); // the question that held the focus is gone
  }
}

export async function viewRegrades(root) {
  document.title = "Regrades · gradquiz dashboard";
  root.append(el("div", { class: "page-head" }, el("h1", {}, "Regrades")),
    el("p", { class: "muted" }, "Start a regrade from an exercise or an attempt. It first runs as a dry run on the grading workers and shows the score changes it would make; nothing changes until you apply it."));
  const box = section("Recent regrades", loading());
  root.append(box);
  try {
    const { items } = listOf(await get(API + "/regrades"));
    box.replaceChildren(el("h2", {}, "Recent regrades"), items.length ? table(["Started", "Exercise", "Scope", "Status",
      "Graded", "Up", "Down", "Unchanged"], items.map((r) => el("tr", {},
      el("td", {}, link("#/regrades/" + enc(r.id), timeEl(r.created_at))),
      el("td", {}, link("#/exercises/" + enc(r.exercise), r.exercise)),
      el("td", {}, r.attempt ? link("#/attempts/" + enc(r.attempt), "attempt " + shortId(r.attempt))
        : r.course ? link("#/courses/" + enc(r.course), "a course's attempts") : "every attempt"),
      el("td", {}, badge(r.status, REGRADE_STATUSES)),
      el("td", { class: "num" }, fmtNumber(r.graded) + " / " + fmtNumber(r.total)),
      el("td", { class: "num" }, fmtNumber(r.summary && r.summary.up)),
      el("td", { class: "num" }, fmtNumber(r.summary && r.summary.down)),
      el("td", { class: "num" }, fmtNumber(r.summary && r.summary.unchanged))))) : empty("No regrades yet."));
  } catch (e) {
    box.replaceChildren(el("h2", {}, "Recent regrades"), problemBox(e, { optional: "Regrades are not available on this server yet." }));
  }
}

export async function viewRegrade(root, ctx, id) {
  document.title = "Regrade " + shortId(id) + " · gradquiz dashboard";
  const head = el("div", { class: "page-head" },
    el("div", {}, el("p", { class: "crumbs" }, link("#/regrades", "Regrades")), el("h1", {}, "Regrade ", el("code", { title: id }, shortId(id)))));
  const body = el("div", { id: "regrade" }, loading("Starting the dry run…"));
  root.append(head, body);
  let confirming = false;

  async function tick() {
    if (!ctx.alive()) return;
    let r;
    try {
      [r] = await Promise.all([get(API + "/regrades/" + enc(id)).then((x) => x.data), loadTerms()]);
    } catch (e) {
      if (!ctx.alive()) return;
      body.replaceChildren(problemBox(e, { optional: "Regrades are not available on this server yet." }));
      return;
    }
    if (!ctx.alive()) return;
    if (!confirming) body.replaceChildren(...regradeView(r, () => { confirming = true; }, () => { confirming = false; tick(); }));
    if (r.status === "dry_run" || r.status === "applying") setTimeout(tick, POLL_MS);
  }
  await tick();
}

function regradeView(r, onConfirm, onDone) {
  const parts = [regradeFacts(r)];
  if (r.status === "dry_run") {
    parts.push(el("section", { class: "card" }, el("p", {}, "The grading workers are grading the attempts again (dry run)…"),
      el("progress", { max: Math.max(1, r.total || 0), value: r.graded || 0, "aria-label": "attempts graded" })));
    return parts;
  }
  parts.push(regradeDiff(r));
  if (Array.isArray(r.error_items) && r.error_items.length) {
    parts.push(section("Not regraded", table(["Attempt", "Why", "Message"], r.error_items.map((e) => el("tr", {},
      el("td", {}, link("#/attempts/" + enc(e.attempt), el("code", {}, shortId(e.attempt)))),
      el("td", {}, badge(e.status, null, e.status ? statusTitle(e.status) : null)), el("td", { class: "message" }, e.message || ""))))));
  }
  const changed = ((r.summary || {}).up || 0) + ((r.summary || {}).down || 0);
  if (r.status === "ready" && changed > 0) parts.push(applyBox(r, onConfirm, onDone)); // nothing to apply: no button
  return parts;
}

function regradeFacts(r) {
  return el("section", { class: "card" }, dl([
    ["Exercise", link("#/exercises/" + enc(r.exercise), r.exercise)],
    ["Scope", r.attempt ? link("#/attempts/" + enc(r.attempt), "attempt " + shortId(r.attempt)) : "every attempt of the exercise"],
    ["Status", el("span", { id: "regrade-status" }, badge(r.status, REGRADE_STATUSES))],
    ["Graded", fmtNumber(r.graded) + " of " + fmtNumber(r.total)],
    ["Not regraded (errors)", Array.isArray(r.errors) ? r.errors.length : fmtNumber(r.errors || 0)],
    ["Requested by", r.requested_by],
    r.exercise_version !== undefined ? ["Graded against", "version " + r.exercise_version] : null,
    r.created_at ? ["Started", timeEl(r.created_at)] : null,
    r.applied_at ? ["Applied", el("span", {}, timeEl(r.applied_at), r.applied_by ? " by " + r.applied_by : "")] : null,
    r.kept_overrides ? ["Overridden scores kept", fmtNumber(r.kept_overrides)] : null,
  ]));
}

/** How many scores go up, down or stay, and the changed attempts (old → new). */
function regradeDiff(r) {
  const summary = r.summary || {};
  const up = summary.up || 0, down = summary.down || 0, unchanged = summary.unchanged || 0;
  const diff = el("section", { class: "card", id: "regrade-diff" }, el("h2", {}, r.status === "applied" ? "Applied changes" : "Dry run: what would change"),
    el("div", { class: "cards" },
      el("div", { class: "stat up" }, el("span", { class: "stat-value", id: "regrade-up" }, up), el("span", { class: "stat-label" }, "go up")),
      el("div", { class: "stat down" }, el("span", { class: "stat-value", id: "regrade-down" }, down), el("span", { class: "stat-label" }, "go down")),
      el("div", { class: "stat" }, el("span", { class: "stat-value", id: "regrade-unchanged" }, unchanged), el("span", { class: "stat-label" }, "unchanged"))));
  const changes = r.changes || [];
  if (changes.length) {
    diff.append(table(["Attempt", "Learner", "Client", "Old score", "New score", "Change", ""], changes.map((c) => {
      const delta = (Number(c.new_score) || 0) - (Number(c.old_score) || 0);
      return el("tr", { class: delta > 0 ? "up" : "down", dataset: { attempt: c.attempt } },
        el("td", {}, link("#/attempts/" + enc(c.attempt), el("code", {}, shortId(c.attempt)))),
        el("td", { class: "learner" }, c.learner),
        el("td", {}, c.client || ""),
        el("td", { class: "num" }, fmtScore(c.old_score)),
        el("td", { class: "num" }, fmtScore(c.new_score)),
        el("td", { class: "num delta" }, (delta > 0 ? "▲ +" : "▼ ") + Math.round(delta * 1000) / 10 + " points"),
        el("td", {}, c.overridden ? el("span", { class: "badge b-overridden", title: "The override stays; the grader's score changes" }, "overridden") : null,
          c.applied ? el("span", { class: "badge b-applied" }, "applied") : null));
    }), { class: "changes", caption: "Attempts whose score changes", captionHidden: true }));
    if (changes.length < up + down) diff.append(el("p", { class: "muted" }, "The first " + changes.length + " changes are listed."));
  } else {
    diff.append(empty("No score would change."));
  }
  return diff;
}

/** Apply…, then once more: "Yes, change the scores". */
function applyBox(r, onConfirm, onDone) {
  const summary = r.summary || {};
  const changed = (summary.up || 0) + (summary.down || 0);
  const box = el("div", { class: "apply" });
  const apply = el("button", { type: "button", id: "regrade-apply" }, "Apply " + changed + (changed === 1 ? " change" : " changes") + "…");
  apply.addEventListener("click", () => {
    onConfirm();
    const yes = el("button", { type: "button", class: "danger", id: "regrade-confirm" }, "Yes, change the scores");
    const no = el("button", { type: "button", class: "secondary" }, "Cancel");
    box.replaceChildren(el("p", {}, "Store the new grades? Learners' scores change, and webhooks and LMS passback are sent for each changed attempt. Overridden scores stay as they are set."), yes, " ", no);
    yes.focus();
    no.addEventListener("click", onDone);
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      try {
        await post(API + "/regrades/" + enc(r.id) + "/apply");
        toast("Regrade applied.");
      } catch (e) {
        toast((e.problem.title || "Error") + ": " + (e.problem.detail || e.status), "error");
      }
      onDone();
    });
  });
  box.append(apply);
  return el("section", { class: "card" }, box);
}
