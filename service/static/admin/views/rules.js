/* #/links : the LTI links (assignments placed in LMS courses).
 * #/links/{id}, #/links/{id}/exercises/{slug} and #/exercises/{slug}/clients/{client}/rules : the
 * assessment rules of one exercise of a link (each exercise of a link of several has its own) or of
 * a client's own use of an exercise, layer by layer (the exercise's defaults, staff's, the LMS's dates; docs/dashboard.md), the form
 * that sets staff's, and the learners' extensions. */

import { API, api, get, listOf, problemBox, query } from "../api.js";
import { dl, el, empty, enc, link, loading, section, table, toast } from "../dom.js";
import { fmtNumber, timeEl } from "../format.js";

/** The rules staff can set, in the form's order, as the server names and explains them
 * (GET /api/v1/rules: name, kind, label, help, none, choices): read once, before a page shows. */
let RULES = [];
let RULE = {};
let loadingRules = null;

function loadRules() {
  loadingRules = loadingRules || get("/api/v1/rules").then(({ data }) => {
    RULES = data.rules;
    RULE = Object.fromEntries(RULES.map((rule) => [rule.name, rule]));
  }, (e) => {
    loadingRules = null; // asked again on the next page
    throw e;
  });
  return loadingRules;
}

const zone = () => { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || "local time"; } catch (e) { return "local time"; } };

/** A rule's value as text (null: what "none" means for it). */
function ruleText(key, value) {
  if (value === undefined) return "";
  const rule = RULE[key] || { choices: [] };
  if (value === null) return rule.none || "none";
  if (rule.kind === "datetime") return timeEl(value);
  if (rule.kind === "fractions") return value.map((v) => fmtNumber(v)).join(", ");
  const choice = rule.choices.find((c) => c.value === value);
  if (choice) return choice.label;
  return typeof value === "number" ? fmtNumber(value) : String(value);
}

/** What a layer sets, as one line ("due: …, max attempts: 3"). */
function summary(rules) {
  const keys = Object.keys(rules || {});
  if (!keys.length) return "nothing";
  return keys.map((key) => el("span", { class: "rule-set" }, ((RULE[key] || {}).label || key) + ": ", ruleText(key, rules[key])));
}

// ---- #/links ---------------------------------------------------------------------------------

