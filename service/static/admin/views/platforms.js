/* #/platforms : the LMSs registered for LTI (admins only): registration links for an LMS admin to
 * paste into their LMS (LTI Dynamic Registration), and the platforms, pending ones to approve. */

import { API, api, get, post, problemBox } from "../api.js";
import { el, empty, loading, section, table, toast } from "../dom.js";
import { badge, timeEl } from "../format.js";

const LTI = API + "/lti";
const STATUSES = ["active", "pending", "disabled"];

export async function viewPlatforms(root, ctx) {
  document.title = "LTI platforms · gradquiz dashboard";
  const linksBox = section("Registration links", loading());
  const platformsBox = section("Platforms", loading());
  root.append(el("div", { class: "page-head" }, el("div", {}, el("h1", {}, "LTI platforms"),
    el("p", { class: "subtitle" }, "The LMSs that launch gradquiz. An LMS admin registers one by pasting a registration " +
      "link into the LMS (LTI Advantage, dynamic registration); make one here for each LMS."))),
  linksBox, platformsBox);

  async function refresh() {
    const [links, platforms] = await Promise.allSettled([get(LTI + "/registration-links"), get(LTI + "/platforms")]);
    if (!ctx.alive()) return;
    linksBox.replaceChildren(el("h2", {}, "Registration links"), linkForm(refresh),
      links.status === "fulfilled" ? linksTable(links.value.data, platforms.value && platforms.value.data) : problemBox(links.reason));
    platformsBox.replaceChildren(el("h2", {}, "Platforms"),
      platforms.status === "fulfilled" ? platformsTable(platforms.value.data, refresh) : problemBox(platforms.reason));
  }
  await refresh();
}

/** The form that makes a link, and where the new link shows (its code is shown this once). */
function linkForm(refresh) {
  const label = el("input", { id: "link-label", name: "label", type: "text", required: true, maxlength: "100",
    placeholder: "Moodle of the Faculty of Science" });
  const hours = el("input", { id: "link-hours", name: "valid_hours", type: "number", min: "1", max: "720", value: "72" });
  const made = el("div", { id: "new-link", "aria-live": "polite" });
  const form = el("form", { class: "filters", id: "link-form" },
    el("div", { class: "field" }, el("label", { for: "link-label" }, "For (which LMS, whose admin)"), label),
    el("div", { class: "field" }, el("label", { for: "link-hours" }, "Works for (hours)"), hours),
    el("div", { class: "field buttons" }, el("button", { type: "submit" }, "Make a registration link")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!label.value.trim()) { label.focus(); return; }
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const { data } = await post(LTI + "/registration-links", { label: label.value.trim(), valid_hours: Number(hours.value) });
      await refresh();
      document.getElementById("new-link").replaceChildren(newLink(data));
      document.getElementById("new-link-url").select();
    } catch (e) {
      made.replaceChildren(problemBox(e));
      button.disabled = false;
    }
  });
  return el("div", {}, form, made);
}

function newLink(link) {
  const url = el("input", { id: "new-link-url", type: "text", readonly: true, value: link.url, spellcheck: "false" });
  const copy = el("button", { type: "button", class: "secondary" }, "Copy");
  copy.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(link.url); toast("Copied the registration link."); } catch (e) {
      url.select(); toast("Select the link and copy it (Ctrl+C).", "error");
    }
  });
  return el("div", { class: "card new-link" },
    el("label", { for: "new-link-url" }, "Registration link for “" + link.label + "”"),
    el("div", { class: "actions" }, url, copy),
    el("p", { class: "muted" }, "Send it to the LMS's admin, to paste into the LMS's tool registration. It works once, " +
      "until ", timeEl(link.expires_at), ". It is shown this once: make another if it is lost."));
}

function linksTable(links, platforms) {
  if (!links.length) return empty("No registration links yet.");
  const names = new Map((platforms || []).map((p) => [p.id, p.name]));
  const now = Date.now();
  return table(["For", "Made", "Works until", "Used"], links.map((l) => el("tr", {},
    el("td", {}, l.label),
    el("td", {}, timeEl(l.created_at)),
    el("td", {}, l.used_at ? "—" : new Date(l.expires_at).getTime() < now ? "expired" : timeEl(l.expires_at)),
    el("td", {}, l.used_at ? [timeEl(l.used_at), " by ", names.get(l.platform) || "platform " + l.platform] : "not yet"))),
  { caption: "Registration links, newest first", captionHidden: true });
}

function platformsTable(platforms, refresh) {
  if (!platforms.length) return empty("No platform is registered yet.");
  return table(["Name", "Issuer", "Client id", "Deployments", "Status", "Registered", ""], platforms.map((p) => el("tr", {},
    el("td", {}, p.name),
    el("td", { class: "learner" }, p.issuer),
    el("td", { class: "learner" }, el("code", {}, p.client_id)),
    el("td", { class: "learner" }, p.deployment_ids.length ? p.deployment_ids.join(", ") : "none yet"),
    el("td", {}, badge(p.status, STATUSES)),
    el("td", {}, timeEl(p.created_at)),
    el("td", {}, el("div", { class: "actions" }, actions(p, refresh))))),
  { caption: "Registered platforms", captionHidden: true });
}

function actions(platform, refresh) {
  const buttons = [];
  if (platform.status === "pending") {
    buttons.push(button("Approve", "Approve " + platform.name, "approve-" + platform.id, "", async () => {
      await post(LTI + "/platforms/" + platform.id + "/approve");
      toast(platform.name + " is approved: its launches work now.");
    }, refresh));
  }
  if (platform.status !== "disabled") {
    buttons.push(button("Disable", "Disable " + platform.name, "disable-" + platform.id, "danger", async () => {
      if (!confirm("Disable " + platform.name + "? Its launches, learner tokens and grade passback stop; attempts stay.")) {
        return false;
      }
      await api("DELETE", LTI + "/platforms/" + platform.id);
      toast(platform.name + " is disabled.");
    }, refresh));
  }
  return buttons;
}

function button(text, label, id, cls, act, refresh) {
  const b = el("button", { type: "button", id, class: cls || null, "aria-label": label }, text);
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      if (await act() !== false) await refresh();
    } catch (e) {
      toast((e.problem && e.problem.title || "Error") + ": " + (e.problem && e.problem.detail || e.status), "error");
    } finally {
      b.disabled = false;
    }
  });
  return b;
}
