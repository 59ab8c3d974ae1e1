/* The admin API: fetch with the key as Authorization: Bearer, JSON and problem details, lists in
 * either of the API's page shapes, CSV downloads. The key stays in the tab's sessionStorage. */

import { el, toast } from "./dom.js";

export const API = "/api/v1/admin";
export const KEY_STORE = "gradquiz.dashboard.key";
// What an instructor's LTI launch handed the page: the course, the exercise launched, a token to try it.
export const LAUNCH_STORE = "gradquiz.dashboard.launch";

/** The signed-in caller (GET /admin/whoami): kind, actor, and the one course they are limited to (or null). */
export const caller = { key: null, info: null };
// A browser that keeps no storage for a site in a frame still keeps the key for this page's life.
let memoryKey = null;

/** Kept between views: the exercise slugs, for the attempt filter's suggestions. */
export const cache = { exerciseSlugs: null };

let onUnauthorized = () => {};

/** What to do when the key is no longer accepted (a 401): the page signs out. */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || "HTTP " + status);
    this.status = status;
    this.problem = problem || {};
  }
}

export function apiKey() {
  try { return sessionStorage.getItem(KEY_STORE) || memoryKey; } catch (e) { return memoryKey; }
}

export function keepKey(key) {
  memoryKey = key;
  try { sessionStorage.setItem(KEY_STORE, key); } catch (e) { /* storage blocked: memory only */ }
}

export function forgetKey() {
  memoryKey = memoryLaunch = null;
  caller.key = caller.info = null;
  try { sessionStorage.removeItem(KEY_STORE); sessionStorage.removeItem(LAUNCH_STORE); } catch (e) { /* private mode */ }
}

let memoryLaunch = null;

/** Keep the launch's handoff for this tab. */
export function keepLaunch(info) {
  memoryLaunch = info;
  try { sessionStorage.setItem(LAUNCH_STORE, JSON.stringify(info)); } catch (e) { /* storage blocked: memory only */ }
}

/** The launch's handoff kept for this tab (or null). */
export function launchInfo() {
  try { return JSON.parse(sessionStorage.getItem(LAUNCH_STORE) || "null") || memoryLaunch; } catch (e) { return memoryLaunch; }
}

/** Who the key is (cached per key): whoami's answer, or null where the server has no such endpoint. */
export async function whoami() {
  const key = apiKey();
  if (caller.key === key && caller.info) return caller.info;
  try {
    caller.info = (await get(API + "/whoami")).data;
  } catch (e) {
    if (e.status !== 404) throw e;
    caller.info = null;
  }
  caller.key = key;
  return caller.info;
}

export function authHeaders(key) {
  const k = key === undefined ? apiKey() : key;
  return k ? { Authorization: "Bearer " + k } : {};
}

async function readProblem(res) {
  const type = res.headers.get("Content-Type") || "";
  if (type.includes("json")) {
    try { return await res.json(); } catch (e) { /* fall through */ }
  }
  return { title: res.statusText || "Error", status: res.status };
}

/** fetch + JSON + problem details. opts.key: sign-in probe with that key (no sign-out on 401). */
export async function api(method, path, body, opts) {
  opts = opts || {};
  const headers = Object.assign({ Accept: "application/json" }, authHeaders(opts.key));
  const init = { method, headers, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { title: "The server did not answer", detail: String(e.message || e) });
  }
  if (!res.ok) {
    const problem = await readProblem(res);
    if (res.status === 401 && opts.key === undefined) onUnauthorized(
      (String(apiKey() || "").startsWith("gqs.") ? "Your course session has ended: " : "Your key is no longer accepted: ") +
      (problem.detail || problem.title || "401") + " Sign in again.");
    throw new ApiError(res.status, problem);
  }
  let data = null;
  if (res.status !== 204 && (res.headers.get("Content-Type") || "").includes("json")) data = await res.json();
  return { data, headers: res.headers, status: res.status };
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body);

export function query(params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => qs.append(k, x));
    else if (v !== undefined && v !== null && v !== "") qs.append(k, v);
  }
  const s = qs.toString();
  return s ? "?" + s : "";
}

/** A list answer in any of the API's shapes: a bare array (X-Pagination header), or {items, next_cursor}. */
export function listOf(result) {
  const data = result.data;
  if (Array.isArray(data)) {
    let next = null;
    try {
      const p = JSON.parse(result.headers.get("X-Pagination") || "null");
      if (p && p.next_page) next = { page: p.next_page };
    } catch (e) { /* no pagination */ }
    return { items: data, next };
  }
  if (data && Array.isArray(data.items)) {
    return { items: data.items, next: data.next_cursor ? { cursor: data.next_cursor } : null };
  }
  return { items: [], next: null };
}

export function problemBox(error, context) {
  const p = (error && error.problem) || {};
  const status = error && error.status;
  const missing = status === 404 && context && context.optional;
  const box = el("div", { class: "problem", role: "alert" },
    el("strong", {}, missing ? context.optional : (p.title || "Error") + (status ? " (" + status + ")" : "")),
    !missing && (p.detail || (error && !error.problem ? String(error.message || error) : null))
      ? el("p", {}, p.detail || String(error.message || error)) : null);
  if (!missing && Array.isArray(p.errors) && p.errors.length) {
    box.append(el("ul", {}, p.errors.map((e) => el("li", {}, el("code", {}, e.field || "(body)"), ": ", e.message || ""))));
  }
  return box;
}

/** Download an API file (CSV) with the key in the header, as the browser cannot put one on a link. */
async function download(path, fallbackName, button) {
  const label = button.textContent;
  button.disabled = true;
  button.textContent = "Preparing…";
  try {
    const res = await fetch(path, { headers: authHeaders(), cache: "no-store", credentials: "omit" });
    if (!res.ok) {
      const problem = await readProblem(res);
      toast((problem.title || "Error") + ": " + (problem.detail || res.status), "error");
      return;
    }
    const disposition = res.headers.get("Content-Disposition") || "";
    const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
    const name = match ? decodeURIComponent(match[1]) : fallbackName;
    const url = URL.createObjectURL(await res.blob());
    const a = el("a", { href: url, download: name, class: "visually-hidden" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30000);
    toast("Downloaded " + name);
  } catch (e) {
    toast("The download failed: " + (e.message || e), "error");
  } finally {
    button.disabled = false;
    button.textContent = label;
  }
}

export function downloadButton(label, path, fallbackName) {
  const button = el("button", { type: "button", class: "secondary", dataset: { export: fallbackName } }, label);
  button.addEventListener("click", () => download(path, fallbackName, button));
  return button;
}

export async function loadExerciseIndex() {
  // The admin list (unpublished ones too, with the published flag) when there is one.
  try {
    const { items } = listOf(await get(API + "/exercises" + query({ page_size: 100 })));
    return items;
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}