export async function viewLinks(root, ctx) {
  document.title = "LTI links · gradquiz dashboard";
  const exercise = ctx.params.get("exercise") || "";
  const course = ctx.params.get("course") || "";  // a course's page links here with ?course=
  const input = el("input", { id: "links-exercise", name: "exercise", type: "text", value: exercise, spellcheck: "false",
    autocapitalize: "off", placeholder: "every exercise" });
  const form = el("form", { class: "filters", id: "links-filter", role: "search" },
    el("div", { class: "field" }, el("label", { for: "links-exercise" }, "Exercise (slug)"), input),
    el("div", { class: "field buttons" }, el("button", { type: "submit" }, "Show")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = "#/links" + query({ exercise: input.value.trim(), course });
  });
  const box = section("Links", loading());
  root.append(el("div", { class: "page-head" }, el("div", {}, el("h1", {}, "LTI links"),
    el("p", { class: "subtitle" }, "Assignments placed in LMS courses, most recently launched first. Open one for its assessment rules."))),
  el("section", { class: "card" }, form), box);

  const rows = [];
  const tbody = el("tbody");
  const more = el("button", { type: "button", class: "secondary", id: "links-more", hidden: true }, "Load more");
  let next = { page: 1 };
  async function load() {
    more.disabled = true;
    try {
      const page = listOf(await get(API + "/links" + query({ exercise, course, page: next.page, page_size: 50 })));
      if (!ctx.alive()) return;
      for (const l of page.items) rows.push(linkRow(l));
      tbody.replaceChildren(...rows);
      next = page.next;
      more.hidden = !next;
      if (!rows.length) box.replaceChildren(el("h2", {}, "Links"), empty(exercise
        ? "No LTI link to this exercise yet: a link appears at its first launch." : "No LTI link yet: a link appears at its first launch."));
    } catch (e) {
      box.replaceChildren(el("h2", {}, "Links"), problemBox(e));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", load);
  box.replaceChildren(el("h2", {}, "Links"), el("div", { class: "table-wrap" }, el("table", { id: "links-table" },
    el("caption", { class: "visually-hidden" }, "LTI resource links"),
    el("thead", {}, el("tr", {}, ["Link", "Exercise", "Platform", "Course", "Resource link", "LMS opens", "LMS due",
      "Last launch"].map((h) => el("th", { scope: "col" }, h)))), tbody)), el("div", { class: "more" }, more));
  await load();
}

/** The dashboard's page of the rules of exercise `slug` of link `l` (a link of one exercise: the link's page). */
function linkRulesHref(l, slug) {
  const several = (l.exercises || []).length > 1;
  return "#/links/" + enc(l.id) + (several ? "/exercises/" + enc(slug || l.exercises[0]) : "");
}

function linkRow(l) {
  const exercises = l.exercises && l.exercises.length ? l.exercises : [l.exercise];
  return el("tr", { dataset: { link: l.id } },
    el("td", {}, link(linkRulesHref(l), "Rules of link " + l.id)),
    el("td", {}, exercises.map((slug, i) => [i ? ", " : "", link("#/exercises/" + enc(slug), slug)])),
    el("td", {}, l.platform),
    el("td", { class: "learner" }, l.context_id || "—"),
    el("td", { class: "learner" }, el("code", {}, l.resource_link_id)),
    el("td", {}, timeEl(l.lms_available_from)),
    el("td", {}, timeEl(l.lms_due_at)),
    el("td", {}, timeEl(l.updated_at)));
}

// ---- the rules of one exercise of a link, or of a client's own use ------------------------------

/** `slug`: one exercise of the link (a link of several has rules per exercise); none: its one exercise. */
export async function viewLinkRules(root, ctx, id, slug) {
  document.title = "Rules of link " + id + (slug ? " · " + slug : "") + " · gradquiz dashboard";
  await rulesPage(root, ctx, { base: API + "/links/" + enc(id) + (slug ? "/exercises/" + enc(slug) : ""),
    title: "LTI link " + id + (slug ? " · " + slug : ""), linkId: id });
}

export async function viewClientRules(root, ctx, slug, clientId) {
  document.title = "Rules of " + slug + " for client " + clientId + " · gradquiz dashboard";
  await rulesPage(root, ctx, { base: API + "/exercises/" + enc(slug) + "/clients/" + enc(clientId),
    title: "Client " + clientId + "’s own use", slug });
}

async function rulesPage(root, ctx, where) {
  const head = el("div", { class: "page-head" }, el("div", {},
    el("p", { class: "crumbs" }, link("#/links", "LTI links"), where.slug ? [" / ", link("#/exercises/" + enc(where.slug), where.slug)] : null),
    el("h1", {}, "Assessment rules · ", where.title)));
  const body = el("div", { id: "rules" }, loading());
  root.append(head, body);
  let data;
  try {
    [{ data }] = await Promise.all([get(where.base + "/rules"), loadRules()]);
  } catch (e) {
    body.replaceChildren(problemBox(e));
    return;
  }
  if (!ctx.alive()) return;
  const show = (described) => body.replaceChildren(...rulesParts(where, described, show).filter(Boolean));
  show(data);
  if (where.linkId) describeLink(where.linkId, data.exercise, head, ctx);
}

/** The link's platform and course, from the links list (best effort: the rules show without it). */
async function describeLink(id, exercise, head, ctx) {
  try {
    const { items } = listOf(await get(API + "/links" + query({ exercise, page_size: 100 })));
    const found = items.find((l) => String(l.id) === String(id));
    if (found && ctx.alive()) {
      head.firstChild.append(el("p", { class: "subtitle", id: "link-subtitle" }, found.platform,
        found.context_id ? " · course " + found.context_id : "", " · resource link ", el("code", {}, found.resource_link_id)));
    }
  } catch (e) { /* the page stands without it */ }
}

/** A link of several exercises: each one's rules page, this one's marked. */
function linkExercises(where, d) {
  const slugs = d.link_exercises || [];
  if (slugs.length < 2) return null;
  return el("nav", { class: "card", id: "link-exercises", "aria-label": "The link's exercises" },
    el("p", { class: "muted" }, "This link is an assignment of " + slugs.length +
      " exercises: each has rules of its own (the LMS's dates are the link's, for all of them)."),
    el("ul", { class: "link-list" }, slugs.map((slug) => el("li", {}, slug === d.exercise
      ? el("a", { href: linkRulesHref({ id: where.linkId, exercises: slugs }, slug), "aria-current": "page" }, slug)
      : link(linkRulesHref({ id: where.linkId, exercises: slugs }, slug), slug)))));
}

function rulesParts(where, d, show) {
  return [
    linkExercises(where, d),
    el("section", { class: "card" }, dl([
      ["Exercise", link("#/exercises/" + enc(d.exercise), d.exercise)],
      d.link !== null && d.link !== undefined ? ["LTI link", String(d.link)] : ["Attempts", "through the REST API (no LTI link)"],
      ["Client", String(d.client)],
      ["Staff's rules set by", d.updated_by ? el("span", {}, d.updated_by, " · ", timeEl(d.updated_at)) : "nobody yet"],
    ])),
    layers(d),
    staffForm(where, d, show),
    extensions(where, d, show),
  ];
}

/** Each rule: what each layer sets and what is in force. */
function layers(d) {
  const staff = d.assignment || {};
  // In force first: on a phone the rows stack, and it is what is read first.
  const cell = (cls, label, value) => el("td", { class: cls, dataset: { label } }, value || null);
  const rows = RULES.map(({ name: key, label }) => el("tr", { dataset: { rule: key } },
    el("th", { scope: "row" }, label),
    cell("in-force", "In force", ruleText(key, (d.in_force || {})[key])),
    cell("layer", "Exercise default", ruleText(key, (d.defaults || {})[key])),
    cell("layer", "Staff", ruleText(key, staff[key])),
    cell("layer", "LMS", ruleText(key, (d.lms || {})[key]))));
  return section("Rules in force",
    el("p", { class: "muted" }, "Later layers win, rule by rule: the exercise's defaults (exercise.toml), then staff's, then the dates the LMS sent at its latest launch; a learner's extension wins over all three."),
    el("div", { class: "table-wrap" }, el("table", { id: "rules-layers", class: "layers stacked" },
      el("caption", { class: "visually-hidden" }, "Each rule in force, and what each layer sets"),
      el("thead", {}, el("tr", {}, ["Rule", "In force", "Exercise default", "Staff", "LMS"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows))));
}

/** An input for a rule, its label and the place for its error. */
function ruleField(prefix, { name: key, label, kind, choices }, value) {
  const id = prefix + key;
  let control;
  if (choices.length) {
    control = el("select", { id, name: key },
      el("option", { value: "" }, "not set"),
      choices.map((c) => el("option", { value: String(c.value), selected: value !== undefined && String(value) === String(c.value) }, c.label)));
  } else {
    const text = value === undefined || value === null ? ""
      : kind === "datetime" ? localInput(value) : kind === "fractions" ? value.join(", ") : String(value);
    control = el("input", { id, name: key, type: kind === "datetime" ? "datetime-local" : "text", value: text,
      inputmode: kind === "count" ? "numeric" : kind === "fraction" ? "decimal" : null, spellcheck: "false", autocomplete: "off",
      placeholder: kind === "fractions" ? "1, 0.8, 0.5" : null, "aria-describedby": "err-" + id });
  }
  if (choices.length) control.setAttribute("aria-describedby", "err-" + id);
  return el("div", { class: "field", dataset: { field: key } },
    el("label", { for: id }, label, kind === "datetime" ? " (" + zone() + ")" : ""), control,
    el("p", { class: "field-error", id: "err-" + id }));
}

/** A datetime-local value (the reader's time) from an ISO date, and back. */
function localInput(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
}

/** A field's value as the API takes it (`kind`: the rule's); undefined when empty (the rule is not
 * set). What does not read as a number or a date goes as typed, so that the API says what is wrong
 * with it. */
function fieldValue(kind, raw) {
  const text = raw.trim();
  if (text === "") return undefined;
  const number = (s) => (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s) ? Number(s) : s);
  if (kind === "count" || kind === "fraction") return number(text);
  if (kind === "fractions") return text.split(/[\s,;]+/).filter(Boolean).map(number);
  if (kind === "datetime") {
    const d = new Date(text);
    return Number.isNaN(d.getTime()) ? text : d.toISOString();
  }
  if (text === "true" || text === "false") return text === "true";
  return text;
}

/** Show the API's problem: each error next to its field ("json.max_attempts", "json.rules.due_at"),
 * the others (and the summary) in `box`. */
function showProblem(form, box, error, prefix, fieldOf) {
  const problem = (error && error.problem) || {};
  const unplaced = [];
  let placed = 0;
  for (const e of Array.isArray(problem.errors) ? problem.errors : []) {
    const key = fieldOf(String(e.field || ""));
    const target = key && form.querySelector("#err-" + CSS.escape(prefix + key));
    if (target) {
      target.append(el("span", {}, e.message || "Not valid."), " ");
      const control = form.querySelector("#" + CSS.escape(prefix + key));
      if (control) control.setAttribute("aria-invalid", "true");
      placed++;
    } else {
      unplaced.push(e);
    }
  }
  if (placed && !unplaced.length) {
    box.append(el("div", { class: "problem", role: "alert" }, el("strong", {}, (problem.title || "Not saved") +
      (error.status ? " (" + error.status + ")" : "")), el("p", {}, "Nothing was saved: see the " +
      (placed === 1 ? "field" : placed + " fields") + " marked above.")));
    const first = form.querySelector("[aria-invalid=true]");
    if (first) first.focus();
  } else {
    box.append(problemBox(error));
  }
}

function clearErrors(form, box) {
  box.replaceChildren();
  for (const p of form.querySelectorAll(".field-error")) p.replaceChildren();
  for (const c of form.querySelectorAll("[aria-invalid]")) c.removeAttribute("aria-invalid");
}

const jsonField = (field) => field.replace(/^json\./, "").replace(/^rules\./, "").split(".")[0];

/** Staff's rules for the assignment: empty field = not set (the exercise's default applies). */
function staffForm(where, d, show) {
  const staff = d.assignment || {};
  const box = el("div", { class: "form-error", "aria-live": "assertive" });
  const save = el("button", { type: "submit", id: "rules-save" }, "Save staff's rules");
  const clear = el("button", { type: "button", class: "secondary", id: "rules-clear", disabled: !d.assignment }, "Remove staff's rules");
  const form = el("form", { class: "rules-form", id: "rules-form", novalidate: true },
    el("p", { class: "muted" }, "An empty field is not set here: the exercise's default applies. Dates are in your time zone, ",
      zone(), ". Attempts already made keep the penalties and the scoring they were made under."),
    el("div", { class: "filters" }, RULES.map((rule) => ruleField("rule-", rule, staff[rule.name]))),
    box,
    el("div", { class: "actions" }, save, clear));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form, box);
    const body = {};
    for (const { name, kind } of RULES) {
      const value = fieldValue(kind, form.querySelector("#rule-" + name).value);
      if (value !== undefined) body[name] = value;
    }
    save.disabled = true;
    try {
      const { data } = await api("PUT", where.base + "/rules", body);
      toast("Staff's rules saved: they apply from the next attempt.");
      show(data);
    } catch (e) {
      showProblem(form, box, e, "rule-", jsonField);
      save.disabled = false;
    }
  });
  clear.addEventListener("click", async () => {
    clear.disabled = true;
    clearErrors(form, box);
    try {
      await api("DELETE", where.base + "/rules");
      toast("Staff's rules removed: the exercise's defaults apply.");
      show((await get(where.base + "/rules")).data);
    } catch (e) {
      box.append(problemBox(e));
      clear.disabled = false;
    }
  });
  return el("section", { class: "card", id: "staff-rules" }, el("h2", {}, "Staff's rules"), form);
}

