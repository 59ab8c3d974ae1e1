/* The words learners read about grading, for staff too (GET /api/v1/terms, service/grading/terms.py):
 * what a check and a likely cause are called. Fetched once per page load and kept; a server without
 * the table (or a name it lacks) shows the name as the grader stores it. */

let table = { checks: new Map(), causes: new Map() };
let loading = null;

function byName(list) {
  return new Map((Array.isArray(list) ? list : []).filter((t) => t && typeof t.name === "string").map((t) => [t.name, t]));
}

/** Loads the table (once: later calls share the first's answer); never rejects. */
export function loadTerms() {
  if (!loading) {
    loading = fetch("/api/v1/terms", { headers: { Accept: "application/json" }, credentials: "omit" })
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null)
      .then((data) => {
        table = { checks: byName(data && data.checks), causes: byName(data && data.causes) };
        return table;
      });
  }
  return loading;
}

/** A check's title ("Numerical gradient check"), or its name when the table lacks it. */
export function checkTitle(name) {
  const term = table.checks.get(name);
  return term && term.title ? term.title : String(name ?? "");
}

/** A likely cause's title ("backward ignores grad_output"), or its name when the table lacks it. */
export function causeTitle(name) {
  if (name === null || name === undefined || name === "") return "";
  const term = table.causes.get(name);
  return term && term.title ? term.title : String(name);
}

/** Every cause the table names, as [name, title] (for a filter's choices); empty without the table. */
export function causeChoices() {
  return [...table.causes.values()].map((t) => [t.name, t.title || t.name]);
}
