"""The dashboard's assessment rules (issue 17) in a real headless Chromium: the LTI links, one
link's rules layer by layer, staff's rules set through the form (the API's errors shown next to
their fields, nothing saved), what is then in force, a learner's extension given and removed;
the exercise page's way there and its counted mean score. Screenshots at desktop and phone widths
in build/screenshots/."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.models import Exercise, LtiPlatform, LtiResourceLink
from tests.browser.conftest import SCREENSHOTS
from tests.browser.support import expect, sign_in, submit_attempt
from tests.helpers import bearer

QUIZ = "backward-none-for-bounds"
LMS_DUE = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
ADMIN = "/api/v1/admin"
PHONE = {"width": 375, "height": 740}


@pytest.fixture(scope="module")
def link_id(live_server) -> int:
    """A platform registered through the API and a link of it to QUIZ, as a launch leaves it, with
    a due date the LMS sent."""
    api, admin = live_server.api(), live_server.keys["admin"]
    registered = api.post(f"{ADMIN}/lti/platforms", headers=bearer(admin), json={
        "name": "Course LMS", "issuer": "https://lms.invalid", "client_id": "gradquiz-tool",
        "deployment_ids": ["deployment-1"], "auth_login_url": "https://lms.invalid/auth",
        "auth_token_url": "https://lms.invalid/token", "jwks_url": "https://lms.invalid/jwks"})
    assert registered.status_code == 201, registered.json
    with live_server.app.app_context():
        session = db_session()
        platform = session.scalar(select(LtiPlatform).where(LtiPlatform.id == registered.json["id"]))
        exercise = session.scalar(select(Exercise).where(Exercise.slug == QUIZ))
        link = LtiResourceLink(platform_id=platform.id, deployment_id="deployment-1", resource_link_id="rl-week-3",
                               context_id="DL101", exercise_id=exercise.id, lms_due_at=LMS_DUE)
        session.add(link)
        session.commit()
        return link.id


def rules_of(live_server, link_id: int) -> dict:
    response = live_server.api().get(f"{ADMIN}/links/{link_id}/rules", headers=bearer(live_server.keys["admin"]))
    assert response.status_code == 200, response.json
    return response.json


def in_force(page, rule: str) -> str:
    return page.inner_text(f"#rules-layers tr[data-rule={rule}] td.in-force")


def no_wider_than(page, width: int) -> None:
    scroll = page.evaluate("() => document.documentElement.scrollWidth")
    assert scroll <= width, f"the page is {scroll}px wide on a {width}px screen"


def test_staff_set_a_links_rules_through_the_form_and_see_them_in_force(page, live_server, link_id):
    sign_in(page, live_server.keys["teacher"])
    page.click("nav >> text=LTI links")
    row = page.locator(f"#links-table tr[data-link='{link_id}']")
    expect(row).to_contain_text("Course LMS")
    expect(row).to_contain_text("DL101")
    page.screenshot(path=SCREENSHOTS / "dashboard-rules-links.png", full_page=True)
    row.locator(f"a >> text=Rules of link {link_id}").click()
    page.wait_for_selector("#rules-layers")
    expect(page.locator("#link-subtitle")).to_contain_text("rl-week-3")
    assert in_force(page, "max_attempts") == "unlimited"
    lms_due = page.locator("#rules-layers tr[data-rule=due_at] td.layer").nth(2).locator("time")
    assert lms_due.get_attribute("datetime").startswith("2031-05-01T12:00:00")

    # Mistakes: the API's problem, each error next to its field, nothing saved.
    page.fill("#rule-max_attempts", "0")
    page.fill("#rule-attempt_penalty", "0.1")
    page.fill("#rule-attempt_maxima", "1, 0.5")
    page.fill("#rule-late_penalty", "1.5")
    page.click("#rules-save")
    expect(page.locator("#err-rule-max_attempts")).to_contain_text("greater than or equal to 1")
    expect(page.locator("#err-rule-late_penalty")).to_contain_text("less than or equal to 1")
    assert page.locator("#err-rule-due_at").inner_text() == ""
    assert page.get_attribute("#rule-max_attempts", "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "rule-max_attempts"  # the first field to fix
    expect(page.locator("#staff-rules .problem")).to_contain_text("Nothing was saved")
    page.screenshot(path=SCREENSHOTS / "dashboard-rules-errors.png", full_page=True)
    page.fill("#rule-max_attempts", "2")
    page.fill("#rule-late_penalty", "0.2")
    page.click("#rules-save")  # once the fields are right, the rules together: one way of penalising
    expect(page.locator("#err-rule-attempt_maxima")).to_contain_text("not both")
    assert page.locator("#err-rule-max_attempts").inner_text() == ""
    assert page.get_attribute("#rule-max_attempts", "aria-invalid") is None
    assert rules_of(live_server, link_id)["assignment"] is None

    page.fill("#rule-attempt_maxima", "")
    page.select_option("#rule-late", "accept")
    page.select_option("#rule-show_explanation", "after_attempts")
    page.fill("#rule-due_at", "2030-01-01T12:00")  # staff's date: the LMS's wins
    page.click("#rules-save")
    expect(page.locator("#rules-layers tr[data-rule=max_attempts] td.in-force")).to_have_text("2")
    assert in_force(page, "late") == "accepted" and in_force(page, "show_explanation") == "after the attempts are used up"
    assert in_force(page, "late_penalty") == "0.2" and in_force(page, "attempt_penalty") == "0.1"
    in_force_due = page.locator("#rules-layers tr[data-rule=due_at] td.in-force time").get_attribute("datetime")
    assert in_force_due.startswith("2031-05-01T12:00:00")
    described = rules_of(live_server, link_id)
    assert described["updated_by"] == "teacher"
    assert {k: described["assignment"][k] for k in ("max_attempts", "attempt_penalty", "late", "late_penalty",
                                                    "show_explanation")} == {
        "max_attempts": 2, "attempt_penalty": 0.1, "late": "accept", "late_penalty": 0.2,
        "show_explanation": "after_attempts"}
    assert "attempt_maxima" not in described["assignment"] and "grace_minutes" not in described["assignment"]
    assert described["assignment"]["due_at"].endswith(("Z", "+00:00"))  # the reader's time, sent with its offset
    assert described["in_force"]["max_attempts"] == 2
    # The form shows what is saved; the fields left empty stay not set.
    assert page.input_value("#rule-max_attempts") == "2" and page.input_value("#rule-grace_minutes") == ""

    # An extension: one more attempt for ada, with a note; then removed.
    page.fill("#ext-learner", "ada")
    page.fill("#ext-max_attempts", "1")
    page.fill("#ext-note", "Missed the lab: medical note")
    page.click("#ext-save")
    extension = page.locator("table.extensions tr[data-learner=ada]")
    expect(extension).to_contain_text("Missed the lab")
    assert extension.locator("td.num").inner_text() == "3"
    [listed] = rules_of(live_server, link_id)["extensions"]
    assert (listed["rules"], listed["in_force"]["max_attempts"]) == ({"max_attempts": 3}, 3)
    page.screenshot(path=SCREENSHOTS / "dashboard-rules-desktop.png", full_page=True)

    page.set_viewport_size(PHONE)
    page.reload()
    page.wait_for_selector("table.extensions tr[data-learner=ada]")
    no_wider_than(page, PHONE["width"])
    page.screenshot(path=SCREENSHOTS / "dashboard-rules-phone.png", full_page=True)
    page.locator("table.extensions tr[data-learner=ada] button").click()
    expect(page.locator("table.extensions")).to_have_count(0)
    assert rules_of(live_server, link_id)["extensions"] == []


def test_the_forms_are_labelled_and_keyboard_reachable(page, live_server, link_id):
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/links/{link_id}")
    page.wait_for_selector("#rules-form")
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('#view input, #view select, #view textarea')]
        .filter(c => !c.labels || !c.labels.length).map(c => c.id || c.name)""")
    assert unlabelled == []
    page.focus("#rule-max_attempts")
    order = []
    for _ in range(len(["attempt_penalty", "attempt_maxima", "available_from"])):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
    assert order[0] == "rule-attempt_penalty" and order[1] == "rule-attempt_maxima"
    # An extension needs a learner and something to change; said at the field, nothing sent.
    page.click("#ext-save")
    expect(page.locator("#err-ext-learner")).not_to_be_empty()
    page.fill("#ext-learner", "bob")
    page.click("#ext-save")
    expect(page.locator("#err-ext-due_at")).to_contain_text("Give a new due date")
    assert rules_of(live_server, link_id)["extensions"] == []


