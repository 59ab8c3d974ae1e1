/* #/authoring, #/courses/{id}/authoring, #/courses/{id}/authoring/{slug} and
 * #/courses/{id}/authoring/new/{kind} : a course's own exercises, written, proven, previewed and
 * published here (the course exercises API, /api/v1/courses/{id}/exercises).
 *
 * Each file of an exercise has its editor (the learner page's CodeMirror, bundled for the dashboard
 * as /vendor/authoring/editor.js and loaded when this view first opens). "Save draft" makes a version;
 * "Prove" saves and waits for that version's proof, whose problems are listed as buttons that open
 * the file at the line at fault; "Preview as a learner" opens the learner page on that version;
 * "Publish" makes it current. The history lists the versions, a diff between two, and publishes an
 * older proven one again (the way back). Every text from the server goes on the page as text. */

import { API, api, apiKey, caller, get, post, problemBox, whoami } from "../api.js";
import { el, empty, enc, link, loading, section, table, toast } from "../dom.js";
import { badge, timeEl } from "../format.js";

const STATUSES = ["draft", "published", "unpublished"];
const PROOF_STATUSES = ["queued", "running", "passed", "failed"];
// loader.slug_problem's rule, said before the server says it.
const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SLUG_RULES = "3 to 64 lowercase letters, digits and hyphens (e.g. cube-backward), not used by any other exercise on this server.";
const WRONG_FILE = /^wrong\/[a-z0-9_]+\.py$/;
const PROOF_POLL_MS = 1000;
const PROOF_WAIT_MS = 180000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const exercisesUrl = (courseId) => "/api/v1/courses/" + enc(courseId) + "/exercises";
const exerciseUrl = (courseId, slug) => exercisesUrl(courseId) + "/" + enc(slug);
const authoringHref = (courseId, slug) => "#/courses/" + enc(courseId) + "/authoring" + (slug ? "/" + enc(slug) : "");
const NOT_HERE = { optional: "Course exercises are not available on this server yet." };

function errorText(e) {
  const p = (e && e.problem) || {};
  return p.detail || p.title || String((e && e.message) || e);
}

