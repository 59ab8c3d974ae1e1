// The learner-facing words about grading (service/grading/terms.py): what a check, a likely cause,
// an error stage and a report status are called. learn/base.html embeds the table as
// <script type="application/json" id="gradquiz-terms"> (the same as GET /api/v1/terms) in every
// learner page (lesson, exercise, assignment, shell; LTI launches render the same templates); it is
// read once. A name the table lacks (a broken block, a status newer than the page) is never shown:
// its check, cause or status is told by its message alone.

let table = null;

function byName(list) {
  const map = new Map();
  for (const item of Array.isArray(list) ? list : []) if (item && typeof item.name === "string") map.set(item.name, item);
  return map;
}

export function loadTerms(source) {
  let data = source;
  if (data === undefined) {
    try {
      const block = document.getElementById("gradquiz-terms");
      data = block ? JSON.parse(block.textContent) : null;
    } catch {
      data = null; // a broken block names nothing: the page falls back to messages
    }
  }
  data = data || {};
  table = { checks: byName(data.checks), causes: byName(data.causes), stages: byName(data.stages), statuses: byName(data.statuses) };
  return table;
}

function terms() {
  return table || loadTerms();
}

// A check's title ("Numerical gradient check"), or null when the table does not name it.
export function checkTitle(name) {
  const term = terms().checks.get(name);
  return term && term.title ? term.title : null;
}

// A likely cause as {title, advice}, or null.
export function causeTerm(name) {
  const term = terms().causes.get(name);
  return term && (term.title || term.advice) ? term : null;
}

// An error stage in words ("while Python read your code"), or null.
export function stageWords(name) {
  const term = terms().stages.get(name);
  return term && term.words ? term.words : null;
}

// A report status as a short title ("Does not parse"), or null.
export function statusTitle(name) {
  const term = terms().statuses.get(name);
  return term && term.title ? term.title : null;
}

// A report status as a sentence ("Your code does not parse."), or null.
export function statusVerdict(name) {
  const term = terms().statuses.get(name);
  return term && term.verdict ? term.verdict : null;
}
