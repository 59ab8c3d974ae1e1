"""The assignment page (issue 18), in Chromium: a launch of an LMS link of several exercises opens the
page that lists them in order, each with its status, and the assignment's score; the learner opens an
exercise with the same token (kept in the tab, never in a URL), answers it and comes back to see it
passed and the score moved. Text from data is text; no serious accessibility violation; 375 px wide
without sideways scrolling. Screenshots in build/screenshots/learn-assignment-*.png."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.learn import render_assignment_page
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import Exercise, LtiLinkExercise, LtiPlatform, LtiResourceLink
from tests.browser.support import expect, shot
from tests.helpers import bearer

from .conftest import axe_violations

# In the assignment's order (not the catalog's): the test reads them back in this order.
EXERCISES = ("squarefn-forward-value", "backward-none-for-bounds", "builtin-clamp-forward-value")
TITLE = 'Week 3 <img src=x onerror="alert(1)"> custom functions'


@pytest.fixture(scope="module")
def assignment(live_server) -> dict:
    """An assignment link of the three exercises (mean), as a launch of a Deep Linking item leaves
    it, and /test-assignment-launch: its page as the launch renders it (the token in a JSON block),
    added before the server answers its first request."""
    made: dict[str, int] = {}

    def token(learner: str) -> str:
        scope = LearnerScope(client_id=made["client"], learner=learner, exercises=EXERCISES, role=LEARNER,
                             link_id=made["link"])
        return issue_learner_token(live_server.app.config["SECRET_KEY"], scope, 3600)

    def launched(learner: str):
        return render_assignment_page(launch={"token": token(learner), "expires_in": 3600, "exercise": EXERCISES[0],
                                              "learner": learner, "role": LEARNER, "assignment": True})

    live_server.app.add_url_rule("/test-assignment-launch/<learner>", "test_assignment_launch", launched)
    api, admin = live_server.api(), live_server.keys["admin"]
    registered = api.post("/api/v1/admin/lti/platforms", headers=bearer(admin), json={
        "name": "Assignment LMS", "issuer": "https://assignment-lms.invalid", "client_id": "gradquiz-tool",
        "deployment_ids": ["deployment-1"], "auth_login_url": "https://assignment-lms.invalid/auth",
        "auth_token_url": "https://assignment-lms.invalid/token", "jwks_url": "https://assignment-lms.invalid/jwks"})
    assert registered.status_code == 201, registered.json
    with live_server.app.app_context():
        session = db_session()
        platform = session.get(LtiPlatform, registered.json["id"])
        ids = {e.slug: e.id for e in session.scalars(select(Exercise).where(Exercise.slug.in_(EXERCISES)))}
        link = LtiResourceLink(platform_id=platform.id, deployment_id="deployment-1", resource_link_id="week-3",
                               context_id="DL101", exercise_id=ids[EXERCISES[0]], scoring="mean", title=TITLE)
        link.assignment_exercises = [LtiLinkExercise(position=i, exercise_id=ids[slug], points=1.0)
                                     for i, slug in enumerate(EXERCISES)]
        session.add(link)
        session.commit()
        made.update(client=platform.api_client_id, link=link.id)
    return {"token": token}


def items(page):
    return page.locator("ol.assignment-list > li")


def test_the_assignment_page_lists_its_exercises_in_order_and_follows_the_learner(page, live_server, assignment,
                                                                                   axe_source):
    page.goto("/test-assignment-launch/ann")
    expect(page.locator("h1")).to_have_text(TITLE)  # the LMS's title, as text
    expect(items(page)).to_have_count(3)
    assert [li.get_attribute("data-slug") for li in items(page).all()] == list(EXERCISES)
    expect(items(page).nth(0).locator("a")).to_have_text("SquareFn: the forward value")
    for i in range(3):
        expect(items(page).nth(i)).to_contain_text("Not tried")
    expect(page.locator("#assignment-total")).to_contain_text("none yet (out of 100)")
    expect(page.locator("#session-status")).to_have_text("Signed in as ann")
    assert "token" not in page.url
    assert axe_violations(page, axe_source) == []
    shot(page, "learn-assignment-desktop")

    # The second exercise, opened from the list in the same tab: the same token, from the tab's storage.
    items(page).nth(1).get_by_role("link").click()
    page.wait_for_url(f"**/learn/{EXERCISES[1]}")
    assert "token" not in page.url
    expect(page.locator("#session-status")).to_have_text("Signed in as ann")
    page.locator("input[value='none-each']").check()
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".panel .status").first).to_have_text("Graded: correct, score 100%.")

    # Back to the assignment: the exercise passed, the score moved (mean of 1, 0, 0: out of 100).
    page.get_by_role("link", name="Your assignment").click()
    page.wait_for_url("**/learn/assignment")
    expect(items(page).nth(1)).to_contain_text("Passed (1 attempt, score 100%)")
    expect(items(page).nth(0)).to_contain_text("Not tried")
    expect(page.locator("#assignment-total")).to_contain_text("33.33 out of 100")
    expect(page.locator("#assignment-total")).to_contain_text("1 of 3 exercises graded")
    shot(page, "learn-assignment-after-one")

    page.set_viewport_size({"width": 375, "height": 740})
    page.reload()
    expect(items(page).nth(1)).to_contain_text("Passed")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert axe_violations(page, axe_source) == []
    shot(page, "learn-assignment-phone")


def test_the_assignment_page_without_a_token_says_how_to_sign_in(page, assignment):
    page.goto("/learn/assignment")
    expect(page.locator("#assignment .notice")).to_contain_text("You are not signed in")
    expect(items(page)).to_have_count(0)
