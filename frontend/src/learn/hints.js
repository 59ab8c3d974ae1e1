// The exercise's hints, one at a time: a button shows the next, and says when none is left.

import { el } from "../dom.js";
import { markdownBlock } from "./markdown.js";
import { section } from "./common.js";

// The panel, or null for an exercise without hints.
export function hintsPanel(hints) {
  if (!hints.length) return null;
  const list = el("ol", { class: "hints", "aria-live": "polite" });
  const button = el("button", { type: "button", class: "secondary" });
  let shown = 0;
  const label = () => {
    button.textContent = shown === 0 ? `Show a hint (${hints.length} in all)` : `Show hint ${shown + 1} of ${hints.length}`;
  };
  button.addEventListener("click", () => {
    const item = el("li", { tabindex: "-1" }, el("span", { class: "visually-hidden" }, `Hint ${shown + 1}: `), markdownBlock(hints[shown]));
    list.append(item);
    shown += 1;
    if (shown >= hints.length) {
      button.remove();
      list.after(el("p", { class: "muted" }, "That was the last hint."));
    } else label();
    item.focus();
  });
  label();
  return section("Hints", list, button);
}
