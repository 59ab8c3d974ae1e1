"""The dashboard's authoring view in a real browser (issue 34): a course's staff write a code
exercise from the template, the proof refuses a reference whose backward is wrong and names the
check at its file and line, the fixed one is proven, previewed on the real learner page (Run and
Submit, counted for nobody), published; the history shows both versions and their diff.

Screenshots (build/screenshots/): authoring-list, authoring-editor-proof-failed,
authoring-proof-passed, authoring-preview, authoring-history-diff, authoring-phone.
"""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import axe_violations
from tests.browser.support import expect, shot, sign_in
from tests.helpers import bearer

SLUG = "course-cube"
RIGHT = "return grad_output * 3 * x ** 2"
WRONG = "return grad_output * 2 * x ** 2"  # the derivative of x³ is 3x²: this backward is wrong
PHONE = {"width": 375, "height": 740}
PROOF_TIMEOUT = 120_000  # ms: the proof runs the reference, the wrong file and the starter in the sandbox


@pytest.fixture(scope="module")
def course(live_server) -> dict:
    """A client's own course and a course key of it: the course's staff, as the dashboard signs them in."""
    api, client_key = live_server.api(), live_server.keys["lms-one"]
    made = api.post("/api/v1/courses", json={"external_id": "authoring-101", "title": "Autograd by hand"},
                    headers=bearer(client_key))
    assert made.status_code == 201, made.json
    key = api.post(f"/api/v1/courses/{made.json['id']}/keys", json={"name": "authoring test"}, headers=bearer(client_key))
    assert key.status_code == 201, key.json
    return {"id": made.json["id"], "key": key.json["key"]}


def watch(tab, problems: list[str]) -> None:
    """The checks the page fixture makes on its tab, for another tab (the preview)."""
    tab.on("pageerror", lambda error: problems.append(f"uncaught error: {error}"))
    tab.on("dialog", lambda dialog: (problems.append(f"dialog {dialog.type}: {dialog.message}"), dialog.dismiss()))
    tab.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
           if message.type == "error" and "Content Security Policy" in message.text else None)


def open_file(page, path: str):
    page.locator(f'.file-button[data-file="{path}"]').click()
    return page.locator(f'.editor[data-file="{path}"]')


def replace_in_editor(page, path: str, old: str, new: str) -> None:
    """Change `old` to `new` in one file as an author types: select all, type the new text."""
    editor = open_file(page, path)
    text = "\n".join(editor.locator(".cm-line").all_text_contents())
    assert old in text, text
    editor.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text.replace(old, new))
    expect(editor.locator(".cm-content")).to_contain_text(new)


def no_serious_violations(page, axe_source: str) -> None:
    found = axe_violations(page, axe_source)
    assert not found, found


