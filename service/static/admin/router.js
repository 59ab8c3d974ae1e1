/* Which screen shows: the sign-in form, or the view the address (#/...) names. A view is
 * `async (root, ctx, ...captures)`: ctx.params is the address's query, and ctx.alive() turns
 * false once the reader has gone elsewhere, so that stale async work stops. */

import { API, api, apiKey, KEY_STORE, problemBox, whenUnauthorized } from "./api.js";
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
  try { sessionStorage.removeItem(KEY_STORE); } catch (e) { /* private mode */ }
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
    sessionStorage.setItem(KEY_STORE, key);
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
  $("whoami").textContent = "key " + key.slice(0, 10) + "…";
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

/** Sign-in, sign-out and the address drive the page from now on, with these routes. */
export function start(views) {
  routes = views;
  whenUnauthorized(signOut);
  $("signin-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => { signOut(); location.hash = "#/"; });
  window.addEventListener("hashchange", () => { window.scrollTo(0, 0); render(); });
  render();
}