/** Files in the order an author reads them: exercise.toml, reference, starter, then the wrong files. */
function fileOrder(paths) {
  const rank = (p) => ({ "exercise.toml": 0, "reference.py": 1, "starter.py": 2 }[p] ?? (p.startsWith("wrong/") ? 3 : 4));
  return [...paths].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

// ---- #/authoring : pick a course (a key of every course) ----------------------------------------

export async function viewAuthoringCourses(root, ctx) {
  document.title = "Authoring · gradquiz dashboard";
  const me = caller.info || await whoami().catch(() => null);
  if (me && me.course) {
    location.replace(authoringHref(me.course.id));
    return;
  }
  root.append(el("div", { class: "page-head" }, el("h1", {}, "Authoring")),
    el("p", { class: "muted" }, "Exercises belong to a course: its learners, its staff and its LMS links alone see them. Pick the course."));
  const box = section("Courses", loading());
  root.append(box);
  let courses;
  try {
    courses = (await get(API + "/courses")).data || [];
  } catch (e) {
    box.replaceChildren(el("h2", {}, "Courses"), problemBox(e));
    return;
  }
  if (!ctx.alive()) return;
  box.replaceChildren(el("h2", {}, "Courses"), courses.length
    ? el("ul", { class: "link-list" }, courses.map((c) => el("li", {}, link(authoringHref(c.id), c.title + (c.label ? " (" + c.label + ")" : "")))))
    : empty("No course yet: a course appears at the first launch from it in an LMS, or when a client makes one."));
}

// ---- #/courses/{id}/authoring : the course's exercises ------------------------------------------

function exerciseRow(courseId, x) {
  return el("tr", {},
    el("td", {}, link(authoringHref(courseId, x.slug), x.title || x.slug), el("div", { class: "muted" }, el("code", {}, x.slug))),
    el("td", {}, (x.kind || "").replace(/_/g, " ")),
    el("td", {}, badge(x.status, STATUSES)),
    el("td", { class: "num" }, x.current_version === null || x.current_version === undefined ? "—" : String(x.current_version)),
    el("td", { class: "num" }, String(x.latest_version ?? "—")),
    el("td", {}, badge(x.latest_proof_status, PROOF_STATUSES)),
    el("td", {}, x.updated_at ? timeEl(x.updated_at) : "—"));
}

async function templatesBox(courseId) {
  const box = section("New exercise");
  let templates;
  try {
    templates = (await get("/api/v1/exercise-templates")).data || [];
  } catch (e) {
    box.append(problemBox(e));
    return box;
  }
  box.append(el("p", { class: "muted" }, "Start from a template: a small exercise of that kind which passes the proof. You name it and change it before the first save."),
    el("div", { class: "actions", id: "new-exercise" }, templates.map((t) =>
      link("#/courses/" + enc(courseId) + "/authoring/new/" + enc(t.kind), el("span", {}, "New: " + t.name)))));
  return box;
}

// ---- the course's git repository (when the server has git sync: /api/v1/courses/{id}/git) ----------

const OUTCOMES = ["unchanged", "proving", "published", "proof_failed", "invalid", "removed"];
const SYNC_STATUSES = ["queued", "running", "done", "failed"];

function syncItem(sync) {
  const exercises = sync.exercises || [];
  return el("li", { class: "sync" },
    el("p", {}, badge(sync.status, SYNC_STATUSES), " ", sync.queued_at ? timeEl(sync.queued_at) : "", " · ", sync.requested_by || "",
      sync.commit ? el("span", {}, " · commit ", el("code", {}, String(sync.commit).slice(0, 12))) : ""),
    sync.error ? el("p", { class: "problem" }, sync.error) : null,
    exercises.length ? el("ul", { class: "sync-exercises" }, exercises.map((x) => el("li", {},
      el("code", {}, x.slug), " ", badge(x.outcome, OUTCOMES), x.version ? " version " + x.version : "",
      (x.problems || []).length ? el("ul", {}, x.problems.map((p) =>
        el("li", {}, (p.file || "") + (p.line ? ":" + p.line : "") + (p.field ? " · " + p.field : "") + ": " + (p.message || "")))) : null))) : null);
}

/** url/branch/path/token, Sync now, the last syncs with each exercise's outcome; null where the server
 * has no git sync (its list of syncs, there for every course, is not found). */
async function gitBox(courseId, ctx) {
  const base = "/api/v1/courses/" + enc(courseId) + "/git";
  let recent;
  try {
    recent = (await get(base + "/syncs")).data || [];
  } catch (e) {
    return null;
  }
  const box = section("Git repository");
  box.id = "git";
  let repo = null;
  try {
    repo = (await get(base)).data;
  } catch (e) {
    if (e.status !== 404) { box.append(problemBox(e)); return box; }
  }
  if (!ctx.alive()) return box;
  const field = (id, label, attrs, hint) => el("div", { class: "field" }, el("label", { for: id }, label),
    el("input", Object.assign({ id, name: id.replace("git-", ""), type: "text", spellcheck: "false", autocomplete: "off" }, attrs)),
    hint ? el("p", { class: "muted small", id: id + "-hint" }, hint) : null);
  const form = el("form", { class: "filters", id: "git-form" },
    field("git-url", "Repository URL (HTTPS)", { value: repo ? repo.url : "", required: true, type: "url" }),
    field("git-branch", "Branch", { value: repo ? repo.branch : "main" }),
    field("git-path", "Folder of the exercises", { value: repo ? repo.path : "", placeholder: "(the repository's root)" }),
    field("git-token", "Deploy token (private repository)", { type: "password", value: "", "aria-describedby": "git-token-hint",
      placeholder: repo && repo.has_token ? "(kept: leave empty)" : "" }),
    el("div", { class: "field buttons" }, el("button", { type: "submit", class: "secondary" }, repo ? "Save" : "Connect")));
  const shown = el("div", { "aria-live": "polite" });
  const syncs = el("div", {});
  const syncButton = el("button", { type: "button", id: "git-sync" }, "Sync now");

  async function loadSyncs() {
    try {
      const list = (await get(base + "/syncs")).data || [];
      syncs.replaceChildren(list.length ? el("ul", { class: "syncs" }, list.slice(0, 5).map(syncItem)) : empty("No sync yet."));
    } catch (e) {
      syncs.replaceChildren(e.status === 404 ? empty("No sync yet.") : problemBox(e));
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = (id) => form.querySelector("#" + id).value.trim();
    const body = { url: value("git-url"), branch: value("git-branch") || "main", path: value("git-path") };
    if (value("git-token")) body.token = value("git-token");
    try {
      const saved = (await api("PUT", base, body)).data;
      form.querySelector("#git-token").value = "";
      repo = saved;
      syncButton.hidden = false;
      shown.replaceChildren(el("div", { class: "notice", role: "status" },
        el("p", {}, "Saved. Push webhook: ", el("code", {}, saved.webhook_url)),
        saved.webhook_secret ? el("p", {}, el("strong", {}, "Its secret, shown this once: "), el("code", {}, saved.webhook_secret)) : null));
    } catch (e) {
      shown.replaceChildren(problemBox(e, e.status === 404 ? { optional: "Git sync is not available on this server." } : undefined));
    }
  });
  syncButton.hidden = !repo;
  syncButton.addEventListener("click", async () => {
    syncButton.disabled = true;
    try {
      await post(base + "/sync");
      toast("A sync is queued: its outcome shows below.");
      await loadSyncs();
    } catch (e) {
      toast(errorText(e), "error");
    } finally {
      syncButton.disabled = false;
    }
  });
  box.append(el("p", { class: "muted" }, "The course's exercises from a git repository: each folder an exercise, as in the built-in catalog. Sync now (or a push, through the webhook) proves each changed one and publishes it once proven; a removed folder unpublishes its exercise."),
    form, el("p", { class: "muted small", id: "git-token-hint" }, "The deploy token is stored sealed and never shown again."),
    shown, el("div", { class: "actions" }, syncButton), el("h3", {}, "Last syncs"), syncs);
  syncs.replaceChildren(recent.length ? el("ul", { class: "syncs" }, recent.slice(0, 5).map(syncItem))
    : empty(repo ? "No sync yet." : "No repository yet."));
  return box;
}

export async function viewAuthoring(root, ctx, courseId) {
  document.title = "Authoring · gradquiz dashboard";
  root.append(el("div", { class: "page-head" },
    el("div", {}, el("p", { class: "crumbs" }, link("#/courses/" + enc(courseId), "Course"), " / authoring"),
      el("h1", {}, "The course's exercises")),
  ));
  const listBox = section("Exercises", loading());
  root.append(listBox);
  root.append(await templatesBox(courseId));
  const git = el("div", {});
  root.append(git);
  gitBox(courseId, ctx).then((box) => { if (box && ctx.alive()) git.replaceWith(box); }).catch((e) => git.replaceWith(problemBox(e)));
  let items;
  try {
    items = (await get(exercisesUrl(courseId))).data || [];
  } catch (e) {
    listBox.replaceChildren(el("h2", {}, "Exercises"), problemBox(e, e.status === 404 && e.problem && /course/i.test(e.problem.detail || "") ? null : NOT_HERE));
    return;
  }
  if (!ctx.alive()) return;
  listBox.replaceChildren(el("h2", {}, "Exercises"),
    el("p", { class: "muted" }, "Visible to this course alone: its learners, its staff and its LMS links. A draft is seen by nobody until it is published."),
    items.length ? table(["Exercise", "Kind", "Status", "Current version", "Latest version", "Latest proof", "Changed"],
      items.map((x) => exerciseRow(courseId, x)), { caption: "The course's exercises", captionHidden: true, class: "stacked authoring-list" })
      : empty("No exercise of this course's own yet: start one from a template below."));
  for (const row of listBox.querySelectorAll("table.stacked tbody tr")) {
    [...row.children].forEach((td, i) => td.setAttribute("data-label", ["Exercise", "Kind", "Status", "Current version", "Latest version", "Latest proof", "Changed"][i]));
  }
}

// ---- the editor: one exercise's files ---------------------------------------------------------

/** The file list (a button per file, with its problem count), one editor per file (only the chosen
 * one shown), and adding or removing a wrong/*.py file. */
function fileEditors(cm, initialFiles, onChange) {
  const editors = new Map(); // path -> { view, host, button, item }
  const list = el("ul", { class: "file-list", "aria-label": "Files of the exercise" });
  const hosts = el("div", { class: "file-editors" });
  const heading = el("p", { class: "label", id: "file-heading" });
  let currentPath = null;
  let problemsByFile = new Map();

  function buttonText(path) {
    const n = (problemsByFile.get(path) || []).length;
    return [el("code", {}, path), n ? el("span", { class: "badge b-failed" }, n + (n === 1 ? " problem" : " problems")) : null];
  }

  function relabel(path) {
    const entry = editors.get(path);
    if (entry) entry.button.replaceChildren(...buttonText(path).filter(Boolean));
  }

  function show(path) {
    if (!editors.has(path)) return null;
    currentPath = path;
    for (const [p, entry] of editors) {
      entry.host.hidden = p !== path;
      if (p === path) entry.button.setAttribute("aria-current", "true"); else entry.button.removeAttribute("aria-current");
    }
    heading.replaceChildren("Editing ", el("code", {}, path));
    const view = editors.get(path).view;
    view.requestMeasure(); // it was measured hidden (display: none): its gutter and lines again, now shown
    return view;
  }

  function add(path, text) {
    const host = el("div", { class: "editor", dataset: { file: path } });
    hosts.append(host);
    const view = cm.createFileEditor(host, { path, doc: text, label: "File " + path, onChange });
    const button = el("button", { type: "button", class: "file-button secondary", dataset: { file: path } });
    button.addEventListener("click", () => { show(path); view.focus(); });
    let remove = null;
    if (path.startsWith("wrong/")) {
      remove = el("button", { type: "button", class: "secondary small", "aria-label": "Remove " + path }, "Remove");
      remove.addEventListener("click", () => {
        if (!confirm("Remove " + path + " from the exercise? (It stays in the versions already saved.)")) return;
        const entry = editors.get(path);
        entry.item.remove();
        entry.host.remove();
        editors.delete(path);
        if (currentPath === path) show(fileOrder(editors.keys())[0]);
        onChange();
      });
    }
    const item = el("li", {}, button, remove);
    editors.set(path, { view, host, button, item });
    relabel(path);
    // Keep the list in the authors' order.
    const order = fileOrder(editors.keys());
    for (const p of order) list.append(editors.get(p).item);
    return view;
  }

  for (const path of fileOrder(Object.keys(initialFiles))) add(path, initialFiles[path]);

  const newName = el("input", { id: "wrong-file-name", type: "text", placeholder: "forgot_grad_output", spellcheck: "false",
    autocomplete: "off", "aria-describedby": "wrong-file-hint", pattern: "[a-z0-9_]+" });
  const addForm = el("form", { class: "inline-form", id: "add-wrong-file" },
    el("label", { for: "wrong-file-name" }, "New wrong file: wrong/"), newName, el("span", {}, ".py"),
    el("button", { type: "submit", class: "secondary" }, "Add"));
  const addHint = el("p", { class: "muted small", id: "wrong-file-hint" },
    "A wrong file is a mistake a learner makes: its first lines declare the likely cause and the checks it fails (# expect: …, # fails: …), and the proof checks that it fails so.");
  addForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const path = "wrong/" + newName.value.trim().replace(/\.py$/, "") + ".py";
    if (!WRONG_FILE.test(path)) { toast("A wrong file's name is lowercase letters, digits and underscores.", "error"); newName.focus(); return; }
    if (editors.has(path)) { toast(path + " is there already.", "error"); return; }
    const reference = editors.get("reference.py");
    const text = "# expect: forgot_grad_output\n# fails: gradcheck, gradient\n" + (reference ? reference.view.state.doc.toString() : "");
    add(path, text);
    newName.value = "";
    show(path).focus();
    onChange();
  });

  show(fileOrder(editors.keys())[0]);
  return {
    element: el("div", { class: "files" },
      el("div", { class: "file-side" }, list, addForm, addHint),
      el("div", { class: "file-main" }, heading, el("p", { class: "muted small" }, cm.KEYBOARD_NOTE), hosts)),
    files() {
      const out = {};
      for (const [path, entry] of editors) out[path] = cm.getCode(entry.view);
      return out;
    },
    /** Replace every file (a version loaded into the editor). */
    load(files) {
      for (const path of [...editors.keys()]) {
        if (!(path in files)) { editors.get(path).item.remove(); editors.get(path).host.remove(); editors.delete(path); }
      }
      for (const [path, text] of Object.entries(files)) {
        if (editors.has(path)) cm.setCode(editors.get(path).view, text); else add(path, text);
      }
      show(fileOrder(editors.keys())[0]);
    },
    /** The proof's problems: counted on each file's button, marked on their lines. */
    mark(problems) {
      problemsByFile = new Map();
      for (const p of problems) {
        if (!problemsByFile.has(p.file)) problemsByFile.set(p.file, []);
        problemsByFile.get(p.file).push(p);
      }
      for (const [path, entry] of editors) {
        relabel(path);
        const text = cm.getCode(entry.view);
        cm.markProblemLines(entry.view, (problemsByFile.get(path) || []).map((p) => placeOf(p, text).line).filter(Boolean));
      }
    },
    /** Measure the shown editor again (after it is put on the page: built detached, it measured nothing). */
    refresh() {
      if (currentPath && editors.has(currentPath)) editors.get(currentPath).view.requestMeasure();
    },
    open(path, line) {
      const view = show(path);
      if (!view) return false;
      cm.goToLine(view, line || 1);
      return true;
    },
  };
}

