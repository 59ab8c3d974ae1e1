"""Issue 35's acceptance, end to end in Chromium with real grading: a learner writes ClampFn wrong
(backward forgets grad_output), runs it and submits it, at a desktop's and a phone's size; the first
lines of each result, in the first screen, name the cause and what to do; the score follows the
exercise's scoring policy; no identifier of the code shows; after a pass the lesson marks the
exercise done and "next" leads on. Screenshots go to build/screenshots/teaching-*.png.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient
from tests.browser.conftest import axe_violations
from tests.browser.support import expect, shot, visible_identifiers

CLAMP = "clamp-function"
FORGOT = (PROJECT_ROOT / "exercises" / CLAMP / "wrong" / "forgot_grad_output.py").read_text()
CLAMP_REFERENCE = (PROJECT_ROOT / "exercises" / CLAMP / "reference.py").read_text()
SIZES = {"desktop": (1280, 800), "phone": (375, 740)}
CAUSE = "backward ignores grad_output"
ADVICE = "Multiply your local derivative by grad_output"


@pytest.fixture(scope="module")
def lesson_token(live_server):
    """A token for one learner and every exercise, as `make run`'s development link gives."""
    with live_server.app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))

    def make(learner: str) -> str:
        scope = LearnerScope(client_id=client_id, learner=learner, exercises=None, role=LEARNER, link_id=None)
        return issue_learner_token(live_server.app.config["SECRET_KEY"], scope, 3600)

    return make


def replace_code(page, code: str) -> None:
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)


def in_first_screen(page, locator) -> bool:
    """The element is shown, whole, inside the viewport as it stands (no scroll by the test)."""
    box = locator.bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] and box["width"] > 0


def first_screen(page, name: str) -> None:
    """What the learner sees without scrolling (<name>.png), and the whole page (<name>-full.png)."""
    page.screenshot(path=shot(page, f"{name}-full").with_name(f"{name}.png"))


@pytest.mark.parametrize("size", SIZES)
def test_wrong_clampfn_run_and_submit_open_with_the_cause_and_what_to_do(page, lesson_token, live_worker, axe_source, size):
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[size])))
    page.goto(f"/learn/{CLAMP}#token={lesson_token(f'clara-{size}')}")
    page.wait_for_selector("#exercise .prompt")
    replace_code(page, FORGOT)

    page.get_by_role("button", name="Run").click()
    run = page.locator(".run-result")
    expect(run.locator(".verdict")).to_be_visible(timeout=40_000)
    # The tutor's answer comes first: the cause, what to do, the one case that shows it, in the first screen.
    for part in (".verdict", ".cause", ".example"):
        assert in_first_screen(page, run.locator(part).first), f"{part} of the run is not in the first screen"
    expect(run.locator(".cause")).to_contain_text(CAUSE)
    expect(run.locator(".cause")).to_contain_text(ADVICE)
    expect(run.locator(".example")).to_contain_text("does not depend on")
    # The tables and the check list are folded below.
    expect(run.locator("details.all-checks")).not_to_have_attribute("open", "")
    assert visible_identifiers(page) == []
    first_screen(page, f"teaching-run-wrong-{size}")

    page.get_by_role("button", name="Submit").click()
    grade = page.locator(".grade").first
    expect(grade.locator(".verdict")).to_contain_text("30%", timeout=40_000)  # capped by the default gate policy
    for part in (".verdict", ".cause", ".example"):
        assert in_first_screen(page, grade.locator(part).first), f"{part} of the grade is not in the first screen"
    expect(grade.locator(".cause")).to_contain_text(CAUSE)
    expect(grade.locator(".cause")).to_contain_text(ADVICE)
    expect(grade.locator(".capped")).to_be_visible()
    expect(page.locator("ul.attempts > li")).to_have_count(1)
    assert visible_identifiers(page) == []
    assert axe_violations(page, axe_source) == []
    first_screen(page, f"teaching-submit-wrong-{size}")


def test_after_a_pass_the_lesson_marks_it_done_and_next_leads_on(page, lesson_token, live_worker, axe_source):
    token = lesson_token("petra")
    page.goto(f"/learn/{CLAMP}#token={token}")
    page.wait_for_selector("#exercise .prompt")
    expect(page.locator("#crumbs")).to_contain_text("Lesson")
    concept = page.locator("#crumb-section").inner_text()
    assert concept and concept.lower() != "code"  # the concept, not the kind
    replace_code(page, CLAMP_REFERENCE)
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".grade").first.locator(".verdict")).to_contain_text("100%", timeout=40_000)
    onward = page.locator("#next-after-pass a[rel=next]")
    expect(onward).to_be_visible()
    title = onward.inner_text().removeprefix("Next: ")
    onward.click()
    expect(page.locator("#exercise-title")).to_have_text(title)
    assert page.url.split("#")[0] != f"{page.url.split('/learn/')[0]}/learn/{CLAMP}"

    page.goto("/learn")
    item = page.locator(f'.exercise-list li[data-slug="{CLAMP}"]')
    expect(item).to_have_attribute("data-state", "passed")
    expect(item.locator(".progress-mark")).to_contain_text("done")
    expect(page.locator("#difficulty-legend")).to_be_visible()
    expect(page.locator("#key-points")).to_contain_text("Key points")
    item.scroll_into_view_if_needed()
    shot(page, "teaching-lesson-after-a-pass")
    assert visible_identifiers(page) == []
    assert axe_violations(page, axe_source) == []


def test_wrong_quiz_answer_marks_each_pick(page, lesson_token):
    page.goto(f"/learn/apply-call-forms#token={lesson_token('quinn')}")
    page.wait_for_selector("#exercise .prompt")
    page.get_by_role("checkbox", name=re.compile(r"ClampFn\.apply\(")).first.check()
    page.get_by_role("checkbox", name=re.compile(r"ClampFn\(\)\(")).first.check()
    page.get_by_role("button", name="Submit").click()
    grade = page.locator(".grade").first
    expect(grade.locator(".verdict")).to_contain_text("Not quite")
    expect(grade.locator(".choice-right")).to_have_count(1)
    expect(grade.locator(".choice-wrong")).to_have_count(1)
    assert visible_identifiers(page) == []
    shot(page, "teaching-quiz-wrong")
