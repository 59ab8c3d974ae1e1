/* #/courses and #/courses/{id} : the courses the signed-in staff teach, and one course: its
 * figures, its people (the LMS's roster), where to read its attempts and gradebook, its keys, and,
 * after an instructor's launch, the exercise launched to try as a learner does. */

import { API, api, caller, downloadButton, get, launchInfo, post, problemBox, query, whoami } from "../api.js";
import { card, el, empty, enc, link, loading, section, table, toast } from "../dom.js";
import { fmtNumber, timeEl } from "../format.js";

const LEFT = "left";

function courseName(c) {
  return c.label && c.label !== c.title ? c.title + " (" + c.label + ")" : c.title;
}

export async function viewCourses(root, ctx) {
  document.title = "Courses · gradquiz dashboard";
  root.append(el("div", { class: "page-head" }, el("h1", {}, "Courses")));
  const box = section("Courses", loading());
  root.append(box);
  let courses;
  try {
    courses = (await get(API + "/courses")).data || [];
  } catch (e) {
    box.replaceChildren(el("h2", {}, "Courses"), problemBox(e, { optional: "Courses are not available on this server." }));
    return;
  }
  if (!ctx.alive()) return;
  box.replaceChildren(el("h2", {}, "Courses"));
  if (!courses.length) {
    box.append(empty("No course yet: a course appears at the first launch from it in an LMS, or when a client makes one (POST /api/v1/courses)."));
    return;
  }
  box.append(table(["Course", "LMS", "Links", "Learners", "Attempts", "Last attempt"], courses.map((c) => el("tr", {},
    el("td", {}, link("#/courses/" + enc(c.id), courseName(c)), el("div", { class: "muted" }, c.external_id)),
    el("td", {}, c.platform || "(a client's own)"),
    el("td", { class: "num" }, fmtNumber(c.links)),
    el("td", { class: "num" }, fmtNumber(c.learners)),
    el("td", { class: "num" }, fmtNumber(c.attempts)),
    el("td", {}, c.last_attempt_at ? timeEl(c.last_attempt_at) : "—"))), { caption: "Courses", captionHidden: true }));
}

/** The exercise the instructor launched, opened as a learner sees it, in a new tab (the token in the
 * address's fragment, which no server sees; the learner page takes it out of the address at once). */
function tryBox(course) {
  const launch = launchInfo();
  if (!launch || !launch.try || !launch.try.token || !launch.course || String(launch.course.id) !== String(course.id)) return null;
  const t = launch.try;
  const fragment = new URLSearchParams();
  for (const [k, v] of Object.entries(t)) if (v !== undefined && v !== null) fragment.set(k, String(v));
  const href = "/learn/" + enc(t.exercise) + "#" + fragment.toString();
  return section("The exercise you launched",
    el("p", {}, "You opened ", el("code", {}, t.exercise), " from this course. Try it as your learners see it; your attempts are not graded in the LMS and no rule (attempts, dates) binds you."),
    el("p", {}, el("a", { href, target: "_blank", rel: "noopener", class: "button", id: "try-exercise" },
      "Try the exercise (opens a new tab)")));
}