def test_authoring_a_code_exercise_from_template_to_published(page, live_server, live_worker, course, axe_source):
    sign_in(page, course["key"])
    page.get_by_role("link", name="Authoring", exact=True).click()
    expect(page).to_have_url(re.compile(rf"#/courses/{course['id']}/authoring$"))
    expect(page.get_by_text("No exercise of this course's own yet")).to_be_visible()
    # A template of each kind.
    new = page.locator("#new-exercise a")
    expect(new).to_have_count(5)
    page.get_by_role("link", name="New: Code: a custom autograd Function").click()

    # The slug's rules are shown; the editor holds the template's files.
    expect(page.locator("#slug-rules")).to_contain_text("lowercase letters, digits and hyphens")
    for path in ("exercise.toml", "reference.py", "starter.py", "wrong/forgot_grad_output.py"):
        expect(page.locator(f'.file-button[data-file="{path}"]')).to_be_visible()
    page.get_by_label("Slug (the exercise's name in addresses)").fill("Not A Slug")
    page.get_by_role("button", name="Save draft").click()
    expect(page.locator("#slug-error")).to_contain_text("lowercase letters")
    page.get_by_label("Slug (the exercise's name in addresses)").fill(SLUG)

    # A reference whose backward is wrong: the proof refuses it and names the check, at reference.py's backward.
    replace_in_editor(page, "reference.py", RIGHT, WRONG)
    page.get_by_role("button", name="Prove").click()
    expect(page.locator(".proof-failed")).to_be_visible(timeout=PROOF_TIMEOUT)
    expect(page).to_have_url(re.compile(rf"#/courses/{course['id']}/authoring/{SLUG}$"))
    problem = page.locator('.proof-problem[data-file="reference.py"]').first
    expect(problem).to_contain_text("reference.py")
    expect(problem).to_contain_text("line")
    expect(problem).to_contain_text(re.compile(r"gradcheck|gradient|boundary"))
    expect(page.locator('.file-button[data-file="reference.py"]')).to_contain_text("problem")
    # The problem's button opens the file at the line at fault (marked in the editor).
    open_file(page, "exercise.toml")
    problem.click()
    reference = page.locator('.editor[data-file="reference.py"]')
    expect(reference).to_be_visible()
    expect(reference.locator(".cm-problem-line")).to_have_count(1)
    line = int(problem.get_attribute("data-line"))
    expect(reference.locator(".cm-activeLine")).to_have_text(
        reference.locator(".cm-line").nth(line - 1).text_content())
    page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar at the top of the picture
    shot(page, "authoring-editor-proof-failed")
    no_serious_violations(page, axe_source)

    # Fixed: proven.
    replace_in_editor(page, "reference.py", WRONG, RIGHT)
    page.get_by_role("button", name="Prove").click()
    expect(page.locator(".proof-passed")).to_be_visible(timeout=PROOF_TIMEOUT)
    expect(page.locator(".cm-problem-line")).to_have_count(0)
    expect(page.locator("#exercise-state")).to_contain_text("latest version 2")
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "authoring-proof-passed")
    # Prove again with the files unchanged: the same version is proven again, no new one is made.
    page.get_by_role("button", name="Prove").click()
    expect(page.locator("#action-status")).to_have_text("Version 2 is proven.", timeout=PROOF_TIMEOUT)
    expect(page.locator("#history tbody tr")).to_have_count(2)

    # Preview as a learner: the real learner page on version 2, Run and Submit, counted for nobody.
    preview_problems: list[str] = []
    with page.context.expect_page() as opened:
        page.get_by_role("button", name="Preview as a learner").click()
    preview = opened.value
    watch(preview, preview_problems)
    preview.wait_for_url(re.compile(rf"/learn/preview/{course['id']}/{SLUG}/2"))
    expect(preview.locator(".preview-banner")).to_contain_text("Preview of version 2: attempts here are not counted")
    expect(preview.locator(".preview-banner")).to_have_count(1)
    assert "token=" not in preview.url  # out of the address bar at once
    expect(preview.get_by_role("heading", level=1)).to_have_text("CubeFn: the gradient of x³")
    expect(preview.locator(".standing-box")).to_be_hidden()
    preview.locator(".cm-content").click()
    preview.keyboard.press("Control+a")
    version = live_server.api().get(f"/api/v1/courses/{course['id']}/exercises/{SLUG}/versions/2", headers=bearer(course["key"]))
    reference_code = version.json["files"]["reference.py"]
    preview.keyboard.insert_text(reference_code)
    preview.get_by_role("button", name="Run").click()
    expect(preview.locator(".panel .status").first).to_contain_text("Run finished", timeout=60_000)
    preview.get_by_role("button", name="Submit").click()
    expect(preview.locator(".panel .status").first).to_have_text("Graded: score 100%.", timeout=60_000)
    shot(preview, "authoring-preview")
    no_serious_violations(preview, axe_source)
    preview.close()
    assert not preview_problems, preview_problems

    # Publish: learners of the course see version 2.
    page.bring_to_front()
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.locator("#exercise-state")).to_contain_text("published", timeout=20_000)
    expect(page.locator("#action-status")).to_contain_text("Version 2 is published")
    expect(page.get_by_role("button", name="Unpublish")).to_be_visible()

    # The history: two versions, the current one marked; the diff from 1 to 2 shows the fix.
    history = page.locator("#history")
    expect(history.locator("tbody tr")).to_have_count(2)
    expect(history.locator('tr[data-version="2"]')).to_contain_text("current")
    expect(history.locator('tr[data-version="2"]')).to_contain_text("dashboard")
    expect(history.locator('tr[data-version="1"]')).to_contain_text("failed")
    history.get_by_label("From").select_option("1")
    history.get_by_label("To").select_option("2")
    history.get_by_role("button", name="Show the diff").click()
    expect(page.locator("#diff .diff-del")).to_contain_text([WRONG])
    expect(page.locator("#diff .diff-add")).to_contain_text([RIGHT])
    page.evaluate("document.getElementById('toast').hidden = true")  # "Published version 2" would cover the diff
    shot(page, "authoring-history-diff", history)
    no_serious_violations(page, axe_source)

    # The course's list: the exercise, published, version 2 current.
    page.get_by_role("link", name="authoring", exact=True).click()
    row = page.locator("table.authoring-list tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(SLUG)
    expect(row).to_contain_text("published")
    shot(page, "authoring-list")
    no_serious_violations(page, axe_source)

    # On a phone: the editor and its buttons fit the width.
    page.set_viewport_size(PHONE)
    row.get_by_role("link").click()
    expect(page.locator(".proof-passed")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"] + 1
    # The whole page in one window as tall as it (a full-page picture would resize the window while it
    # is taken, before the editor measures its wrapped lines again).
    page.set_viewport_size({"width": PHONE["width"], "height": page.evaluate("document.documentElement.scrollHeight")})
    page.locator('.editor[data-file="exercise.toml"] .cm-content').click()  # the editor measures itself anew
    page.wait_for_timeout(500)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "authoring-phone")