// Checks about backward, and about forward (grading/spec.py CHECKS): a failing check the proof gives
// no line for is shown at the method it judges.
const BACKWARD_CHECKS = ["backward_arity", "gradcheck", "gradient", "boundary", "gradgradcheck", "grad_output_unchanged"];
const FORWARD_CHECKS = ["forward", "output_shape_dtype", "inputs_unchanged"];

/** Where a problem is: its own line, or for a failing check of a .py file without one, the line of
 * the method the check judges ({line, method}; line null when unknown). */
export function placeOf(problem, text) {
  if (problem.line) return { line: problem.line, method: null, check: null };
  const field = String(problem.field || "");
  // "check gradcheck"; or a reference that could not prepare the cases, whose message quotes its checks ("gradcheck: …").
  const named = new RegExp("\\b(" + [...BACKWARD_CHECKS, ...FORWARD_CHECKS].join("|") + "):");
  const check = (field.match(/check\s+([a-z_]+)/) || String(problem.message || "").match(named) || [])[1];
  if (!check || !String(problem.file || "").endsWith(".py") || typeof text !== "string") return { line: null, method: null, check: null };
  const method = BACKWARD_CHECKS.includes(check) ? "backward" : FORWARD_CHECKS.includes(check) ? "forward" : null;
  const index = method ? text.split("\n").findIndex((l) => new RegExp("^\\s*def\\s+" + method + "\\s*\\(").test(l)) : -1;
  return index < 0 ? { line: null, method: null, check } : { line: index + 1, method, check };
}

