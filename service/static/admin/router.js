/* Which screen shows: the sign-in form, or the view the address (#/...) names. A view is
 * `async (root, ctx, ...captures)`: ctx.params is the address's query, and ctx.alive() turns
 * false once the reader has gone elsewhere, so that stale async work stops. */

import { API, api, apiKey, forgetKey, keepKey, keepLaunch, problemBox, whenUnauthorized, whoami } from "./api.js";
import { $, el, link } from "./dom.js";

let navigation = 0; // bumped on every route change: stale async work checks it and stops
let routes = []; // [pattern, view, nav section], the first match wins

function showSignin(message) {
  $("topbar").hidden = true;
  $("view").replaceChildren();
  $("signin").hidden = false;
  const error = $("signin-error");
  error.replaceChildren();
  if (message) error.append(el("div", { class: "problem", role: "alert" }, message));
  document.title = "Sign in · gradquiz dashboard";
  $("api-key").focus();
}

function signOut(message) {
  forgetKey();
  navigation++;
  showSignin(message);
}

async function signIn(event) {
  event.preventDefault();
  const input = $("api-key");
  const key = input.value.trim();
  const error = $("signin-error");
  error.replaceChildren();
  if (!key) {
    error.append(el("div", { class: "problem", role: "alert" }, "Paste an API key first."));
    input.focus();
    return;
  }
  const button = $("signin-submit");
  button.disabled = true;
  try {
    // The first staff endpoint this server has decides: 401 wrong key, 403 not staff.
    let accepted = false, lastError = null;
    for (const probe of ["/stats", "/attempts?limit=1", "/exercises"]) {
      try {
        await api("GET", API + probe, undefined, { key });
        accepted = true;
        break;
      } catch (e) {
        lastError = e;
        if (e.status !== 404) break;
      }
    }
    if (!accepted) {
      error.append(problemBox(lastError));
      input.select();
      return;
    }
    keepKey(key);
    input.value = "";
    $("signin").hidden = true;
    render();
  } finally {
    button.disabled = false;
  }
}

export async function render() {
  const token = ++navigation;
  if (!apiKey()) { showSignin(); return; }
  $("signin").hidden = true;
  $("topbar").hidden = false;
  const key = apiKey();
  $("whoami").textContent = key.startsWith("gqs.") ? "" : "key " + key.slice(0, 10) + "…";
  let me = null;
  try { me = await whoami(); } catch (e) { /* shown by the view's own request */ }
  if (token !== navigation) return;
  if (me) {
    const course = me.course;
    $("whoami").textContent = course ? me.actor + " · " + (course.label || course.title) : $("whoami").textContent;
    document.body.classList.toggle("not-admin", me.kind !== "admin");
    const courses = document.querySelector('nav a[data-nav="courses"]');
    if (courses) {
      courses.textContent = course ? "Course" : "Courses";
      courses.setAttribute("href", course ? "#/courses/" + encodeURIComponent(course.id) : "#/courses");
    }
    const authoring = document.querySelector('nav a[data-nav="authoring"]');
    if (authoring) authoring.setAttribute("href", course ? "#/courses/" + encodeURIComponent(course.id) + "/authoring" : "#/authoring");
  }
  const hash = location.hash.replace(/^#/, "");
  const [path, qs] = (hash || "/").split("?");
  const match = routes.map(([re, view, nav]) => [re.exec(path), view, nav]).find(([m]) => m);
  const view = $("view");
  const root = el("div", { class: "page" });
  view.replaceChildren(root);
  view.setAttribute("aria-busy", "true");
  document.title = "gradquiz dashboard";
  for (const a of document.querySelectorAll("nav a")) {
    if (match && a.dataset.nav === match[2]) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const ctx = { params: new URLSearchParams(qs || ""), alive: () => token === navigation };
  try {
    if (!match) {
      root.append(el("h1", {}, "Not found"), el("p", {}, "There is no such page. "), link("#/", "Back to the overview"));
    } else {
      const args = match[0].slice(1).map((s) => { try { return decodeURIComponent(s); } catch (e) { return s; } });
      await match[1](root, ctx, ...args);
    }
  } catch (e) {
    if (ctx.alive()) root.append(problemBox(e));
  } finally {
    if (ctx.alive()) view.setAttribute("aria-busy", "false");
  }
}

/** What an instructor's LTI launch handed the page (a JSON block, read once): the course staff session
 * becomes the page's key, and the course's page opens. */
function adoptLaunch() {
  const block = document.getElementById("gradquiz-launch");
  if (!block) return;
  let launch = null;
  try { launch = JSON.parse(block.textContent); } catch (e) { launch = null; } finally { block.remove(); }
  if (!launch || !launch.staff_session || !launch.course) return;
  keepKey(launch.staff_session);
  const keep = { course: launch.course, exercise: launch.exercise, staff_name: launch.staff_name,
    try: { token: launch.token, exercise: launch.exercise, learner: launch.learner, role: launch.role, api: launch.api,
      expires_at: launch.expires_at, session_expires_at: launch.session_expires_at, refresh_url: launch.refresh_url } };
  keepLaunch(keep);
  if (!location.hash || location.hash === "#/" || location.hash === "#") {
    history.replaceState(null, "", "#/courses/" + encodeURIComponent(launch.course.id));
  }
}

/** Sign-in, sign-out and the address drive the page from now on, with these routes. */
export function start(views) {
  routes = views;
  adoptLaunch();
  whenUnauthorized(signOut);
  $("signin-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => { signOut(); location.hash = "#/"; });
  window.addEventListener("hashchange", () => { window.scrollTo(0, 0); render(); });
  render();
}