def test_the_exercise_page_leads_to_its_links_rules_and_shows_the_counted_mean(page, live_server, link_id):
    api, key = live_server.api(), live_server.keys["lms-one"]
    submit_attempt(api, key, QUIZ, "ada", answer="none-each")
    submit_attempt(api, key, QUIZ, "bob", answer="zero-number")
    from service.services import progress

    with live_server.app.app_context():  # no worker in this module: fold the grades here
        while progress.fold_pending(db_session()):
            db_session().commit()
        db_session().commit()
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/exercises/{QUIZ}")
    mean = page.locator(".stat", has_text="Mean best score (counted)")
    expect(mean.locator(".stat-value")).to_have_text("50%")
    page.click(f"#exercise-links a[href='#/links/{link_id}']")
    page.wait_for_selector("#rules-layers")
    page.set_viewport_size(PHONE)
    page.goto(f"/admin#/exercises/{QUIZ}")
    page.wait_for_selector("#exercise-links")
    no_wider_than(page, PHONE["width"])
    page.locator("#exercise-links").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "dashboard-exercise-rules-phone.png")
    # A client's own use of the exercise, by the client's id.
    with live_server.app.app_context():
        from service.models import ApiClient

        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
    page.fill("#rules-client", str(client_id))
    page.click("#client-rules-form button")
    page.wait_for_url(f"**#/exercises/{QUIZ}/clients/{client_id}/rules")
    page.wait_for_selector("#rules-layers")
    assert in_force(page, "max_attempts") == "unlimited"


def test_the_link_list_filters_by_exercise(page, live_server, link_id):
    sign_in(page, live_server.keys["admin"])
    page.goto("/admin#/links?exercise=clamp-function")
    expect(page.locator("#view .empty")).to_contain_text("No LTI link to this exercise yet")
    page.fill("#links-exercise", QUIZ)
    page.click("#links-filter button[type=submit]")
    expect(page.locator(f"#links-table tr[data-link='{link_id}']")).to_have_count(1)
    assert page.input_value("#links-exercise") == QUIZ


def test_the_layers_dates_come_as_iso_8601(live_server, link_id):
    """The API the page reads gives each layer's dates as ISO 8601 (the LMS's too)."""
    described = rules_of(live_server, link_id)
    assert described["lms"]["due_at"].startswith("2031-05-01T12:00:00")
    assert datetime.fromisoformat(described["lms"]["due_at"]) > datetime.now(UTC) + timedelta(days=1)