/** The proof's answer: passed, or each problem as a button to its file and line; the steps folded. */
function proofBlock(proof, editors) {
  if (!proof) return empty("Not proven yet: Prove saves the files and proves them.");
  const status = proof.status || (proof.passed ? "passed" : proof.passed === false ? "failed" : "queued");
  const out = [];
  if (status === "queued" || status === "running") {
    out.push(el("p", { class: "proof-pending" }, badge(status, PROOF_STATUSES), " The proof runs in the sandbox, like a learner's attempt: the reference on the exercise's checks, each wrong file, the starter."));
  } else if (status === "passed") {
    out.push(el("p", { class: "proof-passed" }, badge("passed", PROOF_STATUSES), " The exercise is sound: it can be published."));
  } else {
    const problems = proof.problems || [];
    out.push(el("p", { class: "proof-failed" }, badge("failed", PROOF_STATUSES),
      " " + problems.length + (problems.length === 1 ? " problem" : " problems") + ": fix them, then Prove again."));
    const texts = editors.files();
    out.push(el("ul", { class: "proof-problems" }, problems.map((p) => {
      const place = placeOf(p, texts[p.file]);
      // The field at fault, or the check a reference that could not be run names in its message.
      const field = place.check && !/check/.test(p.field || "") ? "check " + place.check : p.field;
      const where = p.file + (place.line ? (place.method ? ", " + place.method + " (line " + place.line + ")" : ", line " + place.line) : "") +
        (field ? " · " + field : "");
      const go = el("button", { type: "button", class: "link proof-problem", dataset: { file: p.file || "", line: place.line || "" } },
        el("span", { class: "where" }, where));
      go.addEventListener("click", () => { if (!editors.open(p.file, place.line)) toast(p.file + " is not among the files now.", "error"); });
      return el("li", {}, go, el("span", { class: "message" }, p.message || ""));
    })));
  }
  const steps = proof.steps || [];
  if (steps.length) {
    out.push(el("details", { class: "proof-steps" }, el("summary", {}, "What the proof ran (" + steps.length + (steps.length === 1 ? " step)" : " steps)")),
      el("ul", {}, steps.map((s) => el("li", {}, badge(s.passed ? "passed" : "failed", PROOF_STATUSES), " ", el("code", {}, s.subject), " ", s.summary || "")))));
  }
  return out;
}

