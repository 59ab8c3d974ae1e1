// What the exercise page may do for the learner now: the buttons that need a signed-in learner
// (Run, Submit) and the rules as they stand for the learner (standing.js's panel). A button is off
// while the page is at work, while the session cannot act on this exercise, and when the standing
// says so: its refusal keeps Submit off, its runs: false keeps Run off.

import { errorText } from "./common.js";
import { standingPanel } from "./standing.js";

export function exerciseActions({ api, session, slug, exercise }) {
  const panel = standingPanel();
  const buttons = new Map(); // button -> "run" | "submit"
  let standing = null; // the latest known

  const signedInHere = () => session.state === "active" && session.allows(slug);

  function allowed(kind) {
    if (!signedInHere()) return false;
    if (kind === "submit") return !(standing && standing.refused);
    return !(standing && standing.rules && standing.rules.runs === false);
  }

  function setBusy(busy) {
    for (const [button, kind] of buttons) button.disabled = busy || !allowed(kind);
  }

  function showStanding(latest) {
    standing = latest || null;
    panel.show(standing);
    setBusy(false);
  }

  async function loadStanding() {
    // A preview is counted for nobody: it has no standing to show.
    if (!signedInHere() || exercise.preview) return showStanding(null);
    try {
      const { data } = await api.call("GET", `${exercise.base}/standing`);
      showStanding(data);
    } catch {
      showStanding(null); // the rules still hold on Submit: its refusal says why
    }
  }

  // `work` with the buttons off. Its failure goes on the status line as "<what> failed. <why>"; a
  // refused run or submission (problem+json /problems/attempt-refused/...) carries the standing.
  async function perform(what, status, work) {
    setBusy(true);
    try {
      await work();
    } catch (error) {
      status.textContent = `${what} failed. ${errorText(error)}`;
      if (error && error.problem && error.problem.standing) showStanding(error.problem.standing);
    } finally {
      setBusy(false);
    }
  }

  return {
    element: panel.element,
    add: (button, kind) => buttons.set(button, kind),
    setBusy,
    showStanding,
    loadStanding,
    perform,
  };
}
