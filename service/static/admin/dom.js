/* Building the page: elements made with createElement, text set with textContent, never an
 * HTML string (learner ids, code, messages and feedback are untrusted text). The element builders
 * are the learner pages' own (frontend/src/dom.js, served built at /vendor/shared/); the dashboard's
 * pieces built with them follow. */

import { el } from "/vendor/shared/dom.js";

export { el, svg } from "/vendor/shared/dom.js";

export const $ = (id) => document.getElementById(id);
export const enc = encodeURIComponent;
export const link = (href, ...children) => el("a", { href }, ...children);

export function section(title, ...children) {
  return el("section", { class: "card" }, el("h2", {}, title), ...children);
}

export function loading(text) {
  return el("p", { class: "loading" }, text || "Loading…");
}

export function empty(text) {
  return el("p", { class: "empty" }, text);
}

export function table(headers, rows, opts) {
  opts = opts || {};
  return el("div", { class: "table-wrap" },
    el("table", { class: opts.class || "" },
      opts.caption ? el("caption", { class: opts.captionHidden ? "visually-hidden" : "" }, opts.caption) : null,
      el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { scope: "col", class: numeric(rows, i) ? "num" : null }, h)))),
      el("tbody", {}, rows)));
}

/** A column whose first row's cell is a number is aligned right, header included. */
function numeric(rows, i) {
  const first = Array.isArray(rows) ? rows[0] : null;
  return Boolean(first && first.children && first.children[i] && first.children[i].classList.contains("num"));
}

export function dl(pairs) {
  return el("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) =>
    el("div", {}, el("dt", {}, k), el("dd", {}, v === null || v === undefined || v === "" ? "—" : v))));
}

export function toast(message, kind) {
  const box = $("toast");
  box.textContent = message;
  box.className = "toast " + (kind === "error" ? "toast-error" : "toast-ok");
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
}

export function card(label, value) {
  return el("div", { class: "stat" }, el("span", { class: "stat-value" }, value === null || value === undefined ? "—" : value),
    el("span", { class: "stat-label" }, label));
}