/** A unified diff as lines, each styled by its first character (and the character kept, for who
 * cannot see the colours). */
function diffBlock(diff) {
  if (!diff.files || !diff.files.length) return empty("The two versions have the same files.");
  return diff.files.map((f) => el("div", { class: "diff-file" },
    el("h3", {}, el("code", {}, f.path), " ", badge(f.status, ["added", "removed", "changed"])),
    el("pre", { class: "code diff", tabindex: "0", "aria-label": "Diff of " + f.path },
      String(f.diff || "").split("\n").map((line) => {
        let cls = "diff-line";
        if (line.startsWith("+++") || line.startsWith("---")) cls += " diff-head";
        else if (line.startsWith("+")) cls += " diff-add";
        else if (line.startsWith("-")) cls += " diff-del";
        else if (line.startsWith("@@")) cls += " diff-hunk";
        return el("span", { class: cls }, line + "\n");
      }))));
}

export async function viewNewExercise(root, ctx, courseId, kind) {
  return viewExerciseEditor(root, ctx, courseId, null, kind);
}

export async function viewExerciseEditor(root, ctx, courseId, slug, kind) {
  document.title = (slug || "New exercise") + " · authoring · gradquiz dashboard";
  const crumbEnd = el("span", {}, slug ? "exercise" : "new");
  const crumbs = el("p", { class: "crumbs" }, link("#/courses/" + enc(courseId), "Course"), " / ",
    link(authoringHref(courseId), "authoring"), " / ", crumbEnd);
  const title = el("h1", {}, slug || "New exercise");
  const subtitle = el("p", { class: "subtitle", id: "exercise-state" });
  root.append(el("div", { class: "page-head" }, el("div", {}, crumbs, title, subtitle)));
  const body = el("div", {}, loading("Loading the editor…"));
  root.append(body);

  let cm, files, detail = null;
  try {
    cm = await import("/vendor/authoring/editor.js"); // CodeMirror: loaded by this view alone
    if (slug) {
      detail = (await get(exerciseUrl(courseId, slug))).data;
      const latest = (await get(exerciseUrl(courseId, slug) + "/versions/" + enc(detail.latest_version))).data;
      files = latest.files;
      detail.latest = latest;
    } else {
      const templates = (await get("/api/v1/exercise-templates")).data || [];
      const template = templates.find((t) => t.kind === kind);
      if (!template) { body.replaceChildren(el("div", { class: "problem", role: "alert" }, "There is no template of the kind " + kind + ".")); return; }
      files = template.files;
    }
  } catch (e) {
    body.replaceChildren(problemBox(e, NOT_HERE));
    return;
  }
  if (!ctx.alive()) return;

  const state = {
    slug,
    saved: slug ? JSON.stringify(files) : null, // the files of the latest saved version, to know unsaved changes
    version: detail ? detail.latest_version : null,
    status: detail ? detail.status : "draft",
    current: detail ? detail.current_version : null,
    proof: detail && detail.latest ? detail.latest.proof : null,
    busy: false,
  };
  const dirtyNote = el("span", { class: "muted", id: "unsaved", "aria-live": "polite" });
  const editors = fileEditors(cm, files, () => showState());
  const proofBox = el("div", { id: "proof", "aria-live": "polite" });
  const actionStatus = el("p", { class: "muted", id: "action-status", role: "status" });
  const formError = el("div", { id: "editor-error" });

  // The slug, for a new exercise (fixed once saved: a slug names the exercise everywhere).
  const slugInput = el("input", { id: "new-slug", name: "slug", type: "text", required: true, spellcheck: "false",
    autocomplete: "off", maxlength: 64, "aria-describedby": "slug-rules slug-error", value: "" });
  const slugError = el("p", { class: "field-error", id: "slug-error" });
  const slugBox = slug ? null : el("div", { class: "field slug-field" },
    el("label", { for: "new-slug" }, "Slug (the exercise's name in addresses)"), slugInput,
    el("p", { class: "muted small", id: "slug-rules" }, SLUG_RULES), slugError);

  const saveButton = el("button", { type: "button", id: "save-draft", class: "secondary" }, "Save draft");
  const proveButton = el("button", { type: "button", id: "prove" }, "Prove");
  const previewButton = el("button", { type: "button", id: "preview", class: "secondary" }, "Preview as a learner");
  const publishButton = el("button", { type: "button", id: "publish" }, "Publish");
  const unpublishButton = el("button", { type: "button", id: "unpublish", class: "secondary" }, "Unpublish");
  const buttons = [saveButton, proveButton, previewButton, publishButton, unpublishButton];
  const historyBox = section("Versions");
  historyBox.id = "history";

  function isDirty() {
    return state.saved === null || state.saved !== JSON.stringify(editors.files());
  }

  function showState() {
    dirtyNote.textContent = state.slug && isDirty() ? "Unsaved changes." : "";
    for (const b of buttons) b.disabled = state.busy;
    unpublishButton.hidden = state.status !== "published";
    publishButton.textContent = state.status === "published" && state.current === state.version ? "Published" : "Publish";
    if (!state.busy) publishButton.disabled = !state.slug || (state.status === "published" && state.current === state.version && !isDirty());
    if (!state.busy) previewButton.disabled = false;
    subtitle.replaceChildren(...(state.slug
      ? [badge(state.status, STATUSES), " latest version " + (state.version ?? "—"),
        state.current ? " · learners see version " + state.current + (state.status === "published" ? "" : " once published") : ""]
      : ["A new exercise from the template: name it, edit it, then Save draft or Prove."]));
  }

  async function busy(what, work) {
    state.busy = true;
    formError.replaceChildren();
    showState();
    actionStatus.textContent = what + "…";
    try {
      await work();
    } catch (e) {
      actionStatus.textContent = what + " failed.";
      formError.replaceChildren(problemBox(e));
    } finally {
      state.busy = false;
      showState();
    }
  }

  /** Save the files as a new draft version (POST for a new exercise, PUT after): the draft as answered. */
  async function save() {
    const body = { files: editors.files(), source: "dashboard" };
    let answer;
    if (!state.slug) {
      const wanted = slugInput.value.trim();
      const problem = !SLUG_PATTERN.test(wanted) || wanted.length < 3 || wanted.length > 64 ? "The slug is " + SLUG_RULES.charAt(0).toLowerCase() + SLUG_RULES.slice(1) : "";
      slugError.textContent = problem;
      slugInput.setAttribute("aria-invalid", problem ? "true" : "false");
      if (problem) { slugInput.focus(); throw new Error(problem); }
      try {
        answer = (await post(exercisesUrl(courseId), Object.assign({ slug: wanted }, body))).data.exercises[0];
      } catch (e) {
        if (e.status === 409) { slugError.textContent = errorText(e); slugInput.setAttribute("aria-invalid", "true"); slugInput.focus(); }
        throw e;
      }
      state.slug = answer.slug;
      // The address names the exercise now, without opening the page again.
      history.replaceState(null, "", authoringHref(courseId, state.slug));
      title.textContent = state.slug;
      crumbEnd.textContent = "exercise";
      document.title = state.slug + " · authoring · gradquiz dashboard";
      if (slugBox) slugBox.remove();
    } else {
      answer = (await api("PUT", exerciseUrl(courseId, state.slug), body)).data;
    }
    state.saved = JSON.stringify(body.files);
    state.version = answer.version;
    if (answer.status) state.status = answer.status;
    state.proof = answer.proof;
    showProof();
    loadHistory();
    return answer;
  }

  function showProof() {
    proofBox.replaceChildren(...[proofBlock(state.proof, editors)].flat());
    const problems = state.proof && state.proof.status === "failed" ? (state.proof.problems || []) : [];
    editors.mark(problems);
  }

  /** Poll the version until its proof has passed or failed. */
  async function waitForProof(version) {
    const until = Date.now() + PROOF_WAIT_MS;
    while (state.proof && (state.proof.status === "queued" || state.proof.status === "running") && Date.now() < until) {
      await sleep(PROOF_POLL_MS);
      if (!ctx.alive()) return;
      const v = (await get(exerciseUrl(courseId, state.slug) + "/versions/" + enc(version))).data;
      if (state.version !== version) return; // a newer save meanwhile
      state.proof = v.proof;
      showProof();
    }
  }

  saveButton.addEventListener("click", () => busy("Saving", async () => {
    const answer = await save();
    actionStatus.textContent = "Saved as version " + answer.version + ".";
    toast("Saved version " + answer.version);
    if (answer.proof && (answer.proof.status === "queued" || answer.proof.status === "running")) {
      await waitForProof(answer.version);
      loadHistory();
    }
  }));

  proveButton.addEventListener("click", () => busy("Proving", async () => {
    // Unchanged files: their version is proven again (a proof the workers gave up on, a judge since fixed).
    let answer;
    if (isDirty()) answer = await save();
    else {
      answer = (await post(exerciseUrl(courseId, state.slug) + "/versions/" + enc(state.version) + "/prove")).data;
      state.proof = answer.proof;
      showProof();
    }
    actionStatus.textContent = "Proving version " + answer.version + "…";
    await waitForProof(answer.version);
    const status = state.proof ? state.proof.status : "queued";
    actionStatus.textContent = status === "passed" ? "Version " + answer.version + " is proven."
      : status === "failed" ? "Version " + answer.version + " failed its proof: see the problems below."
        : "The proof of version " + answer.version + " is still " + status + ": look again in a moment.";
    loadHistory();
    const first = proofBox.querySelector(".proof-problem");
    if (first) first.focus();
  }));

  previewButton.addEventListener("click", () => {
    // The tab opens now (a browser opens a tab only on the click itself); its address comes once saved.
    const tab = window.open("about:blank", "_blank");
    busy("Opening the preview", async () => {
      try {
        if (isDirty()) await save();
        // The dashboard's own credential goes in the fragment, which no server sees: the learner
        // page takes it out of the address at once and sends it only as Authorization.
        const href = "/learn/preview/" + enc(courseId) + "/" + enc(state.slug) + "/" + enc(state.version) +
          "#token=" + encodeURIComponent(apiKey() || "");
        if (tab) { tab.opener = null; tab.location.href = href; } else location.href = href;
        actionStatus.textContent = "The preview of version " + state.version + " opened in a new tab.";
      } catch (e) {
        if (tab) tab.close();
        throw e;
      }
    });
  });

  async function publish(version) {
    const answer = (await post(exerciseUrl(courseId, state.slug) + "/publish", version ? { version } : {})).data;
    state.status = "published";
    state.current = answer.current_version ?? version ?? state.version;
    actionStatus.textContent = "Version " + state.current + " is published: the course's learners see it.";
    toast("Published version " + state.current);
    loadHistory();
  }

  publishButton.addEventListener("click", () => busy("Publishing", async () => {
    if (isDirty()) await save();
    await publish(state.version);
  }));

  unpublishButton.addEventListener("click", () => busy("Unpublishing", async () => {
    if (!confirm("Unpublish " + state.slug + "? Learners can no longer open or submit it; their attempts are kept.")) return;
    await post(exerciseUrl(courseId, state.slug) + "/unpublish");
    state.status = "unpublished";
    actionStatus.textContent = "Unpublished: learners no longer see it.";
    toast("Unpublished " + state.slug);
    loadHistory();
  }));

  // ---- the history: versions, the diff between two, publishing an older one ----
  const diffOut = el("div", { id: "diff", "aria-live": "polite" });
  async function loadHistory() {
    if (!state.slug) { historyBox.replaceChildren(el("h2", {}, "Versions"), empty("Nothing saved yet.")); return; }
    let versions;
    try {
      versions = (await get(exerciseUrl(courseId, state.slug) + "/versions")).data || [];
    } catch (e) {
      historyBox.replaceChildren(el("h2", {}, "Versions"), problemBox(e));
      return;
    }
    if (!ctx.alive()) return;
    versions.sort((a, b) => b.version - a.version);
    const rows = versions.map((v) => {
      const cells = [];
      if (v.proof_status === "passed" && !(v.current && state.status === "published")) {
        const again = el("button", { type: "button", class: "secondary small", dataset: { publishVersion: v.version } }, "Publish this version");
        again.addEventListener("click", () => busy("Publishing version " + v.version, () => publish(v.version)));
        cells.push(again);
      }
      const open = el("button", { type: "button", class: "secondary small", dataset: { loadVersion: v.version } }, "Load into the editor");
      open.addEventListener("click", () => busy("Loading version " + v.version, async () => {
        if (isDirty() && !confirm("Replace the unsaved changes in the editor with version " + v.version + "?")) return;
        const full = (await get(exerciseUrl(courseId, state.slug) + "/versions/" + enc(v.version))).data;
        editors.load(full.files);
        actionStatus.textContent = "Version " + v.version + "'s files are in the editor: Save draft makes them the latest version.";
      }));
      cells.push(open);
      return el("tr", { class: v.current ? "current" : null, dataset: { version: v.version } },
        el("td", { class: "num" }, String(v.version)),
        el("td", {}, v.author || "(catalog)", el("div", { class: "muted" }, v.source || "")),
        el("td", {}, v.created_at ? timeEl(v.created_at) : "—"),
        el("td", {}, badge(v.proof_status, PROOF_STATUSES)),
        el("td", {}, v.current ? badge("current", ["current"]) : "",
          v.current && state.status !== "published" ? el("div", { class: "muted" }, "not published") : "",
          v.published_at ? el("div", { class: "muted" }, "published ", timeEl(v.published_at)) : ""),
        el("td", {}, v.note || ""),
        el("td", {}, el("div", { class: "row-actions" }, cells)));
    });
    const labels = ["Version", "Author", "Saved", "Proof", "Published", "Note", ""];
    const tableEl = table(labels, rows, { caption: "Versions of " + state.slug, captionHidden: true, class: "stacked versions" });
    for (const row of tableEl.querySelectorAll("tbody tr")) [...row.children].forEach((td, i) => labels[i] && td.setAttribute("data-label", labels[i]));
    const choice = (id, label, selected) => el("div", { class: "field" }, el("label", { for: id }, label),
      el("select", { id }, versions.map((v) => el("option", { value: v.version, selected: v.version === selected }, "Version " + v.version))));
    const diffForm = el("form", { class: "field-row", id: "diff-form" },
      choice("diff-from", "From", versions.length > 1 ? versions[1].version : versions[0] && versions[0].version),
      choice("diff-to", "To", versions[0] && versions[0].version),
      el("div", { class: "field buttons" }, el("button", { type: "submit", class: "secondary" }, "Show the diff")));
    diffForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const from = diffForm.querySelector("#diff-from").value, to = diffForm.querySelector("#diff-to").value;
      diffOut.replaceChildren(loading());
      try {
        const d = (await get(exerciseUrl(courseId, state.slug) + "/diff?from=" + enc(from) + "&to=" + enc(to))).data;
        diffOut.replaceChildren(el("p", { class: "muted" }, "From version " + d.from + " to version " + d.to + ":"), ...diffBlock(d));
      } catch (e) {
        diffOut.replaceChildren(problemBox(e));
      }
    });
    historyBox.replaceChildren(...[el("h2", {}, "Versions"),
      el("p", { class: "muted" }, "Every save is a version; learners see the published one. Attempts keep the version they answered."),
      tableEl, versions.length > 1 ? el("h3", {}, "Compare two versions") : null, versions.length > 1 ? diffForm : null, diffOut].filter(Boolean));
  }

  body.replaceChildren(...[
    slugBox,
    el("div", { class: "actions authoring-actions" }, ...buttons, dirtyNote),
    actionStatus, formError,
    el("section", { class: "card proof-card", "aria-labelledby": "proof-title" }, el("h2", { id: "proof-title" }, "Proof"), proofBox),
    el("section", { class: "card", "aria-labelledby": "files-title" }, el("h2", { id: "files-title" }, "Files"), editors.element),
    historyBox].filter(Boolean));
  editors.refresh();
  showState();
  showProof();
  await loadHistory();
}
