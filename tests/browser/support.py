"""Helpers of the browser tests: Playwright's expect, a screenshot, the dashboard's sign-in, an attempt
sent through the API, the identifiers of the code a page shows."""

from __future__ import annotations

import re
from pathlib import Path

from service.grading.terms import code_names
from tests.browser.conftest import SCREENSHOTS
from tests.helpers import bearer


def expect(target):
    """Playwright's auto-waiting assertions (imported here so that a missing package fails in the
    fixture, with what to install)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def shot(page, name: str, element=None) -> Path:
    """build/screenshots/<name>.png: the whole page, or one element of a long one."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if element is not None:
        element.screenshot(path=path)
    else:
        page.screenshot(path=path, full_page=True)
    return path


def submit_attempt(api, key: str, slug: str, learner: str, **body) -> dict:
    response = api.post(f"/api/v1/exercises/{slug}/attempts", json={"learner": learner, **body}, headers=bearer(key))
    assert response.status_code in (201, 202), response.json
    return response.json


def sign_in(page, key: str) -> None:
    page.goto("/admin")
    page.fill("#api-key", key)
    page.click("#signin-submit")
    page.wait_for_selector("#topbar:not([hidden])")


#: The page's visible text (what a person reads: document.body.innerText), without the code editors
#: (.cm-editor) and <pre> blocks (a learner's code, output, tracebacks: the learner's own words).
#: An excluded block's own text is taken out of the body's once, where it shows (a block in a closed
#: <details> is not in the body's text to begin with).
VISIBLE_TEXT = """() => {
  let text = document.body.innerText;
  for (const node of document.querySelectorAll(".cm-editor, pre")) {
    if (node.parentElement && node.parentElement.closest(".cm-editor, pre")) continue;
    if (typeof node.checkVisibility === "function" && !node.checkVisibility()) continue;
    const inner = node.innerText;
    if (inner && text.includes(inner)) text = text.replace(inner, "\\n");
  }
  return text;
}"""

#: Python and torch names a learner writes, in a lesson's or an exercise's text, that are also a
#: check's, a cause's or a status's name: ctx.needs_input_grad (which code_names() already passes
#: when written so) is also said alone (LinearFn's title: "... and needs_input_grad"). Other such
#: words (grad_output, setup_context, mark_non_differentiable, save_for_backward) are no name's
#: whole: code_names() never matches them (tests/unit/test_diagnosis.py holds it to that). And
#: forward_ad, torch.autograd's module of forward mode, which a second-lesson example prints.
LEARNER_API_WORDS = frozenset({"needs_input_grad", "forward_ad"})

#: How the code names where an error was raised, and a debugger's verdict line: never a page's words.
CODE_PHRASES = re.compile(r" in parse\b| in load\b|Verdict:")


def visible_identifiers(page) -> list[str]:
    """Every identifier of the code in the page's visible text, in order: a check's, a cause's or a
    status's name standing alone (service.grading.terms.code_names(), a learner's API words aside),
    " in parse", " in load" and "Verdict:". Empty when the page speaks as the terms table does."""
    text = page.evaluate(VISIBLE_TEXT)
    found = [m for m in code_names().finditer(text) if m.group(0) not in LEARNER_API_WORDS]
    found += CODE_PHRASES.finditer(text)
    return [m.group(0) for m in sorted(found, key=lambda m: m.start())]
