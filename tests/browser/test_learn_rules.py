"""The exercise page shows the learner the rules as they stand (issue 17), in Chromium: attempts used
and left, the due date and what late work costs, what the next attempt counts at most; a graded
attempt says what its penalty took off; once no attempt is left the page says why and Submit is off.
Screenshots at desktop and phone widths."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, select

from service.extensions import db_session
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient
from service.models.base import utcnow
from service.models.rules import AssessmentRules
from tests.browser.support import expect, shot

QUIZ, RIGHT, WRONG = "backward-none-for-bounds", "none-each", "zero-number"


@pytest.fixture
def strict_rules(live_server):
    """Two attempts, the second counting at most half, due in two days with late work at 70%:
    set for the client's use of the quiz through the staff API, taken away after the test."""
    with live_server.app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
    due = (utcnow() + timedelta(days=2)).replace(microsecond=0)
    response = live_server.app.test_client().put(
        f"/api/v1/admin/exercises/{QUIZ}/clients/{client_id}/rules",
        headers={"Authorization": f"Bearer {live_server.keys['teacher']}"},
        json={"max_attempts": 2, "attempt_penalty": 0.5, "due_at": due.isoformat(),
                                  "late": "accept", "late_penalty": 0.3, "show_explanation": "after_attempts"})
    assert response.status_code == 200, response.json
    yield client_id
    with live_server.app.app_context():
        db_session().execute(delete(AssessmentRules).where(AssessmentRules.client_id == client_id))
        db_session().commit()


def test_the_page_shows_the_rules_and_what_they_did(page, live_server, strict_rules):
    token = issue_learner_token(live_server.app.config["SECRET_KEY"],
                                LearnerScope(client_id=strict_rules, learner="rule-reader", exercise=QUIZ,
                                             role=LEARNER, link_id=None), 3600)
    page.goto(f"{live_server.url}/learn/{QUIZ}#token={token}")
    rules = page.locator(".standing-box")
    expect(rules).to_contain_text("0 of 2 used, 2 left")
    expect(rules).to_contain_text("Late attempts count 70% of their score.")
    expect(rules).to_contain_text("The explanation is shown once you can no longer submit.")
    shot(page, "learn-rules-desktop", rules)

    page.locator(f"input[value='{WRONG}']").check()
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".status")).to_contain_text("not quite")
    expect(rules).to_contain_text("1 of 2 used, 1 left")
    expect(rules).to_contain_text("counts at most 50% of its score.")
    # The explanation states the answer: not before the learner is done.
    expect(page.locator(".result")).not_to_contain_text("Explanation")

    page.locator(f"input[value='{RIGHT}']").check()
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".result .penalty")).to_have_text(
        "Counted 50% of the grader's 100%: attempt 2 counts at most 50%.")
    expect(page.locator(".result")).to_contain_text("Explanation")
    expect(rules).to_contain_text("2 of 2 used, 0 left")
    expect(page.locator(".standing-box [role=alert]")).to_have_text("You have used all 2 attempts at this exercise.")
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()
    shot(page, "learn-rules-used-up")

    page.set_viewport_size({"width": 375, "height": 740})
    page.reload()
    expect(rules).to_contain_text("2 of 2 used, 0 left")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "learn-rules-phone")