function memberRow(m) {
  return el("tr", { class: m.status === LEFT ? "left" : null },
    el("td", {}, m.name || el("span", { class: "muted" }, "(no name shared)")),
    el("td", { class: "learner" }, link("#/attempts" + query({ learner: m.learner, course: m.course_id }), m.learner)),
    el("td", {}, m.email || "—"),
    el("td", {}, (m.roles || []).map((r) => r.split(/[#/]/).pop()).join(", ") || "—"),
    el("td", {}, m.status === LEFT ? el("span", { class: "badge badge-warn" }, "left the course") : "active"));
}

async function peopleBox(course, ctx) {
  const box = section("People", loading());
  let roster;
  try {
    roster = (await get(API + "/courses/" + enc(course.id) + "/members")).data;
  } catch (e) {
    box.replaceChildren(el("h2", {}, "People"), problemBox(e, { optional: "The roster is not available on this server." }));
    return box;
  }
  if (!ctx.alive()) return box;
  const state = roster.nrps
    ? el("p", { class: "muted" }, "From the LMS's roster" + (roster.synced_at ? ", read " : ", not read yet"),
      roster.synced_at ? timeEl(roster.synced_at) : null, roster.error ? " · the last read failed: " + roster.error : "")
    : el("p", { class: "muted" }, "The LMS shares no roster for this course: names come from each person's own launch.");
  const sync = roster.nrps ? el("button", { type: "button", class: "secondary", id: "roster-sync" }, "Read the roster now") : null;
  if (sync) {
    sync.addEventListener("click", async () => {
      sync.disabled = true;
      try {
        await post(API + "/courses/" + enc(course.id) + "/roster/sync");
        toast("The roster will be read from the LMS in a moment.");
      } catch (e) {
        toast((e.problem && e.problem.detail) || String(e.message || e), "error");
      } finally {
        sync.disabled = false;
      }
    });
  }
  const members = (roster.members || []).map((m) => Object.assign({ course_id: course.id }, m));
  box.replaceChildren(el("h2", {}, "People"), state, sync,
    members.length ? table(["Name", "Learner id", "E-mail", "Roles", "Status"], members.map(memberRow),
      { caption: "People of " + course.title, captionHidden: true, class: "members" })
      : empty("Nobody yet."));
  return box;
}

function keyRow(course, k, refresh) {
  const revoke = k.revoked_at ? null : el("button", { type: "button", class: "secondary", "aria-label": "Revoke the key " + k.name }, "Revoke");
  if (revoke) {
    revoke.addEventListener("click", async () => {
      if (!confirm("Revoke the key “" + k.name + "”? Scripts using it stop working within a few seconds.")) return;
      revoke.disabled = true;
      try {
        await api("DELETE", "/api/v1/courses/" + enc(course.id) + "/keys/" + enc(k.id));
        toast("Revoked " + k.name);
        refresh();
      } catch (e) {
        revoke.disabled = false;
        toast((e.problem && e.problem.detail) || String(e.message || e), "error");
      }
    });
  }
  return el("tr", {}, el("td", {}, k.name), el("td", {}, el("code", {}, k.key_prefix + "…")), el("td", {}, timeEl(k.created_at)),
    el("td", {}, k.created_by), el("td", {}, k.revoked_at ? el("span", {}, "revoked ", timeEl(k.revoked_at)) : "in use"),
    el("td", {}, revoke));
}

/** Course keys: for the course's own scripts (the staff API, this course only). A course key itself
 * cannot make keys, so the box shows only to a person signed in for the course or a staff key. */
async function keysBox(course, ctx) {
  const box = section("Course keys");
  const listBox = el("div", {}, loading());
  const shown = el("div", { "aria-live": "polite" });
  const name = el("input", { id: "key-name", name: "name", type: "text", required: true, maxlength: 100,
    placeholder: "e.g. section A gradebook script", autocomplete: "off" });
  const form = el("form", { class: "inline-form", id: "key-form" },
    el("label", { for: "key-name" }, "New key for"), name, el("button", { type: "submit" }, "Make a key"));
  async function refresh() {
    try {
      const keys = (await get("/api/v1/courses/" + enc(course.id) + "/keys")).data || [];
      if (!ctx.alive()) return;
      listBox.replaceChildren(keys.length ? table(["Name", "Key", "Made", "By", "State", ""], keys.map((k) => keyRow(course, k, refresh)),
        { caption: "Keys of " + course.title, captionHidden: true }) : empty("No key yet."));
    } catch (e) {
      listBox.replaceChildren(problemBox(e));
    }
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!name.value.trim()) { name.focus(); return; }
    try {
      const made = (await post("/api/v1/courses/" + enc(course.id) + "/keys", { name: name.value.trim() })).data;
      name.value = "";
      const value = el("input", { type: "text", readonly: true, value: made.key, id: "new-key", "aria-label": "The new key", spellcheck: "false" });
      shown.replaceChildren(el("div", { class: "notice", role: "status" },
        el("p", {}, el("strong", {}, "Copy the key now: "), "it is shown this once (only its hash is kept)."), value));
      value.focus();
      value.select();
      refresh();
    } catch (e) {
      shown.replaceChildren(problemBox(e));
    }
  });
  box.append(el("p", { class: "muted" }, "A course key reads and grades this course alone, through the staff API (Authorization: Bearer gqc_…): for your course's own scripts."),
    form, shown, listBox);
  await refresh();
  return box;
}

export async function viewCourse(root, ctx, id) {
  document.title = "Course · gradquiz dashboard";
  let course;
  try {
    course = (await get(API + "/courses/" + enc(id))).data;
  } catch (e) {
    root.append(el("h1", {}, "Course"), problemBox(e));
    return;
  }
  if (!ctx.alive()) return;
  document.title = course.title + " · gradquiz dashboard";
  const me = caller.info || await whoami().catch(() => null);
  const courseQuery = { course: course.id };
  root.append(el("div", { class: "page-head" },
    el("h1", {}, courseName(course)),
    el("div", { class: "actions" },
      link("#/attempts" + query(courseQuery), el("span", {}, "Attempts in this course")),
      downloadButton("Gradebook CSV (best)", API + "/gradebook.csv" + query(Object.assign({ policy: "best" }, courseQuery)), "gradebook-best.csv"),
      downloadButton("Attempts CSV", API + "/attempts.csv" + query(courseQuery), "attempts.csv"))),
    el("p", { class: "muted" }, course.platform ? "A course of " + course.platform + " (" + course.external_id + ")" : "A client's own course (" + course.external_id + ")"),
    el("div", { class: "cards" }, card("Learners", fmtNumber(course.learners)), card("Attempts", fmtNumber(course.attempts)),
      card("Assignments (LTI links)", fmtNumber(course.links))));
  const tryIt = tryBox(course);
  if (tryIt) root.append(tryIt);
  root.append(section("Assignments and statistics",
    el("p", {}, link("#/links" + query(courseQuery), "The course's assignments and their rules"), " · ",
      link("#/" + query(courseQuery), "Pass rates of the course's exercises"), " · ",
      link("#/courses/" + enc(course.id) + "/authoring", "The course's own exercises (authoring)"))));
  root.append(await peopleBox(course, ctx));
  if (!ctx.alive()) return;
  if (!me || me.kind !== "course_key") root.append(await keysBox(course, ctx));
}