/** The learners' extensions, and the form that gives (or replaces) one. */
function extensions(where, d, show) {
  const list = d.extensions || [];
  const rows = list.map((x) => {
    const remove = el("button", { type: "button", class: "secondary", "aria-label": "Remove the extension of " + x.learner }, "Remove");
    remove.addEventListener("click", async () => {
      remove.disabled = true;
      try {
        await api("DELETE", where.base + "/extensions/" + enc(x.learner));
        toast("Extension removed.");
        show((await get(where.base + "/rules")).data);
      } catch (e) {
        toast((e.problem.title || "Error") + ": " + (e.problem.detail || e.status), "error");
        remove.disabled = false;
      }
    });
    const force = x.in_force || {};
    return el("tr", { dataset: { learner: x.learner } },
      el("td", { class: "learner", dataset: { label: "Learner" } }, x.learner),
      el("td", { class: "sets", dataset: { label: "Sets" } }, summary(x.rules)),
      el("td", { dataset: { label: "Due for them" } }, force.due_at ? timeEl(force.due_at) : "none"),
      el("td", { class: "num", dataset: { label: "Attempts for them" } }, ruleText("max_attempts", force.max_attempts)),
      el("td", { class: "message", dataset: { label: "Note" } }, x.note || null),
      el("td", { dataset: { label: "Set by" } }, x.updated_by, " · ", timeEl(x.updated_at)),
      el("td", {}, remove));
  });
  return section("Extensions",
    rows.length ? table(["Learner", "Sets", "Due for them", "Attempts for them", "Note (staff only)", "Set by", ""], rows,
      { class: "extensions stacked", caption: "Extensions for single learners", captionHidden: true })
      : empty("No learner has an extension."),
    extensionForm(where, d, show));
}

