/* Building the page: elements made with createElement, text set with textContent, never an
 * HTML string (learner ids, code, messages and feedback are untrusted text). */

const SVG_NS = "http://www.w3.org/2000/svg";

export function el(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

export function svg(tag, props, ...children) {
  return build(document.createElementNS(SVG_NS, tag), props, children);
}

function build(node, props, children) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.setAttribute("class", value);
    else if (name === "text") node.textContent = String(value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

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
