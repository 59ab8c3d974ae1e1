// The learner's earlier attempts at the exercise, newest first, each opening on its answer, its
// grade and a button that puts the answer back.

import { el, clear, uid } from "../dom.js";
import { percent } from "../format.js";
import { errorText, section } from "./common.js";
import { renderCodeGrade, renderQuizGrade } from "./results.js";
import { choiceTextOf } from "./quiz-answer.js";
import { statusTitle } from "./terms.js";

// What a finished attempt's panel shows: its answer, the button that puts it back, its grade.
function attemptDetail(attempt, number, detail, restore) {
  const isCode = detail.kind === "code";
  const again = el("button", { type: "button", class: "secondary" }, isCode ? "Restore into the editor" : "Put this answer back in the form");
  again.addEventListener("click", () => restore(attempt));
  const answer = isCode
    ? el("pre", { class: "code", tabindex: "0", "aria-label": `Code of attempt ${number}` }, attempt.code || "")
    : el("p", {}, "Answer: ", el("code", {}, JSON.stringify(attempt.answer)));
  let grade = el("p", {}, `This attempt is ${attempt.status}.`);
  if (attempt.status === "graded" || attempt.status === "error") {
    grade = isCode ? renderCodeGrade(attempt) : renderQuizGrade(attempt, choiceTextOf(detail));
  }
  return [answer, again, grade];
}

// One earlier attempt: a button that opens its panel (filled the first time it opens). It reads
// "Attempt 2: 0% · Does not parse, <when>": a code attempt that stopped short of its checks says why
// by its status's short title from the terms table (none when the table lacks it; a passed or failed
// one's score says enough); an attempt without a score, its state in words.
function attemptItem(attempt, number, detail, restore) {
  const when = new Date(attempt.created_at).toLocaleString();
  const unscored = attempt.score === null || attempt.score === undefined;
  const reported = attempt.report && attempt.report.status;
  const title = !unscored && reported && reported !== "passed" && reported !== "failed" ? statusTitle(reported) : null;
  const score = unscored ? (attempt.status === "error" ? "not graded" : attempt.status)
    : percent(attempt.score) + (title ? ` · ${title}` : "");
  const panelId = uid("attempt");
  const open = el("button", { type: "button", class: "link", "aria-expanded": "false", "aria-controls": panelId },
    `Attempt ${number}: ${score}${attempt.late ? " (late)" : ""}, ${when}`);
  const panel = el("div", { id: panelId, class: "attempt-detail", hidden: true });
  open.addEventListener("click", () => {
    const expanded = open.getAttribute("aria-expanded") === "true";
    open.setAttribute("aria-expanded", String(!expanded));
    panel.hidden = expanded;
    if (!expanded && !panel.childElementCount) panel.append(...attemptDetail(attempt, number, detail, restore));
  });
  return el("li", { dataset: { attempt: attempt.id } }, open, panel);
}

// The count from the X-Pagination header, or `fallback` without one.
function totalOf(headers, fallback) {
  try {
    return JSON.parse(headers.get("X-Pagination") || "{}").total ?? fallback;
  } catch {
    return fallback; // no pagination header
  }
}

// Whether an attempt's answer says the explanation is shown to the learner now (its standing says
// so; an answer without one: its explanation, or a right choice named that the learner missed).
function explanationShown(attempt) {
  if (attempt.standing && typeof attempt.standing.explanation_shown === "boolean") return attempt.standing.explanation_shown;
  return Boolean(attempt.explanation) || (attempt.feedback || []).some((f) => f.choice !== undefined && f.selected === false);
}

// The section of earlier attempts; load() fills it for the learner, add(attempt) puts a submission's
// answer on top without asking again (one request fewer per submission), except when that answer
// shows the explanation and the listed attempts were loaded without it: then it loads them again,
// as the earlier grades may now show their explanation and the right choices.
// restore(attempt) puts an attempt's answer back where the learner writes one.
export function earlierAttempts({ api, session, detail, restore, preview = false }) {
  const list = el("ul", { class: "attempts" });
  const status = el("p", { class: "muted" });
  let loads = 0; // only the latest load fills the list
  let loaded = null; // after a load: {total, shown} (how many, and whether the explanation was shown)

  function describe(total) {
    status.textContent = total ? `${total} attempt${total === 1 ? "" : "s"}, newest first.` : "No attempts yet.";
  }

  async function load() {
    if (preview) return; // preview attempts are nobody's: there is no history to list
    const current = ++loads;
    loaded = null;
    clear(list);
    if (session.state !== "active") {
      status.textContent = "Sign in to see your earlier attempts.";
      return;
    }
    if (!session.learner) {
      status.textContent = "Your token does not say who you are, so earlier attempts cannot be listed.";
      return;
    }
    status.textContent = "Loading…";
    try {
      const { data, headers } = await api.call("GET",
        `learners/${encodeURIComponent(session.learner)}/attempts?exercise=${encodeURIComponent(detail.slug)}&page_size=50`);
      if (current !== loads) return;
      const attempts = data.attempts || [];
      const total = totalOf(headers, attempts.length);
      describe(total);
      attempts.forEach((attempt, index) => list.append(attemptItem(attempt, total - index, detail, restore)));
      loaded = { total, shown: attempts.some(explanationShown) };
    } catch (error) {
      status.textContent = `Your earlier attempts could not be loaded. ${errorText(error)}`;
    }
  }

  async function add(attempt) {
    if (preview) return;
    const shown = explanationShown(attempt);
    if (!loaded || !attempt || !attempt.id || (shown && !loaded.shown && loaded.total > 0)) {
      await load();
      if (loaded && shown) loaded.shown = true; // loaded as it is shown now (an exercise with no explanation text too)
      return;
    }
    if (list.querySelector(`li[data-attempt="${CSS.escape(String(attempt.id))}"]`)) return; // listed already
    loaded.total += 1;
    loaded.shown = loaded.shown || shown;
    describe(loaded.total);
    list.prepend(attemptItem(attempt, loaded.total, detail, restore));
  }

  return { element: preview ? null : section("Your earlier attempts", status, list), load, add };
}