function extensionForm(where, d, show) {
  const max = (d.in_force || {}).max_attempts;
  const box = el("div", { class: "form-error", "aria-live": "assertive" });
  const field = (key, label, control) => el("div", { class: "field", dataset: { field: key } },
    el("label", { for: "ext-" + key }, label), control, el("p", { class: "field-error", id: "err-ext-" + key }));
  const learner = el("input", { id: "ext-learner", name: "learner", type: "text", required: true, spellcheck: "false",
    autocapitalize: "off", autocomplete: "off", "aria-describedby": "err-ext-learner" });
  const due = el("input", { id: "ext-due_at", name: "due_at", type: "datetime-local", "aria-describedby": "err-ext-due_at" });
  const extra = el("input", { id: "ext-max_attempts", name: "extra_attempts", type: "text", inputmode: "numeric",
    autocomplete: "off", "aria-describedby": "err-ext-max_attempts" });
  const note = el("textarea", { id: "ext-note", name: "note", rows: 2, maxlength: 2000, "aria-describedby": "err-ext-note",
    placeholder: "Why (staff only: never shown to the learner)" });
  const submit = el("button", { type: "submit", id: "ext-save" }, "Give the extension");
  const form = el("form", { class: "rules-form", id: "extension-form", novalidate: true },
    el("h3", {}, "Give a learner an extension"),
    el("p", { class: "muted" }, "It wins over every other layer, for that learner only; giving one again replaces theirs."),
    el("div", { class: "filters" },
      field("learner", "Learner id", learner),
      field("due_at", "New due date (" + zone() + ")", due),
      field("max_attempts", max === null || max === undefined ? "Extra attempts (attempts are unlimited now)"
        : "Extra attempts (over the " + max + " in force)", extra),
      field("note", "Note (optional, staff only)", note)),
    box,
    el("div", { class: "actions" }, submit));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form, box);
    const local = (key, message) => {
      form.querySelector("#err-ext-" + key).append(message);
      form.querySelector("#ext-" + key).setAttribute("aria-invalid", "true");
    };
    const who = learner.value.trim();
    const rules = {};
    const dueAt = fieldValue("datetime", due.value);
    if (dueAt !== undefined) rules.due_at = dueAt;
    const more = fieldValue("count", extra.value);
    if (more !== undefined) {
      if (!Number.isInteger(more) || more < 1) local("max_attempts", "A whole number of attempts, 1 or more.");
      else if (max === null || max === undefined) local("max_attempts", "Attempts are unlimited here: there is nothing to add.");
      else rules.max_attempts = max + more;
    }
    if (!who) local("learner", "Name the learner (their id, as in their attempts).");
    if (!who || form.querySelector("[aria-invalid=true]")) {
      form.querySelector("[aria-invalid=true]").focus();
      return;
    }
    if (!Object.keys(rules).length) {
      local("due_at", "Give a new due date, extra attempts, or both.");
      due.focus();
      return;
    }
    const body = { rules };
    if (note.value.trim()) body.note = note.value.trim();
    submit.disabled = true;
    try {
      const { data } = await api("PUT", where.base + "/extensions/" + enc(who), body);
      toast("Extension given to " + who + ".");
      show(data);
    } catch (e) {
      // The learner is in the address: an id it cannot take is a 404 there.
      if (e.status === 404 && !(e.problem && e.problem.errors)) local("learner", "Not a learner id this server takes.");
      else showProblem(form, box, e, "ext-", jsonField);
      submit.disabled = false;
    }
  });
  return form;
}

