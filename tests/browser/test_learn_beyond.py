"""The second lesson, "Beyond the basics" (/learn/beyond), in Chromium at a desktop's and a phone's
size: the lessons' navigation marks it, its concepts come in order with their worked examples and
exercises, Run runs an example in the sandbox, a passed exercise is ticked as on the first lesson,
the page ends with the way back to the first lesson, and the first lesson ends with the way to it.
No serious accessibility violation, no identifier of the code in the visible text.
Screenshots go to build/screenshots/beyond-*.png.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.learn.lesson import load_lessons
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient
from tests.browser.conftest import SCREENSHOTS, axe_violations
from tests.browser.support import expect, shot, submit_attempt, visible_identifiers

SIZES = {"desktop": (1280, 800), "phone": (375, 740)}
FIRST, SECOND = load_lessons()
QUIZ = "setup-context-call-order"  # the second lesson's first exercise, a single choice
#: SinFn with a right backward and a jvp of the wrong derivative (sin for cos)
WRONG_JVP = (PROJECT_ROOT / "exercises" / "sin-jvp" / "wrong" / "sin_for_cos.py").read_text()


@pytest.fixture(scope="module")
def learner_token(live_server):
    with live_server.app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))

    def make(learner: str) -> str:
        scope = LearnerScope(client_id=client_id, learner=learner, exercises=None, role=LEARNER, link_id=None)
        return issue_learner_token(live_server.app.config["SECRET_KEY"], scope, 3600)

    return make


@pytest.mark.parametrize("size", SIZES)
def test_the_second_lesson_teaches_runs_and_ticks_as_the_first(page, live_server, learner_token, live_worker,
                                                                axe_source, size):
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[size])))
    learner = f"bea-{size}"
    graded = submit_attempt(live_server.api(), live_server.keys["lms-one"], QUIZ, learner,
                            answer="forward-then-setup")
    assert graded["correct"] is True
    page.goto(f"/learn/beyond#token={learner_token(learner)}")
    page.wait_for_selector("#lesson .concept")

    nav = page.get_by_role("navigation", name="Lessons")
    expect(nav.locator('[aria-current="page"]')).to_have_text("Lesson 2: Beyond the basics")
    expect(nav.get_by_role("link", name="Lesson 1: Custom autograd functions")).to_have_attribute("href", "/learn")
    expect(page.get_by_role("heading", level=1)).to_have_text(SECOND.title)
    assert page.locator("section.concept > h2").all_text_contents() == [c.title for c in SECOND.concepts]
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=SCREENSHOTS / f"beyond-top-{size}.png")

    # Its exercises under their concept, ticked from the learner's progress.
    item = page.locator(f'#setup-context .exercise-list li[data-slug="{QUIZ}"]')
    expect(item).to_have_attribute("data-state", "passed")
    expect(item.locator(".progress-mark")).to_contain_text("done")
    expect(page.locator("#lesson-progress")).to_contain_text(f"You have done 1 of the {len(SECOND.slugs)} exercises")
    shot(page, f"beyond-concept-{size}", page.locator("#setup-context"))

    # A worked example really runs: the None gradients one, with its numerical check.
    example = page.locator(".example", has=page.get_by_role("heading", name="Example: SinCosFn"))
    example.get_by_role("button", name="Run").click()
    expect(example.locator(".status")).to_have_text("Run finished: the numerical check passed.", timeout=40_000)
    expect(example.locator(".run-result")).to_contain_text("grad_sin is None, grad_cos is None: (False, True)")
    shot(page, f"beyond-example-run-{size}", example)

    # A Run asks for the checks its example names: a right backward beside a wrong jvp fails the
    # forward-mode check, and the result opens with it, in the learner's words.
    jvp = page.locator(".example", has=page.get_by_role("heading", name="Example: SinFn with a jvp"))
    jvp.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(WRONG_JVP)
    jvp.get_by_role("button", name="Run").click()
    expect(jvp.locator(".status")).to_have_text("Run finished: the numerical check passed, another check failed.",
                                                timeout=40_000)
    expect(jvp.locator(".verdict")).to_contain_text("your jvp (forward mode) is wrong")
    expect(jvp.locator(".cause")).to_contain_text("jvp computes a different derivative")
    expect(jvp.locator(".example")).to_contain_text("your jvp gives")
    shot(page, f"beyond-wrong-jvp-{size}", jvp)

    # It closes with its Key points, then the way back to the first lesson.
    expect(page.locator("#beyond-key-points")).to_contain_text("Key points")
    back = page.get_by_role("navigation", name="Previous and next lesson").get_by_role("link")
    expect(back).to_have_count(1)
    expect(back).to_have_text("← Previous lesson: Custom autograd functions")
    back.scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / f"beyond-end-{size}.png")
    assert visible_identifiers(page) == []
    assert axe_violations(page, axe_source) == []


def test_the_first_lesson_leads_on_and_an_exercise_of_the_second_keeps_to_it(page, learner_token):
    page.goto(f"/learn#token={learner_token('ben')}")
    page.wait_for_selector("#lesson .concept")
    onward = page.locator("#next-lesson")
    expect(onward).to_have_text("Next lesson: Beyond the basics →")
    onward.scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "learn-lesson-end.png")
    onward.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(SECOND.title)
    assert page.url.split("#")[0].endswith("/learn/beyond")

    page.locator(f'.exercise-list li[data-slug="{QUIZ}"] a').click()
    page.wait_for_selector("#exercise .prompt")
    expect(page.locator("#crumb-lesson")).to_have_text("Lesson 2: Beyond the basics")
    expect(page.locator("#crumb-section")).to_have_text(SECOND.concepts[0].title)
    expect(page.locator("#previous-exercise")).to_have_count(0)
    expect(page.locator("#next-exercise")).to_have_attribute("href", f"/learn/{SECOND.concepts[0].exercises[1]}")
    page.screenshot(path=SCREENSHOTS / "beyond-exercise-page.png")
    page.locator("#crumb-lesson").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(SECOND.title)
