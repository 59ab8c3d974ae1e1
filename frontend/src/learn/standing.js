// The exercise's rules as they stand for the learner (GET exercises/{slug}/standing, and the
// `standing` of each attempt response): attempts used and left, when it opens and is due, what
// late work costs, what the next attempt counts at most, and why an attempt would be refused.
// Everything from the server goes on the page as text.

import { el, clear, uid } from "../dom.js";
import { percent } from "../format.js";

const when = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

// The fraction an attempt with these penalties counts at most ([{reason, factor}]).
export function factorOf(penalties) {
  return (penalties || []).reduce((product, p) => product * p.factor, 1);
}

function lines(standing) {
  const rules = standing.rules;
  const out = [];
  const left = standing.attempts_left;
  out.push(["Attempts", left === null || left === undefined
    ? `${standing.attempts_used} used, no limit`
    : `${standing.attempts_used} of ${rules.max_attempts} used, ${left} left`]);
  if (rules.available_from && new Date(rules.available_from) > new Date()) out.push(["Opens", when(rules.available_from)]);
  if (rules.due_at) {
    const grace = rules.grace_minutes ? ` (with ${rules.grace_minutes} minutes' grace)` : "";
    let late = "Late attempts are not accepted.";
    if (rules.late === "accept") late = rules.late_penalty ? `Late attempts count ${percent(1 - rules.late_penalty)} of their score.` : "Late attempts are accepted, marked late.";
    out.push(["Due", `${when(rules.due_at)}${grace}. ${late}`]);
  }
  const next = factorOf(standing.next_penalties);
  if (next < 1 && !standing.refused) out.push(["Next attempt", `counts at most ${percent(next)} of its score.`]);
  // The rules the server puts in words for learners ("Explanation": when it is shown).
  for (const note of standing.rule_notes || []) out.push([note.term, note.text]);
  return out;
}

// A panel that shows a standing; show(null) hides it (no learner, or nothing known yet).
export function standingPanel() {
  const list = el("dl", { class: "standing" });
  const refused = el("p", { class: "notice warn", role: "alert", hidden: true });
  const heading = uid("standing");
  const element = el("section", { class: "panel standing-box", "aria-labelledby": heading, hidden: true },
    el("h2", { id: heading }, "Attempts and due date"), list, refused);
  function show(standing) {
    clear(list);
    if (!standing) {
      element.hidden = true;
      return;
    }
    for (const [term, text] of lines(standing)) list.append(el("dt", {}, term), el("dd", {}, text));
    refused.hidden = !standing.refused;
    refused.textContent = standing.refused ? standing.refused.message : "";
    element.hidden = false;
  }
  return { element, show };
}

// What the rules did to one attempt's score, or null: "Counted 80% of the grader's 100%: attempt 2
// counts at most 80%." and "Submitted late." (a scoring policy's cap: results.js, cappedNote).
export function penaltyNote(attempt) {
  const parts = [];
  if (attempt.late) parts.push("Submitted late.");
  const penalties = attempt.penalties || [];
  if (penalties.length && attempt.raw_score !== null && attempt.raw_score !== undefined) {
    const why = penalties.map((p) => (p.reason === "late"
      ? `late work counts ${percent(p.factor)}`
      : `attempt ${attempt.attempt_number ?? ""} counts at most ${percent(p.factor)}`.replace("  ", " ")));
    parts.push(`Counted ${percent(attempt.score ?? 0)} of the grader's ${percent(attempt.raw_score)}: ${why.join("; ")}.`);
  }
  return parts.length ? el("p", { class: "penalty" }, parts.join(" ")) : null;
}
