/* gradquiz grading dashboard: a small single-page app over /api/v1/admin.
 *
 * No framework and no build step. Every piece of API data reaches the page through
 * textContent, createElement and setAttribute (never an HTML string): learner ids, code, messages
 * and feedback are untrusted text. Links are built from "#/..." plus encodeURIComponent.
 * The page's Content-Security-Policy allows no inline script and no other origin.
 */
(function () {
  "use strict";

  const API = "/api/v1/admin";
  const KEY_STORE = "gradquiz.dashboard.key";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const POLL_MS = 1000;
  const STATUSES = ["queued", "running", "graded", "error"];
  const VERDICTS = ["passed", "failed", "timeout", "internal_error", "syntax_error", "memory_limit",
    "output_limit", "forbidden", "crashed", "bad_output", "too_large"];
  const SORTS = [["-created_at", "Newest first"], ["created_at", "Oldest first"],
    ["-score", "Highest score first"], ["score", "Lowest score first"]];
  const REGRADE_STATUSES = ["dry_run", "ready", "applying", "applied", "cancelled"];
  const FILTERS = ["exercise", "learner", "client", "status", "verdict", "likely_cause", "score_min",
    "score_max", "since", "until", "sort"];

  let navigation = 0; // bumped on every route change: stale async work checks it and stops
  let exerciseSlugs = null; // cached for the filter's suggestions

  // ---------------------------------------------------------------- DOM helpers

  function el(tag, props, ...children) {
    return build(document.createElement(tag), props, children);
  }

  function svg(tag, props, ...children) {
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

  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
  const link = (href, ...children) => el("a", { href }, ...children);

  function section(title, ...children) {
    return el("section", { class: "card" }, el("h2", {}, title), ...children);
  }

  function loading(text) {
    return el("p", { class: "loading" }, text || "Loading…");
  }

  function empty(text) {
    return el("p", { class: "empty" }, text);
  }

  function table(headers, rows, opts) {
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

  function dl(pairs) {
    return el("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) =>
      el("div", {}, el("dt", {}, k), el("dd", {}, v === null || v === undefined || v === "" ? "—" : v))));
  }

  function toast(message, kind) {
    const box = $("toast");
    box.textContent = message;
    box.className = "toast " + (kind === "error" ? "toast-error" : "toast-ok");
    box.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
  }

  // ---------------------------------------------------------------- formatting

  function fmtScore(v) {
    if (v === null || v === undefined) return "—";
    const n = Number(v);
    return Number.isFinite(n) ? n.toFixed(2) : String(v);
  }

  function pct(v) {
    if (v === null || v === undefined) return "—";
    return Math.round(Number(v) * 1000) / 10 + "%";
  }

  const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

  function fmtTime(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? String(iso) : dateFmt.format(d);
  }

  function timeEl(iso) {
    return iso ? el("time", { datetime: iso, title: iso }, fmtTime(iso)) : "—";
  }

  function fmtDuration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    const s = Number(seconds);
    if (!Number.isFinite(s)) return String(seconds);
    if (s < 1) return Math.round(s * 1000) + " ms";
    if (s < 90) return (Math.round(s * 10) / 10) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 172800) return (Math.round(s / 360) / 10) + " h";
    return (Math.round(s / 8640) / 10) + " days";
  }

  function fmtNumber(v, digits) {
    if (v === null || v === undefined) return "—";
    const n = Number(v);
    if (!Number.isFinite(n)) return String(v);
    return digits === undefined ? n.toLocaleString() : n.toFixed(digits);
  }

  function shortId(id) {
    return String(id || "").slice(0, 8);
  }

  function badge(value, known) {
    const text = value === null || value === undefined || value === "" ? "—" : String(value);
    const cls = known && known.includes(text) ? "b-" + text.replace(/[^a-z_]/g, "") : "b-other";
    return el("span", { class: "badge " + cls }, text);
  }

  function scoreCell(item) {
    const parts = [el("span", { class: "score" }, fmtScore(item.score))];
    if (item.overridden) {
      parts.push(" ", el("span", { class: "badge b-overridden", title: "grader's score: " + fmtScore(item.grader_score) },
        "overridden"));
    }
    return parts;
  }

  function prettyJson(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  // ---------------------------------------------------------------- the API

  class ApiError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || "HTTP " + status);
      this.status = status;
      this.problem = problem || {};
    }
  }

  function apiKey() {
    try { return sessionStorage.getItem(KEY_STORE); } catch (e) { return null; }
  }

  function authHeaders(key) {
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
  async function api(method, path, body, opts) {
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
      if (res.status === 401 && opts.key === undefined) signOut("Your key is no longer accepted: " +
        (problem.detail || problem.title || "401") + " Sign in again.");
      throw new ApiError(res.status, problem);
    }
    let data = null;
    if (res.status !== 204 && (res.headers.get("Content-Type") || "").includes("json")) data = await res.json();
    return { data, headers: res.headers, status: res.status };
  }

  const get = (path) => api("GET", path);
  const post = (path, body) => api("POST", path, body);

  function query(params) {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (Array.isArray(v)) v.forEach((x) => qs.append(k, x));
      else if (v !== undefined && v !== null && v !== "") qs.append(k, v);
    }
    const s = qs.toString();
    return s ? "?" + s : "";
  }

  /** A list answer in any of the API's shapes: a bare array (X-Pagination header), or {items, next_cursor}. */
  function listOf(result) {
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

  function problemBox(error, context) {
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

  function downloadButton(label, path, fallbackName) {
    const button = el("button", { type: "button", class: "secondary", dataset: { export: fallbackName } }, label);
    button.addEventListener("click", () => download(path, fallbackName, button));
    return button;
  }

  // ---------------------------------------------------------------- charts (inline SVG)

  let chartIds = 0;

  function niceMax(max) {
    if (max <= 0) return 1;
    const pow = Math.pow(10, Math.floor(Math.log10(max)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * pow >= max) return m * pow;
    return 10 * pow;
  }

  /** Whole-number ticks from 0 to at least `max`, at most 6 of them (counts never get 2.5). */
  function countTicks(max) {
    let step = 1;
    while (Math.ceil(max / step) > 5) {
      const pow = Math.pow(10, Math.floor(Math.log10(step)));
      const m = step / pow;
      step = (m < 2 ? 2 : m < 5 ? 5 : 10) * pow;
    }
    const top = Math.max(1, Math.ceil(max / step)) * step;
    return Array.from({ length: top / step + 1 }, (_, i) => i * step);
  }

  function truncate(text, n) {
    text = String(text);
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  /** Horizontal bars, one per item: {label, value, title, href}; values on [0, max]. */
  function hbarChart(items, opts) {
    const max = opts.max || 1;
    const rowH = 28, labelW = 280, valueW = 64, width = 960, top = 8, axisH = 34;
    const plotW = width - labelW - valueW;
    const height = top + items.length * rowH + axisH;
    const id = "chart-" + (++chartIds);
    const chart = svg("svg", { class: "chart hbar", viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-labelledby": id + "-t", dataset: { chart: opts.name || "" } },
    svg("title", { id: id + "-t" }, opts.caption));
    const ticks = opts.ticks || [0, 0.25, 0.5, 0.75, 1].map((t) => t * max);
    const baseY = top + items.length * rowH;
    for (const t of ticks) {
      const x = labelW + (t / max) * plotW;
      chart.append(svg("line", { class: "grid", x1: x, x2: x, y1: top, y2: baseY }),
        svg("text", { class: "tick", x, y: baseY + 16, "text-anchor": "middle" }, opts.format(t)));
    }
    chart.append(svg("line", { class: "axis", x1: labelW, x2: labelW, y1: top, y2: baseY }),
      svg("line", { class: "axis", x1: labelW, x2: labelW + plotW, y1: baseY, y2: baseY }));
    if (opts.axisLabel) {
      chart.append(svg("text", { class: "axis-label", x: labelW + plotW / 2, y: baseY + 31, "text-anchor": "middle" },
        opts.axisLabel));
    }
    items.forEach((item, i) => {
      const y = top + i * rowH;
      const value = Math.max(0, Math.min(max, Number(item.value) || 0));
      const w = (value / max) * plotW;
      const bar = svg("rect", { class: "bar", x: labelW, y: y + 5, width: Math.max(w, 1.5), height: rowH - 10,
        rx: 3, dataset: { label: item.label, value: String(item.value) } }, svg("title", {}, item.title));
      const row = svg("g", { class: "bar-row" },
        svg("text", { class: "bar-label", x: labelW - 10, y: y + rowH / 2 + 4, "text-anchor": "end" },
          truncate(item.label, 34)),
        bar,
        svg("text", { class: "bar-value", x: labelW + w + 6, y: y + rowH / 2 + 4 }, opts.format(item.value)));
      chart.append(item.href ? svg("a", { href: item.href, class: "bar-link" }, row) : row);
    });
    return el("figure", { class: "figure" }, chart, opts.legend ? el("figcaption", {}, opts.legend) : null);
  }

  /** Vertical bars: {label, value, inner?, title}; `inner` is drawn over the bar (e.g. passed of attempts). */
  function vbarChart(items, opts) {
    const width = 560, height = 250, left = 44, right = 10, top = 12, bottom = 50;
    const plotW = width - left - right, plotH = height - top - bottom;
    const ticks = countTicks(Math.max(1, ...items.map((i) => Number(i.value) || 0)));
    const max = ticks[ticks.length - 1];
    const id = "chart-" + (++chartIds);
    const chart = svg("svg", { class: "chart vbar", viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-labelledby": id + "-t", dataset: { chart: opts.name || "" } },
    svg("title", { id: id + "-t" }, opts.caption));
    const baseY = top + plotH;
    for (const t of ticks) {
      const y = baseY - (t / max) * plotH;
      chart.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: y, y2: y }),
        svg("text", { class: "tick", x: left - 6, y: y + 4, "text-anchor": "end" }, fmtNumber(t)));
    }
    chart.append(svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: baseY }),
      svg("line", { class: "axis", x1: left, x2: left + plotW, y1: baseY, y2: baseY }));
    const slot = plotW / Math.max(1, items.length);
    const barW = Math.max(2, slot * 0.78);
    const every = Math.max(1, Math.ceil(items.length / (opts.maxLabels || 12)));
    items.forEach((item, i) => {
      const x = left + i * slot + (slot - barW) / 2;
      const h = ((Number(item.value) || 0) / max) * plotH;
      const g = svg("g", { class: "bar-col" },
        svg("rect", { class: "bar", x, y: baseY - h, width: barW, height: Math.max(h, item.value ? 1 : 0),
          dataset: { label: item.label, value: String(item.value) } }, svg("title", {}, item.title)));
      if (item.inner !== undefined) {
        const ih = ((Number(item.inner) || 0) / max) * plotH;
        g.append(svg("rect", { class: "bar bar-inner", x: x + barW * 0.2, y: baseY - ih, width: barW * 0.6, height: ih },
          svg("title", {}, item.title)));
      }
      if (i % every === 0) {
        g.append(svg("text", { class: "tick", x: x + barW / 2, y: baseY + 16, "text-anchor": "middle" },
          item.short || item.label));
      }
      chart.append(g);
    });
    if (opts.axisLabel) {
      chart.append(svg("text", { class: "axis-label", x: left + plotW / 2, y: height - 8, "text-anchor": "middle" },
        opts.axisLabel));
    }
    return el("figure", { class: "figure" }, chart, opts.legend ? el("figcaption", {}, opts.legend) : null);
  }

  /** The numbers behind a chart, as a table in a disclosure (for screen readers and copying). */
  function chartTable(summary, headers, rows) {
    return el("details", { class: "chart-table" }, el("summary", {}, summary),
      table(headers, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
  }

  // ---------------------------------------------------------------- sign in / out

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

  // ---------------------------------------------------------------- overview

  async function loadExerciseIndex() {
    // The admin list (unpublished ones too, with the published flag) when there is one.
    try {
      const { items } = listOf(await get(API + "/exercises" + query({ page_size: 100 })));
      return items;
    } catch (e) {
      if (e.status === 404) return null;
      throw e;
    }
  }

  async function viewOverview(root) {
    root.append(el("div", { class: "page-head" }, el("h1", {}, "Overview"),
      el("div", { class: "actions" },
        link("#/attempts", el("span", {}, "Browse attempts")),
        downloadButton("Gradebook CSV (best)", API + "/gradebook.csv?policy=best", "gradebook-best.csv"),
        downloadButton("Gradebook CSV (latest)", API + "/gradebook.csv?policy=latest", "gradebook-latest.csv"))));
    const cards = el("div", { class: "cards" });
    const chartBox = section("Pass rate by exercise", loading());
    const tableBox = section("Exercises", loading());
    root.append(cards, chartBox, tableBox);

    let stats;
    try {
      stats = (await get(API + "/stats")).data || [];
    } catch (e) {
      chartBox.replaceChildren(el("h2", {}, "Pass rate by exercise"),
        problemBox(e, { optional: "Statistics are not available on this server yet (GET /api/v1/admin/stats)." }));
      tableBox.remove();
      return;
    }
    exerciseSlugs = stats.map((s) => s.exercise);
    const attempts = stats.reduce((n, s) => n + (s.attempts || 0), 0);
    const active = stats.filter((s) => (s.attempts || 0) > 0);
    cards.append(card("Exercises", stats.length), card("With attempts", active.length),
      card("Attempts", fmtNumber(attempts)));

    chartBox.replaceChildren(el("h2", {}, "Pass rate by exercise"));
    if (!active.length) {
      chartBox.append(empty("No attempts yet. The chart fills in as learners answer."));
    } else {
      chartBox.append(hbarChart(active.map((s) => ({
        label: s.exercise,
        value: s.pass_rate || 0,
        href: "#/exercises/" + enc(s.exercise),
        title: s.exercise + ": " + pct(s.pass_rate) + " of learners passed (" + (s.passed_learners || 0) + " of " +
          (s.learners || 0) + " learners, " + (s.attempts || 0) + " attempts)",
      })), { name: "pass-rate", max: 1, format: pct, caption: "Pass rate by exercise: the share of learners who passed",
        axisLabel: "share of learners who passed", legend: "Exercises with at least one attempt. Select a bar for the exercise." }),
      chartTable("Pass rates as a table", ["Exercise", "Pass rate", "Passed learners", "Learners"],
        active.map((s) => [s.exercise, pct(s.pass_rate), s.passed_learners, s.learners])));
    }

    let index = null;
    try { index = await loadExerciseIndex(); } catch (e) { index = null; }
    const published = new Map((index || []).map((x) => [x.slug || x.exercise, x.published]));
    const headers = ["Exercise", "Title", "Kind", "Attempts", "Learners", "Passed", "Pass rate"];
    if (index) headers.push("Published");
    tableBox.replaceChildren(el("h2", {}, "Exercises"), table(headers, stats.map((s) => el("tr", { dataset: { exercise: s.exercise } },
      el("td", {}, link("#/exercises/" + enc(s.exercise), s.exercise)),
      el("td", {}, s.title || ""),
      el("td", {}, s.kind || ""),
      el("td", { class: "num" }, fmtNumber(s.attempts)),
      el("td", { class: "num" }, fmtNumber(s.learners)),
      el("td", { class: "num" }, fmtNumber(s.passed_learners)),
      el("td", { class: "num" }, pct(s.pass_rate)),
      index ? el("td", {}, published.has(s.exercise) ? (published.get(s.exercise) ? "yes" : badge("unpublished")) : "—") : null,
    )), { caption: "Every exercise", captionHidden: true }));
  }

  function card(label, value) {
    return el("div", { class: "stat" }, el("span", { class: "stat-value" }, value === null || value === undefined ? "—" : value),
      el("span", { class: "stat-label" }, label));
  }

  // ---------------------------------------------------------------- one exercise

  async function viewExercise(root, ctx, slug) {
    document.title = slug + " · gradquiz dashboard";
    const actions = el("div", { class: "actions" });
    root.append(el("div", { class: "page-head" },
      el("div", {}, el("p", { class: "crumbs" }, link("#/", "Overview"), " / exercise"), el("h1", {}, slug),
        el("p", { class: "subtitle", id: "exercise-subtitle" })),
      actions));
    actions.append(
      link("#/attempts" + query({ exercise: slug }), "Attempts"),
      downloadButton("Attempts CSV", API + "/attempts.csv" + query({ exercise: slug }), slug + "-attempts.csv"),
      downloadButton("Gradebook CSV", API + "/gradebook.csv" + query({ exercise: slug }), slug + "-gradebook.csv"));
    const regrade = el("button", { type: "button", id: "regrade-exercise" }, "Regrade all attempts…");
    regrade.addEventListener("click", () => startRegrade({ exercise: slug }, regrade));
    actions.append(regrade);
    const publishBox = el("span", { class: "publish" });
    actions.append(publishBox);

    const cards = el("div", { class: "cards" });
    const charts = el("div", { class: "grid-2" });
    const lists = el("div", { class: "grid-2" });
    const versions = section("Versions", loading());
    root.append(cards, charts, lists, versions);

    loadPublish(slug, publishBox);
    loadVersions(slug, versions);

    let s;
    try {
      s = (await get(API + "/exercises/" + enc(slug) + "/stats")).data;
    } catch (e) {
      cards.replaceWith(problemBox(e, { optional: "Exercise statistics are not available on this server yet." }));
      return;
    }
    cards.append(
      card("Attempts", fmtNumber(s.attempts)), card("Graded", fmtNumber(s.graded)),
      card("Learners", fmtNumber(s.learners)), card("Passed learners", fmtNumber(s.passed_learners)),
      card("Pass rate (learners)", pct(s.pass_rate)), card("Pass rate (attempts)", pct(s.attempt_pass_rate)),
      card("Median attempts to first pass", fmtNumber(s.median_attempts_to_first_pass)),
      card("Median time to first pass", fmtDuration(s.median_seconds_to_first_pass)));

    const hist = s.score_histogram || [];
    const histBox = section("Score distribution");
    if (!hist.some((b) => b.count)) histBox.append(empty("No graded attempts yet."));
    else {
      const label = (b) => fmtScore(b.from) + "–" + fmtScore(b.to);
      const short = (b) => Number(b.from).toFixed(1) + "–" + Number(b.to).toFixed(1);
      histBox.append(vbarChart(hist.map((b) => ({ label: label(b), short: short(b), value: b.count,
        title: label(b) + ": " + b.count + (b.count === 1 ? " learner" : " learners") })),
      { name: "histogram", caption: "Histogram of each learner's best score", axisLabel: "best score per learner",
        legend: "Learners by their best score." }),
      chartTable("Histogram as a table", ["Score", "Learners"], hist.map((b) => [label(b), b.count])));
    }
    const days = s.attempts_by_day || [];
    const dayBox = section("Attempts over time");
    if (!days.some((d) => d.attempts)) dayBox.append(empty("No attempts in the last 30 days."));
    else {
      dayBox.append(vbarChart(days.map((d) => ({ label: d.day, short: String(d.day).slice(5), value: d.attempts,
        inner: d.passed, title: d.day + ": " + d.attempts + " attempts, " + d.passed + " passed" })),
      { name: "attempts-by-day", caption: "Attempts per day over the last 30 days, with the passed ones",
        axisLabel: "day (UTC)", maxLabels: 6,
        legend: el("span", {}, el("span", { class: "swatch swatch-all" }), " attempts  ",
          el("span", { class: "swatch swatch-passed" }), " passed") }),
      chartTable("Attempts per day as a table", ["Day", "Attempts", "Passed"], days.map((d) => [d.day, d.attempts, d.passed])));
    }
    charts.append(histBox, dayBox);

    const named = (title, rows, filter, noun) => section(title, rows && rows.length
      ? table([noun, "Attempts"], rows.map((r) => el("tr", {},
        el("td", {}, filter ? link("#/attempts" + query(Object.assign({ exercise: slug }, filter(r.name))), r.name) : r.name),
        el("td", { class: "num" }, fmtNumber(r.count)))))
      : empty("None."));
    lists.append(named("Most common failing checks", s.failing_checks, null, "Check"),
      named("Most common likely causes", s.likely_causes, (n) => ({ likely_cause: n }), "Likely cause"));
  }

  async function loadPublish(slug, box) {
    let index;
    try { index = await loadExerciseIndex(); } catch (e) { index = null; }
    const entry = (index || []).find((x) => (x.slug || x.exercise) === slug);
    if (!entry) return;
    const sub = $("exercise-subtitle");
    if (sub) {
      sub.replaceChildren(entry.title || "", entry.kind ? " · " + entry.kind : "",
        entry.version !== undefined ? " · version " + (entry.version && entry.version.number !== undefined ? entry.version.number : entry.version) : "",
        " · ", entry.published ? badge("published", ["published"]) : badge("unpublished", ["unpublished"]));
    }
    const button = el("button", { type: "button", class: entry.published ? "secondary" : "", id: "publish-toggle" },
      entry.published ? "Unpublish" : "Publish");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await post(API + "/exercises/" + enc(slug) + (entry.published ? "/unpublish" : "/publish"));
        toast(entry.published ? "Unpublished: learners no longer see " + slug : "Published " + slug);
        box.replaceChildren();
        loadPublish(slug, box);
      } catch (e) {
        toast((e.problem.title || "Error") + ": " + (e.problem.detail || e.status), "error");
        button.disabled = false;
      }
    });
    box.replaceChildren(button);
  }

  async function loadVersions(slug, box) {
    try {
      const { items } = listOf(await get(API + "/exercises/" + enc(slug) + "/versions"));
      box.replaceChildren(el("h2", {}, "Versions"), items.length ? table(["Version", "Digest", "Created", "Attempts", "Current"],
        items.map((v) => el("tr", {},
          el("td", { class: "num" }, v.number !== undefined ? v.number : v.version),
          el("td", {}, el("code", {}, String(v.digest || v.content_digest || "").slice(0, 12))),
          el("td", {}, timeEl(v.created_at)),
          el("td", { class: "num" }, fmtNumber(v.attempts)),
          el("td", {}, v.current ? badge("current", ["current"]) : "")))) : empty("No versions."));
    } catch (e) {
      box.replaceChildren(el("h2", {}, "Versions"),
        problemBox(e, { optional: "Exercise versions are not available on this server yet." }));
    }
  }

  // ---------------------------------------------------------------- attempts

  function filterForm(params) {
    const field = (name, label, input) => el("div", { class: "field" }, el("label", { for: "f-" + name }, label), input);
    const text = (name, extra) => el("input", Object.assign({ id: "f-" + name, name, type: "text", value: params.get(name) || "" }, extra || {}));
    const select = (name, options, blank) => {
      const s = el("select", { id: "f-" + name, name }, el("option", { value: "" }, blank),
        options.map(([v, l]) => el("option", { value: v }, l)));
      s.value = params.get(name) || "";
      return s;
    };
    const exerciseList = el("datalist", { id: "exercise-slugs" }, (exerciseSlugs || []).map((x) => el("option", { value: x })));
    if (!exerciseSlugs) {
      get(API + "/stats").then(({ data }) => {
        exerciseSlugs = (data || []).map((s) => s.exercise);
        exerciseList.replaceChildren(...exerciseSlugs.map((x) => el("option", { value: x })));
      }).catch(() => { /* suggestions only */ });
    }
    const number = (name) => el("input", { id: "f-" + name, name, type: "number", min: 0, max: 1, step: "0.01",
      value: params.get(name) || "", inputmode: "decimal" });
    const when = (name) => el("input", { id: "f-" + name, name, type: "datetime-local", value: params.get(name) || "" });
    const form = el("form", { class: "filters", id: "attempt-filters", role: "search", "aria-label": "Filter attempts" },
      field("exercise", "Exercise", text("exercise", { list: "exercise-slugs", placeholder: "any" })), exerciseList,
      field("learner", "Learner", text("learner", { placeholder: "exact id" })),
      field("client", "Client", text("client", { placeholder: "client name" })),
      field("status", "Status", select("status", STATUSES.map((s) => [s, s]), "any")),
      field("verdict", "Verdict", select("verdict", VERDICTS.map((s) => [s, s]), "any")),
      field("likely_cause", "Likely cause", text("likely_cause", { placeholder: "e.g. wrong_sign" })),
      field("score_min", "Score from", number("score_min")),
      field("score_max", "Score to", number("score_max")),
      field("since", "Submitted after", when("since")),
      field("until", "Submitted before", when("until")),
      field("sort", "Sort", select("sort", SORTS.slice(1), SORTS[0][1])),
      el("div", { class: "field buttons" },
        el("button", { type: "submit" }, "Apply filters"),
        el("button", { type: "button", class: "secondary", id: "reset-filters" }, "Reset")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      for (const name of FILTERS) {
        const input = form.elements.namedItem(name);
        if (input && input.value.trim() !== "") values[name] = input.value.trim();
      }
      const target = "#/attempts" + query(values);
      if (location.hash === target) render(); else location.hash = target;
    });
    form.querySelector("#reset-filters").addEventListener("click", () => { location.hash = "#/attempts"; });
    return form;
  }

  /** The API's query for the filters in the page's address (datetime-local values become ISO). */
  function apiFilters(params) {
    const out = {};
    for (const name of FILTERS) {
      let v = params.get(name);
      if (!v) continue;
      if ((name === "since" || name === "until") && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v)) {
        const d = new Date(v);
        if (!Number.isNaN(d.getTime())) v = d.toISOString();
      }
      out[name] = v;
    }
    return out;
  }

  function attemptRow(a) {
    return el("tr", { dataset: { attemptId: a.id } },
      el("td", {}, link("#/attempts/" + enc(a.id), timeEl(a.created_at))),
      el("td", {}, link("#/exercises/" + enc(a.exercise), a.exercise), a.exercise_version ? el("span", { class: "muted" }, " v" + a.exercise_version) : null),
      el("td", { class: "learner" }, link("#/learners/" + enc(a.learner) + query({ client: a.client }), a.learner)),
      el("td", {}, a.client || ""),
      el("td", {}, badge(a.status, STATUSES)),
      el("td", {}, badge(a.verdict, VERDICTS)),
      el("td", { class: "num" }, scoreCell(a)),
      el("td", {}, a.likely_cause || ""),
      el("td", {}, link("#/attempts/" + enc(a.id), el("span", { class: "open" }, "Open"))));
  }

  async function viewAttempts(root, ctx) {
    document.title = "Attempts · gradquiz dashboard";
    const filters = apiFilters(ctx.params);
    const exportBox = el("div", { class: "actions" },
      downloadButton("Export these as CSV", API + "/attempts.csv" + query(filters), "attempts.csv"));
    root.append(el("div", { class: "page-head" }, el("h1", {}, "Attempts"), exportBox),
      el("section", { class: "card" }, filterForm(ctx.params)));
    const body = el("tbody", {});
    const count = el("p", { class: "count", id: "attempt-count", "aria-live": "polite" });
    const more = el("button", { type: "button", class: "secondary", id: "load-more", hidden: true }, "Load more");
    const results = el("section", { class: "card" }, count,
      el("div", { class: "table-wrap" }, el("table", { id: "attempts-table" },
        el("caption", { class: "visually-hidden" }, "Attempts matching the filters"),
        el("thead", {}, el("tr", {}, ["Submitted", "Exercise", "Learner", "Client", "Status", "Verdict", "Score",
          "Likely cause", ""].map((h) => el("th", { scope: "col", class: h === "Score" ? "num" : null }, h)))), body)),
      el("div", { class: "more" }, more));
    root.append(results);

    let cursor = null, shown = 0;
    async function page() {
      more.disabled = true;
      more.textContent = "Loading…";
      try {
        const { items, next } = listOf(await get(API + "/attempts" + query(Object.assign({}, filters, { limit: 50, cursor }))));
        if (!ctx.alive()) return;
        body.append(...items.map(attemptRow));
        shown += items.length;
        cursor = next && next.cursor;
        count.textContent = shown ? shown + (shown === 1 ? " attempt" : " attempts") + (cursor ? " shown, more match" : "") : "";
        if (!shown) results.insertBefore(empty("No attempt matches these filters."), count);
        more.hidden = !cursor;
      } catch (e) {
        results.insertBefore(problemBox(e, { optional: "Attempt search is not available on this server yet." }), count);
        more.hidden = true;
      } finally {
        more.disabled = false;
        more.textContent = "Load more";
      }
    }
    more.addEventListener("click", page);
    await page();
  }

  // ---------------------------------------------------------------- one attempt

  async function viewAttempt(root, ctx, id) {
    document.title = "Attempt " + shortId(id) + " · gradquiz dashboard";
    let a;
    try {
      a = (await get(API + "/attempts/" + enc(id))).data;
    } catch (e) {
      root.append(el("h1", {}, "Attempt"), problemBox(e, { optional: "Attempt details are not available on this server yet." }));
      return;
    }
    const regrade = el("button", { type: "button", class: "secondary", id: "regrade-attempt" }, "Regrade this attempt…");
    regrade.addEventListener("click", () => startRegrade({ attempt: a.id }, regrade));
    root.append(el("div", { class: "page-head" },
      el("div", {}, el("p", { class: "crumbs" }, link("#/attempts", "Attempts"), " / ",
        link("#/attempts" + query({ exercise: a.exercise }), a.exercise)),
      el("h1", {}, "Attempt ", el("code", { title: a.id }, shortId(a.id)))),
      el("div", { class: "actions" }, regrade)));

    const scoreText = [el("span", { class: "score big", id: "attempt-score" }, fmtScore(a.score))];
    if (a.overridden) scoreText.push(" ", el("span", { class: "badge b-overridden" }, "overridden"),
      el("span", { class: "muted" }, " grader: " + fmtScore(a.grader_score)));
    root.append(el("section", { class: "card" }, dl([
      ["Exercise", link("#/exercises/" + enc(a.exercise), a.exercise)],
      ["Version", (a.exercise_version !== undefined && a.exercise_version !== null ? "v" + a.exercise_version : "") +
        (a.exercise_version_digest ? " · " + String(a.exercise_version_digest).slice(0, 12) : "")],
      ["Learner", el("span", { id: "attempt-learner" }, link("#/learners/" + enc(a.learner) + query({ client: a.client }), a.learner))],
      ["Client", a.client],
      ["Status", badge(a.status, STATUSES)],
      ["Verdict", badge(a.verdict, VERDICTS)],
      ["Score", el("span", {}, scoreText)],
      ["Likely cause", a.likely_cause],
      a.report_status ? ["Report status", a.report_status] : null,
      a.grader_version ? ["Grader", a.grader_version] : null,
    ])));

    const submitted = a.code !== null && a.code !== undefined
      ? section("Submitted code", el("pre", { class: "code", id: "attempt-code" }, el("code", {}, a.code)))
      : section("Answer", el("pre", { class: "code", id: "attempt-answer" }, JSON.stringify(a.answer, null, 2)));
    root.append(submitted);

    if (Array.isArray(a.feedback) && a.feedback.length) {
      root.append(section("Feedback", el("ul", { class: "feedback", id: "attempt-feedback" }, a.feedback.map(feedbackItem))));
    }

    const checks = a.checks || [];
    if (checks.length) {
      root.append(section("Checks", table(["", "Check", "Weight", "Message", "Likely cause"], checks.map((c) =>
        el("tr", { class: c.passed ? "passed" : "failed", dataset: { check: c.name } },
          el("td", {}, el("span", { class: "badge " + (c.passed ? "b-passed" : "b-failed") }, c.passed ? "passed" : "failed")),
          el("td", {}, el("code", {}, c.name)),
          el("td", { class: "num" }, fmtNumber(c.weight)),
          el("td", { class: "message" }, c.message || ""),
          el("td", {}, c.likely_cause || ""))), { class: "checks", caption: "Checks", captionHidden: true })));
    }

    if (a.error && typeof a.error === "object" && Object.keys(a.error).length) {
      root.append(section("Error raised by the submission", a.error.message ? el("p", { class: "message" }, a.error.message) : null,
        el("pre", { class: "code output" }, a.error.traceback || prettyJson(a.error))));
    }
    if (Array.isArray(a.diagnostics) && a.diagnostics.length) {
      const value = (v) => v === undefined || v === null ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v);
      root.append(section("Diagnostics",
        table(["Check", "Input", "Case", "Where", "Numerical", "Analytical", "Hint"], a.diagnostics.map((d) => el("tr", {},
          el("td", {}, el("code", {}, value(d.check))), el("td", {}, value(d.input)), el("td", {}, value(d.case)),
          el("td", {}, value(d.index)), el("td", { class: "num" }, value(d.numerical)),
          el("td", { class: "num" }, value(d.analytical)), el("td", { class: "message" }, d.hint || "")))),
        el("details", { class: "chart-table" }, el("summary", {}, "Every diagnostic in full (JSON)"),
          el("pre", { class: "code output", id: "attempt-diagnostics" }, prettyJson(a.diagnostics)))));
    }

    const output = a.output || {};
    if (output.stdout || output.stderr) {
      root.append(section("Output",
        el("h3", {}, "stdout"), el("pre", { class: "code output" }, output.stdout || "(empty)"),
        el("h3", {}, "stderr"), el("pre", { class: "code output" }, output.stderr || "(empty)")));
    }

    const timings = a.timings || {};
    const phases = [["Submitted", timeEl(timings.created_at || a.created_at)],
      ["Grading started", timeEl(timings.started_at || a.started_at)], ["Graded", timeEl(timings.graded_at || a.graded_at)],
      ["Waited in the queue", fmtMs(timings.queued_ms)], ["Grading took", fmtMs(timings.grading_ms)],
      a.code !== null && a.code !== undefined && a.tries !== undefined ? ["Worker claims", a.tries] : null];
    const report = timings.report || {};
    root.append(section("Timings", dl(phases),
      Object.keys(report).length ? el("div", {}, el("h3", {}, "The judge's timings"), table(["Phase", "Time"], Object.entries(report).map(([k, v]) =>
        el("tr", {}, el("td", {}, el("code", {}, k)), el("td", { class: "num" }, typeof v === "number" ? fmtTiming(k, v) : prettyJson(v)))))) : null));

    root.append(section("Delivery",
      el("h3", {}, "LMS grade passback"),
      (a.passbacks || []).length ? table(["Status", "Tries", "Score sent", "Last HTTP status", "Last error", "Delivered"],
        a.passbacks.map((p) => el("tr", {}, el("td", {}, badge(p.status)), el("td", { class: "num" }, p.tries),
          el("td", { class: "num" }, fmtSentScore(p.sent_score)), el("td", { class: "num" }, p.last_status_code || "—"),
          el("td", { class: "message" }, p.last_error || ""), el("td", {}, timeEl(p.delivered_at))))) : empty("No LMS passback for this attempt."),
      el("h3", {}, "Webhooks"),
      (a.webhook_deliveries || []).length ? table(["Event", "Endpoint", "Status", "Tries", "Last HTTP status", "Last error", "Delivered"],
        a.webhook_deliveries.map((w) => el("tr", {}, el("td", {}, w.event_type), el("td", { class: "num" }, w.endpoint_id),
          el("td", {}, badge(w.status)), el("td", { class: "num" }, w.tries), el("td", { class: "num" }, w.last_status_code || "—"),
          el("td", { class: "message" }, w.last_error || ""), el("td", {}, timeEl(w.delivered_at))))) : empty("No webhook deliveries.")));

    const overrides = a.overrides || [];
    root.append(section("Overrides",
      overrides.length ? table(["When", "Who", "Old score", "New score", "Reason"], overrides.map((o) =>
        el("tr", { dataset: { override: o.id } }, el("td", {}, timeEl(o.created_at)), el("td", {}, o.actor),
          el("td", { class: "num" }, fmtScore(o.old_score)), el("td", { class: "num" }, fmtScore(o.new_score)),
          el("td", { class: "message" }, o.reason))), { class: "overrides", caption: "Score overrides of this attempt", captionHidden: true })
        : empty("The score has not been overridden."),
      overrideForm(a)));

    const events = a.events || [];
    if (events.length) {
      root.append(section("Events", table(["When", "Type", "Grade"], events.map((ev) => el("tr", {},
        el("td", {}, timeEl(ev.created_at)), el("td", {}, el("code", {}, ev.type)),
        el("td", {}, ev.data ? "score " + fmtScore(ev.data.score) + (ev.data.status ? " · " + ev.data.status : "") : "—"))))));
    }
  }

  function feedbackItem(f) {
    if (typeof f === "string") return el("li", { class: "advice" }, el("p", {}, f));
    if (!f || typeof f !== "object") return el("li", {}, el("p", {}, prettyJson(f)));
    const what = f.choice !== undefined ? f.choice : f.answer !== undefined ? prettyJson(f.answer) : null;
    return el("li", { class: f.correct === true ? "right" : f.correct === false ? "wrong" : "" },
      el("div", { class: "feedback-head" },
        what !== null ? el("code", {}, what) : null,
        f.selected !== undefined ? el("span", { class: "muted" }, f.selected ? "picked" : "not picked") : null,
        f.correct !== undefined ? el("span", { class: "badge " + (f.correct ? "b-passed" : "b-failed") },
          f.correct ? "a correct choice" : "an incorrect choice") : null),
      el("p", {}, f.feedback || f.message || ""));
  }

  function fmtMs(ms) {
    return ms === null || ms === undefined ? null : fmtDuration(Number(ms) / 1000);
  }

  function fmtSentScore(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "object") {
      if (v.scoreGiven !== undefined) return fmtNumber(v.scoreGiven) + (v.scoreMaximum !== undefined ? " / " + fmtNumber(v.scoreMaximum) : "");
      return prettyJson(v);
    }
    return fmtScore(v);
  }

  function fmtTiming(name, value) {
    if (/_ms$|ms$/.test(name)) return fmtNumber(value, 1) + " ms";
    return fmtDuration(value);
  }

  function overrideForm(a) {
    const error = el("div", { class: "form-error", "aria-live": "assertive" });
    const score = el("input", { id: "override-score", name: "score", type: "number", min: 0, max: 1, step: "0.01",
      required: true, inputmode: "decimal", value: a.score === null || a.score === undefined ? "" : String(Math.round(a.score * 10000) / 10000) });
    const reason = el("textarea", { id: "override-reason", name: "reason", rows: 2, required: true, maxlength: 2000,
      placeholder: "Why the score changes: kept in the audit log" });
    const submit = el("button", { type: "submit" }, "Override score");
    const form = el("form", { class: "override", id: "override-form", novalidate: true },
      el("h3", {}, "Override the score"),
      el("p", { class: "muted" }, "The grader's score is kept; the new score counts. The change is logged with your key's name, the time and the reason."),
      el("div", { class: "field-row" },
        el("div", { class: "field" }, el("label", { for: "override-score" }, "New score (0–1)"), score),
        el("div", { class: "field grow" }, el("label", { for: "override-reason" }, "Reason (required)"), reason),
        el("div", { class: "field buttons" }, submit)),
      error);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      error.replaceChildren();
      const value = Number(score.value);
      if (score.value.trim() === "" || !Number.isFinite(value) || value < 0 || value > 1) {
        error.append(el("p", { class: "problem" }, "The score is a number from 0 to 1."));
        score.focus();
        return;
      }
      if (!reason.value.trim()) {
        error.append(el("p", { class: "problem" }, "Give a reason: it goes into the audit log."));
        reason.focus();
        return;
      }
      submit.disabled = true;
      try {
        await post(API + "/attempts/" + enc(a.id) + "/override", { score: value, reason: reason.value.trim() });
        toast("Score set to " + fmtScore(value));
        render();
      } catch (e) {
        error.append(problemBox(e, { optional: e.problem && e.problem.detail ? null : "Overrides are not available on this server yet." }));
        submit.disabled = false;
      }
    });
    return form;
  }

  // ---------------------------------------------------------------- learners

  async function viewLearner(root, ctx, learner) {
    document.title = learner + " · gradquiz dashboard";
    const client = ctx.params.get("client") || "";
    root.append(el("div", { class: "page-head" },
      el("div", {}, el("p", { class: "crumbs" }, "Learner", client ? " of " + client : ""), el("h1", { class: "learner" }, learner)),
      el("div", { class: "actions" }, link("#/attempts" + query({ learner, client }), "All attempts"))));
    const box = section("Progress", loading());
    root.append(box);
    try {
      const { data } = await get(API + "/learners/" + enc(learner) + "/progress" + query({ client }));
      const rows = (data && data.exercises) || [];
      box.replaceChildren(el("h2", {}, "Progress"), rows.length ? table(["Exercise", "Attempts", "Best", "Latest", "Passed",
        "First attempt", "First passed", "Attempts to pass"], rows.map((r) => el("tr", {},
        el("td", {}, link("#/attempts" + query({ exercise: r.exercise, learner, client }), r.exercise)),
        el("td", { class: "num" }, fmtNumber(r.attempts)), el("td", { class: "num" }, fmtScore(r.best_score)),
        el("td", { class: "num" }, fmtScore(r.latest_score)), el("td", {}, r.passed ? badge("passed", VERDICTS) : "—"),
        el("td", {}, timeEl(r.first_attempt_at)), el("td", {}, timeEl(r.first_passed_at)),
        el("td", { class: "num" }, fmtNumber(r.attempts_to_first_pass))))) : empty("No attempts."));
    } catch (e) {
      box.replaceChildren(el("h2", {}, "Progress"), problemBox(e, { optional: "Learner progress is not available on this server yet." }));
    }
  }

  // ---------------------------------------------------------------- regrades

  async function startRegrade(target, button) {
    button.disabled = true;
    try {
      const { data } = await post(API + "/regrades", target);
      toast("Dry run started: nothing changes until you apply it.");
      location.hash = "#/regrades/" + enc(data.id);
    } catch (e) {
      toast((e.problem.title || "Error") + ": " + (e.status === 404 && !e.problem.detail
        ? "regrades are not available on this server yet" : e.problem.detail || e.status), "error");
      button.disabled = false;
    }
  }

  async function viewRegrades(root) {
    document.title = "Regrades · gradquiz dashboard";
    root.append(el("div", { class: "page-head" }, el("h1", {}, "Regrades")),
      el("p", { class: "muted" }, "Start a regrade from an exercise or an attempt. It first runs as a dry run on the grading workers and shows the score changes it would make; nothing changes until you apply it."));
    const box = section("Recent regrades", loading());
    root.append(box);
    try {
      const { items } = listOf(await get(API + "/regrades"));
      box.replaceChildren(el("h2", {}, "Recent regrades"), items.length ? table(["Started", "Exercise", "Scope", "Status",
        "Graded", "Up", "Down", "Unchanged"], items.map((r) => el("tr", {},
        el("td", {}, link("#/regrades/" + enc(r.id), timeEl(r.created_at))),
        el("td", {}, link("#/exercises/" + enc(r.exercise), r.exercise)),
        el("td", {}, r.attempt ? link("#/attempts/" + enc(r.attempt), "attempt " + shortId(r.attempt)) : "every attempt"),
        el("td", {}, badge(r.status, REGRADE_STATUSES)),
        el("td", { class: "num" }, fmtNumber(r.graded) + " / " + fmtNumber(r.total)),
        el("td", { class: "num" }, fmtNumber(r.summary && r.summary.up)),
        el("td", { class: "num" }, fmtNumber(r.summary && r.summary.down)),
        el("td", { class: "num" }, fmtNumber(r.summary && r.summary.unchanged))))) : empty("No regrades yet."));
    } catch (e) {
      box.replaceChildren(el("h2", {}, "Recent regrades"), problemBox(e, { optional: "Regrades are not available on this server yet." }));
    }
  }

  async function viewRegrade(root, ctx, id) {
    document.title = "Regrade " + shortId(id) + " · gradquiz dashboard";
    const head = el("div", { class: "page-head" },
      el("div", {}, el("p", { class: "crumbs" }, link("#/regrades", "Regrades")), el("h1", {}, "Regrade ", el("code", { title: id }, shortId(id)))));
    const body = el("div", { id: "regrade" }, loading("Starting the dry run…"));
    root.append(head, body);
    let confirming = false;

    async function tick() {
      if (!ctx.alive()) return;
      let r;
      try {
        r = (await get(API + "/regrades/" + enc(id))).data;
      } catch (e) {
        if (!ctx.alive()) return;
        body.replaceChildren(problemBox(e, { optional: "Regrades are not available on this server yet." }));
        return;
      }
      if (!ctx.alive()) return;
      if (!confirming) body.replaceChildren(...regradeView(r, () => { confirming = true; }, () => { confirming = false; tick(); }));
      if (r.status === "dry_run" || r.status === "applying") setTimeout(tick, POLL_MS);
    }
    await tick();
  }

  function regradeView(r, onConfirm, onDone) {
    const parts = [];
    const summary = r.summary || {};
    parts.push(el("section", { class: "card" }, dl([
      ["Exercise", link("#/exercises/" + enc(r.exercise), r.exercise)],
      ["Scope", r.attempt ? link("#/attempts/" + enc(r.attempt), "attempt " + shortId(r.attempt)) : "every attempt of the exercise"],
      ["Status", el("span", { id: "regrade-status" }, badge(r.status, REGRADE_STATUSES))],
      ["Graded", fmtNumber(r.graded) + " of " + fmtNumber(r.total)],
      ["Not regraded (errors)", Array.isArray(r.errors) ? r.errors.length : fmtNumber(r.errors || 0)],
      ["Requested by", r.requested_by],
      r.exercise_version !== undefined ? ["Graded against", "version " + r.exercise_version] : null,
      r.created_at ? ["Started", timeEl(r.created_at)] : null,
      r.applied_at ? ["Applied", el("span", {}, timeEl(r.applied_at), r.applied_by ? " by " + r.applied_by : "")] : null,
      r.kept_overrides ? ["Overridden scores kept", fmtNumber(r.kept_overrides)] : null,
    ])));
    if (r.status === "dry_run") {
      parts.push(el("section", { class: "card" }, el("p", {}, "The grading workers are grading the attempts again (dry run)…"),
        el("progress", { max: Math.max(1, r.total || 0), value: r.graded || 0, "aria-label": "attempts graded" })));
      return parts;
    }
    const up = summary.up || 0, down = summary.down || 0, unchanged = summary.unchanged || 0;
    const diff = el("section", { class: "card", id: "regrade-diff" }, el("h2", {}, r.status === "applied" ? "Applied changes" : "Dry run: what would change"),
      el("div", { class: "cards" },
        el("div", { class: "stat up" }, el("span", { class: "stat-value", id: "regrade-up" }, up), el("span", { class: "stat-label" }, "go up")),
        el("div", { class: "stat down" }, el("span", { class: "stat-value", id: "regrade-down" }, down), el("span", { class: "stat-label" }, "go down")),
        el("div", { class: "stat" }, el("span", { class: "stat-value", id: "regrade-unchanged" }, unchanged), el("span", { class: "stat-label" }, "unchanged"))));
    const changes = r.changes || [];
    if (changes.length) {
      diff.append(table(["Attempt", "Learner", "Client", "Old score", "New score", "Change", ""], changes.map((c) => {
        const delta = (Number(c.new_score) || 0) - (Number(c.old_score) || 0);
        return el("tr", { class: delta > 0 ? "up" : "down", dataset: { attempt: c.attempt } },
          el("td", {}, link("#/attempts/" + enc(c.attempt), el("code", {}, shortId(c.attempt)))),
          el("td", { class: "learner" }, c.learner),
          el("td", {}, c.client || ""),
          el("td", { class: "num" }, fmtScore(c.old_score)),
          el("td", { class: "num" }, fmtScore(c.new_score)),
          el("td", { class: "num delta" }, (delta > 0 ? "▲ +" : "▼ ") + fmtScore(delta)),
          el("td", {}, c.overridden ? el("span", { class: "badge b-overridden", title: "The override stays; the grader's score changes" }, "overridden") : null,
            c.applied ? el("span", { class: "badge b-applied" }, "applied") : null));
      }), { class: "changes", caption: "Attempts whose score changes", captionHidden: true }));
      if (changes.length < up + down) diff.append(el("p", { class: "muted" }, "The first " + changes.length + " changes are listed."));
    } else {
      diff.append(empty("No score would change."));
    }
    parts.push(diff);
    if (Array.isArray(r.error_items) && r.error_items.length) {
      parts.push(section("Not regraded", table(["Attempt", "Why", "Message"], r.error_items.map((e) => el("tr", {},
        el("td", {}, link("#/attempts/" + enc(e.attempt), el("code", {}, shortId(e.attempt)))),
        el("td", {}, badge(e.status)), el("td", { class: "message" }, e.message || ""))))));
    }
    if (r.status === "ready") {
      const box = el("div", { class: "apply" });
      const apply = el("button", { type: "button", id: "regrade-apply" }, "Apply " + (up + down) + (up + down === 1 ? " change" : " changes") + "…");
      apply.addEventListener("click", () => {
        onConfirm();
        const yes = el("button", { type: "button", class: "danger", id: "regrade-confirm" }, "Yes, change the scores");
        const no = el("button", { type: "button", class: "secondary" }, "Cancel");
        box.replaceChildren(el("p", {}, "Store the new grades? Learners' scores change, and webhooks and LMS passback are sent for each changed attempt. Overridden scores stay as they are set."), yes, " ", no);
        yes.focus();
        no.addEventListener("click", onDone);
        yes.addEventListener("click", async () => {
          yes.disabled = true;
          try {
            await post(API + "/regrades/" + enc(r.id) + "/apply");
            toast("Regrade applied.");
          } catch (e) {
            toast((e.problem.title || "Error") + ": " + (e.problem.detail || e.status), "error");
          }
          onDone();
        });
      });
      box.append(apply);
      parts.push(el("section", { class: "card" }, box));
    }
    return parts;
  }

  // ---------------------------------------------------------------- audit log

  async function viewOverrides(root, ctx) {
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

  // ---------------------------------------------------------------- router

  const ROUTES = [
    [/^\/?$/, viewOverview, "overview"],
    [/^\/exercises\/([^/]+)$/, viewExercise, "overview"],
    [/^\/attempts$/, viewAttempts, "attempts"],
    [/^\/attempts\/([^/]+)$/, viewAttempt, "attempts"],
    [/^\/learners\/([^/]+)$/, viewLearner, "attempts"],
    [/^\/regrades$/, viewRegrades, "regrades"],
    [/^\/regrades\/([^/]+)$/, viewRegrade, "regrades"],
    [/^\/overrides$/, viewOverrides, "overrides"],
  ];

  async function render() {
    const token = ++navigation;
    if (!apiKey()) { showSignin(); return; }
    $("signin").hidden = true;
    $("topbar").hidden = false;
    const key = apiKey();
    $("whoami").textContent = "key " + key.slice(0, 10) + "…";
    const hash = location.hash.replace(/^#/, "");
    const [path, qs] = (hash || "/").split("?");
    const match = ROUTES.map(([re, view, nav]) => [re.exec(path), view, nav]).find(([m]) => m);
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

  function start() {
    $("signin-form").addEventListener("submit", signIn);
    $("sign-out").addEventListener("click", () => { signOut(); location.hash = "#/"; });
    window.addEventListener("hashchange", () => { window.scrollTo(0, 0); render(); });
    render();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
