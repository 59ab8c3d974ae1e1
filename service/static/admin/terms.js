/* The words learners read about grading, for staff too (GET /api/v1/terms, service/grading/terms.py):
 * what a check, a likely cause and a report's status are called. Fetched once per page load and
 * kept. A name the table lacks (or a server without the table) is shown as words, its underscores
 * as spaces, never as the identifier the grader stores; the stored name stays in a title attribute. */

let table = { checks: new Map(), causes: new Map(), statuses: new Map() };
let loading = null;

function byName(list) {
  return new Map((Array.isArray(list) ? list : []).filter((t) => t && typeof t.name === "string").map((t) => [t.name, t]));
}

/** A name the table lacks, as words ("not_gradable" → "not gradable"). */
export function words(name) {
  return String(name ?? "").replace(/_/g, " ");
}

/** Loads the table (once: later calls share the first's answer); never rejects. */
export function loadTerms() {
  if (!loading) {
    loading = fetch("/api/v1/terms", { headers: { Accept: "application/json" }, credentials: "omit" })
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null)
      .then((data) => {
        table = { checks: byName(data && data.checks), causes: byName(data && data.causes),
          statuses: byName(data && data.statuses) };
        return table;
      });
  }
  return loading;
}

/** A check's title ("Numerical gradient check"). */
export function checkTitle(name) {
  const term = table.checks.get(name);
  return term && term.title ? term.title : words(name);
}

/** A likely cause's title ("backward ignores grad_output"); "" for none. */
export function causeTitle(name) {
  if (name === null || name === undefined || name === "") return "";
  const term = table.causes.get(name);
  return term && term.title ? term.title : words(name);
}

/** A report's status, or an attempt's verdict, as a short title ("Does not parse"). */
export function statusTitle(name) {
  const term = table.statuses.get(name);
  return term && term.title ? term.title : words(name);
}

/** Every cause the table names, as [name, title] (for a filter's choices); empty without the table. */
export function causeChoices() {
  return [...table.causes.values()].map((t) => [t.name, t.title || words(t.name)]);
}