// ---- on the exercise page ------------------------------------------------------------------------

/** Where the exercise's rules are set: at its LTI links (alone or among several), and per client's own use. */
export function exerciseRules(slug) {
  const box = section("Assessment rules", loading());
  (async () => {
    let items = [];
    let failed = null;
    try {
      items = listOf(await get(API + "/links" + query({ exercise: slug, page_size: 20 }))).items;
    } catch (e) {
      failed = e;
    }
    const clientId = el("input", { id: "rules-client", name: "client", type: "text", inputmode: "numeric", autocomplete: "off" });
    const open = el("form", { class: "field-row", id: "client-rules-form" },
      el("div", { class: "field" }, el("label", { for: "rules-client" }, "API client id"), clientId),
      el("div", { class: "field buttons" }, el("button", { type: "submit", class: "secondary" }, "Open its rules")));
    open.addEventListener("submit", (event) => {
      event.preventDefault();
      const id = clientId.value.trim();
      if (/^\d+$/.test(id)) location.hash = "#/exercises/" + enc(slug) + "/clients/" + id + "/rules";
      else clientId.focus();
    });
    box.replaceChildren(el("h2", {}, "Assessment rules"),
      el("p", { class: "muted" }, "Rules are set per exercise: at an LTI link (a placement in an LMS course; each exercise of a link of several has its own), or for a client's own use of the exercise through the REST API."),
      failed ? problemBox(failed) : items.length
        ? el("ul", { class: "link-list", id: "exercise-links" }, items.map((l) => el("li", {},
          link(linkRulesHref(l, slug), "Link " + l.id), " · ", l.platform,
          (l.exercises || []).length > 1 ? " · one of " + l.exercises.length + " exercises" : "", l.context_id ? " · course " + l.context_id : "",
          l.lms_due_at ? [" · LMS due ", timeEl(l.lms_due_at)] : "")))
        : empty("No LTI link to this exercise yet."),
      el("p", {}, link("#/links" + query({ exercise: slug }), "Every LTI link to this exercise")),
      open);
  })();
  return box;
}
