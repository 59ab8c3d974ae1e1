/* #/overrides : the audit log of score overrides. */

import { API, get, listOf, problemBox, query } from "../api.js";
import { el, empty, enc, link } from "../dom.js";
import { fmtScore, shortId, timeEl } from "../format.js";

export async function viewOverrides(root, ctx) {
  document.title = "Audit log · gradquiz dashboard";
  const exercise = ctx.params.get("exercise") || "";
  root.append(el("div", { class: "page-head" }, el("h1", {}, "Audit log: score overrides")));
  const body = el("tbody", {});
  const more = el("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  const box = el("section", { class: "card" });
  root.append(box);
  let next = null, first = true;
  async function page() {
    try {
      const params = Object.assign({ exercise }, next || {});
      const { items, next: after } = listOf(await get(API + "/overrides" + query(params)));
      if (first) {
        first = false;
        if (!items.length) { box.append(empty("No score has been overridden" + (exercise ? " on " + exercise : "") + ".")); return; }
        box.append(el("div", { class: "table-wrap" }, el("table", { id: "overrides-table" }, el("thead", {}, el("tr", {},
          ["When", "Who", "Exercise", "Learner", "Attempt", "Old score", "New score", "Reason"].map((h) => el("th", { scope: "col" }, h)))), body)),
        el("div", { class: "more" }, more));
      }
      body.append(...items.map((o) => el("tr", {}, el("td", {}, timeEl(o.created_at)), el("td", {}, o.actor),
        el("td", {}, o.exercise ? link("#/exercises/" + enc(o.exercise), o.exercise) : "—"),
        el("td", { class: "learner" }, o.learner || "—"),
        el("td", {}, link("#/attempts/" + enc(o.attempt), el("code", {}, shortId(o.attempt)))),
        el("td", { class: "num" }, fmtScore(o.old_score)), el("td", { class: "num" }, fmtScore(o.new_score)),
        el("td", { class: "message" }, o.reason))));
      next = after;
      more.hidden = !after;
    } catch (e) {
      box.append(problemBox(e, { optional: "The audit log is not available on this server yet." }));
    }
  }
  more.addEventListener("click", page);
  await page();
}
