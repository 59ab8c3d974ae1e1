"""The learner's pages (/learn, /learn/{slug}) in a real headless Chromium, against the app on a
loopback port and a grading worker: each quiz kind answered, a code exercise edited, run and
submitted right and wrong, hints, an earlier attempt restored, keyboard-only use, a phone's
viewport, text and code containing HTML shown as text, the draft across reloads, the token's
sources and its renewal, and no serious accessibility violation (axe-core, from the npm registry
as frontend/package-lock.json pins it, injected from a local file).

The page acts with a learner token, as an LMS launch or a frontend hands it over, and never
with a key.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from sqlalchemy import select

from service.catalog import load_catalog
from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.learn import render_exercise_page
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient
from tests.browser.conftest import FRONTEND, SCREENSHOTS, axe_violations
from tests.browser.support import expect, shot, visible_identifiers
from tests.helpers import bearer, correct_answer

CODE = "square-function"
REFERENCE = (PROJECT_ROOT / "exercises" / CODE / "reference.py").read_text()
WRONG = (PROJECT_ROOT / "exercises" / CODE / "wrong" / "forgot_grad_output.py").read_text()
SINGLE = "backward-none-for-bounds"
SPECS = {e.slug: e.spec for e in load_catalog(PROJECT_ROOT / "exercises")[0]}
HOSTILE = '<img src=x onerror="alert(1)"><b>bold</b>'






@pytest.fixture(scope="module")
def client_id(live_server) -> int:
    with live_server.app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))


@pytest.fixture(scope="module")
def token_for(live_server, client_id):
    def make(learner: str, exercise: str, lifetime: int = 3600, role: str = LEARNER) -> str:
        scope = LearnerScope(client_id=client_id, learner=learner, exercise=exercise, role=role, link_id=None)
        return issue_learner_token(live_server.app.config["SECRET_KEY"], scope, lifetime)

    return make


@pytest.fixture(scope="module", autouse=True)
def launch_route(live_server, token_for):
    """/test-launch/{slug}: the exercise page as an LTI launch renders it (render_exercise_page with a
    launch), added before the server answers its first request."""

    def view(slug: str):
        return render_exercise_page(slug, launch={
            "token": token_for("lti-learner", slug), "expires_in": 3600, "exercise": slug, "learner": "lti-learner",
            "role": LEARNER, "api": f"{live_server.url}/api/v1"})

    live_server.app.add_url_rule("/test-launch/<slug>", "test_launch", view)


def open_exercise(page, slug: str, token: str | None = None, path: str = "/learn/"):
    page.goto(f"{path}{slug}" + (f"#token={token}" if token else ""))
    page.wait_for_selector("#exercise .prompt")


def editor_text(page) -> str:
    # The editor is in a shadow root (service/learn's CSP: editor.js says why); locators pierce it.
    return "\n".join(page.locator(".cm-line").all_text_contents())


def replace_code(page, code: str) -> None:
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)


def status(page):
    return page.locator(".panel .status").first


# --- quiz kinds ---------------------------------------------------------------------------------

def test_learn_single_choice_wrong_then_right(page, token_for):
    open_exercise(page, SINGLE, token_for("sam", SINGLE))
    expect(page.locator("#session-status")).to_have_text("Signed in as sam")
    expect(page.get_by_role("heading", level=1)).to_have_text(SPECS[SINGLE]["title"])
    page.get_by_label("`0` (or `0.0`) for each bound".replace("`", "")).check()
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: not quite, score 0%.")
    expect(page.locator(".grade .verdict")).to_have_text("Score: 0%. Not quite.")
    expect(page.locator(".grade .choice-marks li.choice-wrong")).to_contain_text("Your pick is wrong")
    page.get_by_label("None, one for each such input").check()
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")
    expect(page.locator(".grade")).to_contain_text("Explanation")
    expect(page.locator("ul.attempts > li")).to_have_count(2)
    shot(page, "learn-single-choice")


def test_learn_multiple_choice(page, token_for):
    slug = "apply-call-forms"
    open_exercise(page, slug, token_for("sam", slug))
    right = set(correct_answer(SPECS[slug]))
    for choice in SPECS[slug]["choices"]:
        if choice["id"] in right:
            page.locator(f"input[value='{choice['id']}']").check()
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")
    shot(page, "learn-multiple-choice")


def test_learn_short_answer(page, token_for):
    slug = "backward-none-fill-blank"
    open_exercise(page, slug, token_for("sam", slug))
    page.get_by_role("textbox", name="Your answer").fill("a zero")
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_contain_text("not quite")
    page.get_by_role("textbox", name="Your answer").fill(correct_answer(SPECS[slug]))
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")
    shot(page, "learn-short-answer")


def test_learn_numeric_one_number_and_a_list(page, token_for):
    slug = "builtin-clamp-forward-value"
    open_exercise(page, slug, token_for("sam", slug))
    page.get_by_label("Your answer (a number)").fill("two")
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Write a number, like -0.5 or 2.")  # checked before anything is sent
    page.get_by_label("Your answer (a number)").fill(str(correct_answer(SPECS[slug])))
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")

    slug = "clampfn-forward-vector"
    open_exercise(page, slug, token_for("sam", slug))
    numbers = correct_answer(SPECS[slug])
    for i, value in enumerate(numbers, start=1):
        page.get_by_label(f"Number {i}", exact=True).fill(str(value))
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")
    shot(page, "learn-numeric")


# --- hints --------------------------------------------------------------------------------------

def test_learn_hints_are_revealed_one_at_a_time(page):
    slug = "clamp-function"
    hints = SPECS[slug]["hints"]
    open_exercise(page, slug)
    expect(page.locator("ol.hints > li")).to_have_count(0)
    for shown in range(1, len(hints) + 1):
        page.locator(".panel button", has_text=re.compile(r"^Show (a hint|hint \d)")).click()
        expect(page.locator("ol.hints > li")).to_have_count(shown)
    expect(page.locator(".panel button", has_text="hint")).to_have_count(0)
    expect(page.get_by_text("That was the last hint.")).to_be_visible()
    expect(page.locator("ol.hints > li").last).to_contain_text("None for low and None for high".split(" for ")[0])
    shot(page, "learn-hints")


# --- code ---------------------------------------------------------------------------------------

def test_learn_code_edited_run_and_submitted_wrong_then_right(page, token_for, live_worker):
    open_exercise(page, CODE, token_for("cody", CODE))
    expect(page.get_by_role("textbox", name="Code")).to_be_visible()
    assert "class SquareFn" in editor_text(page) and "..." in editor_text(page)  # the starter code
    replace_code(page, WRONG)
    page.get_by_role("button", name="Run").click()
    expect(status(page)).to_have_text(re.compile(r"Run finished: the numerical check failed\."), timeout=40_000)
    run = page.locator(".run-result")
    # The run's diagnosis (GET /api/v1/runs' answer) gives the headline, as a grade's does.
    expect(run.locator(".verdict")).to_have_text("Run finished. Not yet: your backward's gradients are wrong.")
    expect(run.locator(".verdict + .cause")).to_contain_text("backward ignores grad_output")  # the likely cause, next
    expect(run.locator("details.values")).to_contain_text("Forward")  # the tables, folded
    expect(run.locator("details.values")).to_contain_text("Gradients")
    expect(run.locator("details.values")).not_to_have_attribute("open", "")
    shot(page, "learn-code-run-wrong")

    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text(re.compile(r"Graded: score \d+%\."), timeout=40_000)
    grade = page.locator(".grade").first
    expect(grade.locator(".verdict")).to_have_text(re.compile(r"^Score: \d+%\. Not yet"))
    expect(grade.locator(".verdict ~ .cause")).to_contain_text("Likely cause")
    expect(grade.locator("details.all-checks li.bad")).not_to_have_count(0)
    expect(grade.locator("details.values")).to_contain_text("worst element")
    # The default scoring (gate): why a wrong backward's score stops at the forward's worth.
    expect(grade.locator(".capped")).to_contain_text("at most 30%")
    expect(grade).not_to_contain_text("Explanation")  # a code exercise explains itself only to a pass
    assert visible_identifiers(page) == []  # the wrong submission's page names nothing by its code name
    shot(page, "learn-code-submit-wrong")

    replace_code(page, REFERENCE)
    page.get_by_role("button", name="Run").click()
    expect(status(page)).to_have_text("Run finished: the numerical check passed.", timeout=40_000)
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: score 100%.", timeout=40_000)
    expect(page.locator(".grade").first).to_contain_text("Every check passed.")
    # nothing absent is written out as a word (a missing "likely cause" block was shown as "null")
    expect(page.locator(".grade").first).not_to_contain_text("null")
    expect(page.locator(".grade").first).to_contain_text("Explanation")
    expect(page.locator("ul.attempts > li")).to_have_count(2)
    shot(page, "learn-code-submit-right")


def test_learn_restore_an_earlier_attempt(page, token_for, live_worker, live_server):
    api, key = live_server.api(), live_server.keys["lms-one"]
    first = "import torch\n\n# the first try\n" + WRONG
    response = api.post(f"/api/v1/exercises/{CODE}/attempts", json={"learner": "rita", "code": first}, headers=bearer(key))
    assert response.status_code == 202
    api.get(response.headers["Location"] + "?wait=30", headers=bearer(key))
    open_exercise(page, CODE, token_for("rita", CODE))
    replace_code(page, "# something else entirely\n")
    attempt = page.get_by_role("button", name=re.compile(r"^Attempt 1: \d+%"))
    attempt.click()
    expect(attempt).to_have_attribute("aria-expanded", "true")
    expect(page.locator(".attempt-detail pre.code")).to_contain_text("# the first try")
    page.get_by_role("button", name="Restore into the editor").click()
    expect(status(page)).to_have_text("That attempt's code is in the editor.")
    assert editor_text(page).startswith("import torch\n\n# the first try")
    shot(page, "learn-restore-attempt")
    page.reload()
    page.wait_for_selector(".cm-content")
    assert "# the first try" in editor_text(page)  # the restored code is the draft now


def test_learn_draft_survives_a_reload_and_is_per_learner(page, token_for):
    open_exercise(page, CODE, token_for("dora", CODE))
    replace_code(page, "import torch\n# dora's draft\n")
    page.wait_for_timeout(500)  # the draft is saved 300 ms after the last change
    page.reload()
    page.wait_for_selector(".cm-content")
    assert "# dora's draft" in editor_text(page)
    open_exercise(page, CODE, token_for("otto", CODE))  # another learner, same browser
    expect(page.locator("#session-status")).to_have_text("Signed in as otto")
    assert "# dora's draft" not in editor_text(page) and "class SquareFn" in editor_text(page)
    shot(page, "learn-draft-per-learner")


# --- keyboard, phone, HTML as text ------------------------------------------------------------

def focused(page) -> str:
    return page.evaluate("""() => {
        let e = document.activeElement;
        while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
        if (e.classList.contains('cm-content')) return 'editor ' + e.getAttribute('aria-label');
        if (e.tagName === 'INPUT') return 'INPUT ' + e.type;
        return (e.tagName + ' ' + e.textContent).trim();
    }""")


def tab_to(page, predicate, limit: int = 40) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if predicate(focused(page)):
            return
    raise AssertionError(f"never reached the element; last focus {focused(page)}")


def test_learn_keyboard_only(page, token_for, live_worker):
    open_exercise(page, SINGLE, token_for("kim", SINGLE))
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to the content")).to_be_focused()
    tab_to(page, lambda f: f.startswith("BUTTON Show a hint"))
    page.keyboard.press("Enter")
    expect(page.locator("ol.hints > li")).to_have_count(1)
    tab_to(page, lambda f: f == "INPUT radio")
    page.keyboard.press("ArrowDown")  # radios: the arrow keys choose
    tab_to(page, lambda f: f == "BUTTON Submit")
    page.keyboard.press("Enter")
    expect(status(page)).to_contain_text("Graded")

    open_exercise(page, CODE, token_for("kim", CODE))
    tab_to(page, lambda f: f == "editor Code")
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # indents, does not leave the editor
    page.keyboard.insert_text("pass")
    assert re.search(r"\n {4,}pass$", editor_text(page)), editor_text(page)
    page.keyboard.press("Shift+Tab")  # dedents
    assert editor_text(page).endswith("\npass") or re.search(r"\n {0,4}pass$", editor_text(page))
    expect(page.get_by_text("press Escape, then Tab")).to_be_visible()  # the page says how to leave
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Run")).to_be_focused()
    page.keyboard.press("Enter")
    expect(status(page)).to_have_text(re.compile(r"^Run finished"), timeout=40_000)
    shot(page, "learn-keyboard")


def test_learn_on_a_phone(page, token_for, live_worker):
    page.set_viewport_size({"width": 375, "height": 740})
    open_exercise(page, CODE, token_for("pia", CODE))
    replace_code(page, WRONG)
    page.get_by_role("button", name="Run").click()
    expect(status(page)).to_have_text(re.compile(r"^Run finished"), timeout=40_000)
    overflow = page.evaluate("() => document.documentElement.scrollWidth")
    assert overflow <= 375, f"the page is {overflow}px wide on a 375px screen"
    for name in ("Run", "Submit"):
        box = page.get_by_role("button", name=name).bounding_box()
        assert box["height"] >= 44 and box["x"] >= 0 and box["x"] + box["width"] <= 375, (name, box)
    shot(page, "learn-phone-code")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=SCREENSHOTS / "learn-phone-code-top.png")  # what a phone shows first
    page.locator(".run-result details.values > summary").click()
    page.locator(".run-result details.all-checks > summary").click()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    # The tables read as blocks: each value as wide as the screen lets it, never a column of letters.
    widths = page.locator(".run-result table.blocks td").evaluate_all("tds => tds.map(td => td.getBoundingClientRect().width)")
    assert widths and min(widths) > 250, widths
    page.locator(".run-result details.values").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "learn-phone-code-checks.png")
    open_exercise(page, SINGLE, token_for("pia", SINGLE))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    shot(page, "learn-phone-quiz")


@pytest.fixture(scope="module")
def hostile_exercise(live_server, tmp_path_factory) -> str:
    """A published exercise whose title, prompt, hints and choices hold HTML."""
    folder = tmp_path_factory.mktemp("hostile-catalog")
    source = PROJECT_ROOT / "exercises" / SINGLE / "exercise.toml"
    text = source.read_text()
    text = text.replace('title = "What backward returns for a bound"', f"title = {json.dumps('Title ' + HOSTILE)}", 1)
    text = text.replace('prompt = "What must backward', f"prompt = \"{HOSTILE.replace(chr(34), chr(39))} What must backward", 1)
    text = text.replace("hints = [\n", f"hints = [\n    {json.dumps('Hint ' + HOSTILE)},\n", 1)
    text = text.replace('text = "`None`, one for each such input"', f"text = {json.dumps('None ' + HOSTILE)}", 1)
    (folder / "html-as-text").mkdir()
    (folder / "html-as-text" / "exercise.toml").write_text(text)
    live_server.sync(folder)
    return "html-as-text"


def test_learn_html_in_exercise_text_and_learner_code_is_shown_as_text(page, token_for, hostile_exercise, live_worker):
    open_exercise(page, hostile_exercise, token_for("hal", hostile_exercise))
    expect(page.get_by_role("heading", level=1)).to_have_text("Title " + HOSTILE)
    prompt = page.locator(".prompt")
    expect(prompt).to_contain_text("<b>bold</b>")
    page.get_by_role("button", name=re.compile("Show a hint")).click()
    expect(page.locator("ol.hints")).to_contain_text("Hint <img src=x")
    expect(page.locator("form.quiz")).to_contain_text("None <img src=x")
    assert page.locator("main img, main b").count() == 0  # no element made from the text
    page.locator("form.quiz input").first.check()
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_contain_text("Graded")
    shot(page, "learn-html-in-exercise-text")

    code = 'print("<script>alert(1)</script><b>printed</b>")\n# <img src=x onerror="alert(2)">\n'
    open_exercise(page, CODE, token_for("hal", CODE))
    replace_code(page, code)
    page.get_by_role("button", name="Run").click()
    expect(status(page)).to_have_text(re.compile(r"^Run finished"), timeout=40_000)
    expect(page.locator(".run-result pre.output").first).to_have_text("<script>alert(1)</script><b>printed</b>\n")
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text(re.compile(r"^Graded"), timeout=40_000)
    page.get_by_role("button", name=re.compile(r"^Attempt 1")).click()
    expect(page.locator(".attempt-detail pre.code")).to_contain_text('# <img src=x onerror="alert(2)">')
    assert page.locator("main img, main b, main script").count() == 0
    shot(page, "learn-html-as-text")


# --- tokens -------------------------------------------------------------------------------------

def test_learn_without_a_token_shows_the_exercise_and_how_to_sign_in(page):
    open_exercise(page, CODE)
    expect(page.locator("#session-status")).to_have_text("Not signed in")
    expect(page.locator(".session-notice")).to_contain_text("You are not signed in")
    expect(page.locator(".session-notice")).to_contain_text("open this page from your course")
    expect(page.get_by_role("button", name="Run")).to_be_disabled()
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()
    expect(page.get_by_text("Sign in to see your earlier attempts.")).to_be_visible()
    shot(page, "learn-no-token")


def test_learn_token_from_the_fragment_leaves_the_address_bar_and_stays_in_the_tab(page, token_for, live_server):
    token = token_for("fran", SINGLE)
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    open_exercise(page, SINGLE, token)
    expect(page.locator("#session-status")).to_have_text("Signed in as fran")
    assert "#" not in page.url and token not in page.url
    page.reload()
    page.wait_for_selector("#exercise .prompt")
    expect(page.locator("#session-status")).to_have_text("Signed in as fran")  # from sessionStorage
    assert not [u for u in urls if token in u], "the token was in a URL sent to a server"
    # A new tab of the same browser does not share it (sessionStorage is per tab).
    other = page.context.new_page()
    other.goto(f"/learn/{SINGLE}")
    other.wait_for_selector("#exercise .prompt")
    expect(other.locator("#session-status")).to_have_text("Not signed in")
    other.close()


def test_learn_token_for_another_exercise_says_so(page, token_for):
    open_exercise(page, SINGLE, token_for("tess", CODE))
    expect(page.locator("#session-status")).to_have_text("Signed in as tess")
    expect(page.locator(".session-notice")).to_contain_text("Your sign-in is for other exercises")
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()


def test_learn_token_from_an_lti_launch_block(page):
    page.goto(f"/test-launch/{SINGLE}")
    page.wait_for_selector("#exercise .prompt")
    expect(page.locator("#session-status")).to_have_text("Signed in as lti-learner")
    assert page.locator("#gradquiz-launch").count() == 0  # read once, then gone from the page
    page.get_by_label("None, one for each such input").check()
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")


def stored_session(page) -> dict:
    return page.evaluate("() => JSON.parse(sessionStorage.getItem('gradquiz.learner-session') || '{}')")


def test_learn_token_is_renewed_before_it_expires(page, token_for, live_server):
    """POST /api/v1/learner-tokens/refresh (the server's), 10 s before the token expires; the page
    then acts with the new token after the first one has run out."""
    refreshes: list[str] = []
    page.on("request", lambda r: refreshes.append(r.headers.get("authorization", ""))
            if r.url.endswith("/api/v1/learner-tokens/refresh") else None)
    short = token_for("rene", SINGLE, lifetime=12)
    open_exercise(page, SINGLE, short)
    expect(page.locator("#session-status")).to_have_text("Signed in as rene")
    page.wait_for_function("() => { const s = JSON.parse(sessionStorage.getItem('gradquiz.learner-session') || '{}');"
                           " return s.expiresAt - Date.now() > 600000; }", timeout=15_000)
    assert refreshes == [f"Bearer {short}"]
    renewed = stored_session(page)["token"]
    assert renewed != short and not renewed.startswith(short)
    page.wait_for_timeout(12_500)  # the first token has expired by now
    page.get_by_label("None, one for each such input").check()
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: correct, score 100%.")
    assert refreshes == [f"Bearer {short}"]  # renewed once, not again and again


def test_learn_session_at_its_maximum_age_runs_out_without_hammering(page, live_server, client_id):
    """A session 12 s from LEARNER_SESSION_MAX_SECONDS: the renewal cannot reach further, so the page
    keeps the token it got, asks no more, and says the session ended when it runs out."""
    settings = live_server.app.config["SETTINGS"]
    scope = LearnerScope(client_id=client_id, learner="maxi", exercise=CODE, role=LEARNER, link_id=None,
                         session_started=int(time.time()) - settings.learner_session_max_seconds + 12)
    token = issue_learner_token(live_server.app.config["SECRET_KEY"], scope, 12, settings.learner_session_max_seconds)
    refreshes: list[str] = []
    page.on("request", lambda r: refreshes.append(r.url) if r.url.endswith("/learner-tokens/refresh") else None)
    open_exercise(page, CODE, token)
    replace_code(page, "# almost out of time\n")
    expect(page.get_by_role("alert")).to_contain_text("Your session has ended", timeout=20_000)
    assert len(refreshes) == 1, refreshes
    assert "# almost out of time" in editor_text(page)


def test_learn_session_ended_keeps_the_draft(page, token_for):
    page.route("**/api/v1/learner-tokens/refresh", lambda route: route.fulfill(
        status=401, content_type="application/problem+json",
        body=json.dumps({"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": "Session too old."})))
    open_exercise(page, CODE, token_for("ends", CODE, lifetime=11))
    replace_code(page, "# work in progress\n")
    expect(page.get_by_role("alert")).to_contain_text("Your session has ended", timeout=15_000)
    expect(page.locator("#session-status")).to_have_text("Session ended")
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()
    assert "# work in progress" in editor_text(page)
    page.wait_for_timeout(400)
    page.reload()
    page.wait_for_selector(".cm-content")
    assert "# work in progress" in editor_text(page)
    shot(page, "learn-session-ended")


# --- the lesson, the 404 page, accessibility ---------------------------------------------------

def test_learn_lesson_page_runs_its_examples_and_lists_exercises_by_concept(page, token_for, live_worker):
    page.goto("/learn#token=" + token_for("lena", CODE))
    page.wait_for_selector("#lesson .concept")
    concepts = page.locator("section.concept > h2").all_text_contents()
    assert concepts[0] == "Autograd already knows the built-in operations" and "Going further" in concepts
    practise = page.locator("#one-gradient-per-input .exercise-list a")
    expect(practise.first).to_have_attribute("href", "/learn/backward-none-for-bounds")
    example = page.locator(".example", has=page.get_by_role("heading", name="Example: DoubleFn"))
    example.get_by_role("button", name="Run").click()
    expect(example.locator(".status")).to_have_text("Run finished: the numerical check passed.", timeout=40_000)
    expect(example.locator(".run-result")).to_contain_text("y = [6.0]  x.grad = [2.0]")
    wrong = page.locator(".example", has=page.get_by_role("heading", name="Example: A ClampFn whose backward is wrong"))
    wrong.get_by_role("button", name="Run").click()
    expect(wrong.locator(".status")).to_have_text("Run finished: the numerical check failed.", timeout=40_000)
    expect(wrong.locator(".run-result")).to_contain_text("backward ignores grad_output")
    shot(page, "learn-lesson-example-run", example)
    shot(page, "learn-lesson-wrong-example-run", wrong)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=SCREENSHOTS / "learn-lesson-top.png")
    shot(page, "learn-lesson-concept", page.locator("#one-gradient-per-input"))


def test_learn_lesson_page_without_a_token_reads_but_does_not_run(page):
    page.goto("/learn")
    page.wait_for_selector("#lesson .concept")
    expect(page.locator("#session-status")).to_have_text("Not signed in")
    expect(page.locator(".session-notice")).to_contain_text("You are not signed in")
    runs = page.get_by_role("button", name="Run")
    assert runs.count() == 5
    for i in range(runs.count()):
        expect(runs.nth(i)).to_be_disabled()
    expect(page.get_by_role("textbox", name="Code of the example DoubleFn")).to_be_visible()


def test_learn_unknown_exercise_is_a_404_page(page):
    response = page.goto("/learn/no-such-exercise")
    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.get_by_role("link", name="lesson")).to_have_attribute("href", "/learn")
    shot(page, "learn-not-found")


def test_learn_pages_have_no_serious_accessibility_violation(page, token_for, axe_source, live_worker):
    checked = {}
    open_exercise(page, CODE, token_for("alex", CODE))
    replace_code(page, WRONG)
    page.get_by_role("button", name="Run").click()
    expect(status(page)).to_have_text(re.compile(r"^Run finished"), timeout=40_000)
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text(re.compile(r"^Graded"), timeout=40_000)
    page.get_by_role("button", name=re.compile(r"^Attempt 1")).click()
    checked["code exercise, run and graded"] = axe_violations(page, axe_source)
    for slug in (SINGLE, "apply-call-forms", "backward-none-fill-blank", "clampfn-forward-vector"):
        open_exercise(page, slug, token_for("alex", slug))
        page.get_by_role("button", name=re.compile("Show a hint")).click()
        checked[slug] = axe_violations(page, axe_source)
    open_exercise(page, CODE)
    checked["signed out"] = axe_violations(page, axe_source)
    page.goto("/learn")
    page.wait_for_selector("#lesson .concept")
    checked["lesson"] = axe_violations(page, axe_source)
    page.goto("/learn/no-such-exercise")
    checked["404"] = axe_violations(page, axe_source)
    assert {name: v for name, v in checked.items() if v} == {}


def test_learn_script_never_writes_markup_from_strings():
    sources = sorted((FRONTEND / "src" / "learn").glob("*.js"))
    assert sources
    for source in sources:
        text = source.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in text, f"{source.name} uses {sink}"


# --- results that teach: the verdict first, quiz marks, a refused answer, the history -----------

# Words a learner writes (Python and torch names) may appear; no other snake_case identifier may.
LEARNER_WORDS = {"grad_output", "grad_outputs", "save_for_backward", "needs_input_grad", "mark_non_differentiable",
                 "setup_context", "sum_to_size"}
# What the terms table says (service/grading/terms.py), for a page served without it (a server
# before the table); a page that embeds one keeps its own.
TERMS = {
    "checks": [{"name": n, "title": t, "description": ""} for n, t in (
        ("forward", "Forward values"), ("gradcheck", "Numerical gradient check"),
        ("gradient", "Gradients for random grad_output"), ("grad_output_unchanged", "grad_output left unchanged"))],
    "causes": [{"name": "forgot_grad_output", "title": "backward ignores grad_output",
                "advice": "Multiply your local derivative by grad_output (the chain rule)."}],
    "stages": [{"name": "backward", "words": "while backward ran"}],
    "statuses": [{"name": "failed", "verdict": "Some checks failed."}],
}
HEADLINE = "Not yet: your backward's gradients are wrong."
EXAMPLE = "For grad_output 0.37 at x[2] (x = 0.77) your backward gives 1; the chain rule gives 0.37."
DIAGNOSIS = {"passed": False, "headline": HEADLINE,
             "cause": TERMS["causes"][0] | {"name": "forgot_grad_output"}, "example": EXAMPLE,
             "failed_checks": ["gradcheck", "gradient"]}


def with_terms(page) -> None:
    """The terms block on every learner page the tab opens, unless the server embeds one."""
    page.add_init_script("document.addEventListener('DOMContentLoaded', () => {"
                         " if (document.getElementById('gradquiz-terms')) return;"
                         " const s = document.createElement('script'); s.type = 'application/json';"
                         " s.id = 'gradquiz-terms'; s.textContent = " + json.dumps(json.dumps(TERMS)) + ";"
                         " document.body.append(s); });")


def identifiers(page, selector: str) -> set[str]:
    """snake_case words in the element's visible text, every <details> opened, a learner's own words aside."""
    page.locator(f"{selector} details").evaluate_all("ds => ds.forEach(d => { d.open = true; })")
    text = page.locator(selector).inner_text()
    return set(re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", text)) - LEARNER_WORDS


def fake_graded_attempt(code: str) -> dict:
    checks = [{"name": "forward", "weight": 0.2, "passed": True, "message": ""},
              {"name": "gradcheck", "weight": 0.2, "passed": False, "message": "backward disagrees with finite differences."},
              {"name": "gradient", "weight": 0.2, "passed": False, "message": "backward is wrong for random grad_outputs."},
              {"name": "grad_output_unchanged", "weight": 0.05, "passed": True, "message": ""}]
    return {"id": "00000000-0000-4000-8000-000000000035", "exercise": CODE, "status": "graded", "score": 0.3,
            "raw_score": 0.3, "penalties": [], "late": False, "created_at": "2026-12-06T08:00:00Z", "code": code,
            "explanation": None, "standing": None, "diagnosis": DIAGNOSIS,
            "scoring": {"policy": "gate", "cap": 0.3, "capped": True, "checks_score": 0.58},
            "report": {"status": "failed", "score": 0.58, "checks": checks, "likely_causes": ["forgot_grad_output"],
                       "feedback": ["backward ignores grad_output: multiply your local derivative by grad_output."],
                       "diagnostics": [{"check": "gradient", "case": "random inputs 1", "input": "x", "index": [2],
                                        "analytical": 1.0, "expected": 0.37, "input_value": 0.77}],
                       "error": None, "output": {"stdout": "", "stderr": ""}}}


def test_learn_result_opens_with_the_verdict_the_cause_and_the_example(page, token_for):
    """The attempt and the run as a server with diagnosis and scoring answers them (route-fulfilled:
    no grading here): the verdict line, the capped score's reason, the cause with what to do and its
    example come first; the checks, values and output are folded; no identifier shows."""
    with_terms(page)
    graded = fake_graded_attempt(WRONG)
    page.route(f"**/api/v1/exercises/{CODE}/attempts", lambda route: route.fulfill(
        status=201, content_type="application/json", body=json.dumps(graded)))
    run = {"id": "r1", "status": "finished", "diagnosis": DIAGNOSIS, "result": {
        "status": "ok", "error": None, "passed": False, "likely_causes": ["forgot_grad_output"],
        "inputs": [{"name": "x", "type": "tensor", "shape": [3], "dtype": "float64", "values": [0.1, 0.77, 2.0]}],
        "forward": {"outputs": [{"kind": "tensor", "shape": [3], "dtype": "float64", "requires_grad": True,
                                 "values": [0.1, 0.77, 1.0]}]},
        "gradients": {"x": [1.0, 1.0, 0.0]},
        "checks": graded["report"]["checks"][1:3], "output": {"stdout": "", "stderr": ""}}}
    page.route("**/api/v1/runs", lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(run)))
    lists: list[str] = []
    page.on("request", lambda r: lists.append(r.url) if "/learners/" in r.url and r.method == "GET" else None)
    page.set_viewport_size({"width": 1280, "height": 800})
    open_exercise(page, CODE, token_for("vera", CODE))
    expect(page.get_by_text("No attempts yet.")).to_be_visible()
    assert len(lists) == 1

    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Graded: score 30%.")
    grade = page.locator(".result .grade")
    expect(grade.locator(":scope > *").first).to_have_text(f"Score: 30%. {HEADLINE}")
    expect(grade.locator(".verdict + .capped")).to_have_text(
        "Your backward fails a check, so this attempt scores at most 30%: the checks it passed add up to 58%.")
    expect(grade.locator(".cause .cause-title")).to_have_text(
        "Likely cause: backward ignores grad_output. Multiply your local derivative by grad_output (the chain rule).")
    expect(grade.locator(".cause .example")).to_have_text(EXAMPLE)
    assert grade.locator("details[open]").count() == 0
    assert [s.strip() for s in grade.locator("details > summary").all_inner_texts()] == ["All checks", "Values"]
    expect(grade.locator(".cause .example")).to_be_in_viewport()  # brought into view, its first lines on top
    page.screenshot(path=SCREENSHOTS / "learn-result-diagnosis-desktop.png")
    assert identifiers(page, ".result .grade") == set()
    # The history took the POST's answer: no second GET of the list.
    expect(page.locator("ul.attempts > li")).to_have_count(1)
    expect(page.locator("ul.attempts > li button")).to_have_text(re.compile(r"^Attempt 1: 30%"))
    assert len(lists) == 1

    page.set_viewport_size({"width": 375, "height": 740})
    page.get_by_role("button", name="Run").click()
    box = page.locator(".run-result")
    expect(box.locator(".verdict")).to_have_text(f"Run finished. {HEADLINE}")
    expect(box.locator(".verdict + .cause .example")).to_have_text(EXAMPLE)
    expect(box.locator(".cause .cause-title")).to_be_in_viewport()
    page.screenshot(path=SCREENSHOTS / "learn-result-diagnosis-phone.png")
    assert identifiers(page, ".run-result") == set()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375


def test_learn_an_attempt_that_does_not_parse_is_listed_and_told_in_words(page, token_for):
    """An earlier attempt stopped by a status (syntax_error), from a server that sends no diagnosis:
    the list says the status's short title, the grade its verdict, both from the embedded terms
    table; the identifier shows nowhere."""
    unparsed = fake_graded_attempt("class SquareFn(torch.autograd.Function:\n    pass\n") | {
        "score": 0.0, "raw_score": 0.0, "diagnosis": None, "scoring": None}
    unparsed["report"] = {"status": "syntax_error", "score": 0.0, "likely_causes": [], "feedback": [], "diagnostics": [],
                          "checks": [{"name": "parses", "weight": 0.0, "passed": False,
                                      "message": "Syntax error: '(' was never closed (line 1)."}],
                          "error": {"where": "parse", "type": "SyntaxError", "message": "'(' was never closed (line 1)",
                                    "traceback": ""}, "output": {"stdout": "", "stderr": ""}}
    page.route("**/api/v1/learners/*/attempts*", lambda route: route.fulfill(
        status=200, content_type="application/json", headers={"X-Pagination": json.dumps({"total": 1})},
        body=json.dumps({"attempts": [unparsed]})))
    open_exercise(page, CODE, token_for("ursula", CODE))
    item = page.locator("ul.attempts > li button")
    expect(item).to_have_text(re.compile(r"^Attempt 1: 0% · Does not parse, "))
    item.click()
    grade = page.locator(".attempt-detail .grade")
    expect(grade.locator(".verdict")).to_have_text("Score: 0%. Not yet: your code does not parse.")
    expect(grade.locator(".error-block")).to_contain_text("Your code raised SyntaxError while Python read your code")
    assert visible_identifiers(page) == []


def test_learn_quiz_marks_picks_names_missed_answers_once_allowed_and_reloads_the_history_only_then(page, token_for):
    slug = "apply-call-forms"
    right = correct_answer(SPECS[slug])
    wrong = [c["id"] for c in SPECS[slug]["choices"] if c["id"] not in right]
    lists: list[str] = []
    page.on("request", lambda r: lists.append(r.url) if "/learners/" in r.url and r.method == "GET" else None)
    open_exercise(page, slug, token_for("mara", slug))
    expect(page.get_by_text("No attempts yet.")).to_be_visible()

    def answer(ids):
        for choice in SPECS[slug]["choices"]:
            box = page.locator(f"input[value='{choice['id']}']")
            box.check() if choice["id"] in ids else box.uncheck()
        page.get_by_role("button", name="Submit").click()

    grade = page.locator(".result .grade")
    answer([right[0], wrong[0]])  # one right pick, one wrong: 0%, and each pick marked
    expect(status(page)).to_have_text("Graded: not quite, score 0%.")
    expect(grade.locator("li.choice-right")).to_have_count(1)
    expect(grade.locator(f"li.choice-right[data-choice='{right[0]}']")).to_contain_text("Your pick is right")
    expect(grade.locator(f"li.choice-wrong[data-choice='{wrong[0]}']")).to_contain_text("Your pick is wrong")
    expect(grade.locator("li.choice-missed")).to_have_count(0)  # the rules hide the answer until a pass
    expect(page.locator("ul.attempts > li")).to_have_count(1)
    assert len(lists) == 1  # the POST's answer went into the history

    answer(right)  # a pass shows the explanation: the earlier grades may show more now, so the list is read again
    expect(status(page)).to_have_text("Graded: correct, score 100%.")
    expect(page.locator("ul.attempts > li")).to_have_count(2)
    assert len(lists) == 2

    answer(right[:1])  # now a right choice missed is named
    expect(status(page)).to_have_text(re.compile(r"^Graded: not quite"))
    expect(grade.locator("li.choice-missed")).to_have_count(len(right) - 1)
    expect(grade.locator("li.choice-missed").first).to_contain_text("Missed: a right answer you did not pick")
    expect(page.locator("ul.attempts > li")).to_have_count(3)
    assert len(lists) == 2
    shot(page, "learn-quiz-marks")


def test_learn_refused_answer_clears_the_old_grade(page, token_for):
    slug = "builtin-clamp-forward-value"
    open_exercise(page, slug, token_for("rufus", slug))
    field = page.get_by_label("Your answer (a number)")
    field.fill(str(correct_answer(SPECS[slug])))
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".result .grade .verdict")).to_have_text("Score: 100%. Correct.")
    field.fill("two")  # refused in the page
    page.get_by_role("button", name="Submit").click()
    expect(status(page)).to_have_text("Write a number, like -0.5 or 2.")
    expect(page.locator(".result .grade")).to_have_count(0)

    field.fill(str(correct_answer(SPECS[slug])))
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".result .grade")).to_have_count(1)
    page.route(f"**/api/v1/exercises/{slug}/attempts", lambda route: route.fulfill(
        status=422, content_type="application/problem+json",
        body=json.dumps({"title": "Unprocessable Entity", "status": 422, "detail": "The answer is not a number."})))
    page.get_by_role("button", name="Submit").click()  # refused by the server
    expect(status(page)).to_have_text("Submit failed. The answer is not a number.")
    expect(page.locator(".result .grade")).to_have_count(0)
