"""Learners' names from a course's roster in the dashboard (issue 18), in headless Chromium: the
attempt search, an attempt and a learner's page show the name with the id beside it, "left the
course" beside one the roster no longer has, the id alone where nothing names the learner; a
hostile name is shown as text."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, update

from service.extensions import db_session
from service.models import ApiClient, Attempt, Course, CourseMember
from service.models.base import utcnow
from tests.browser.support import expect, sign_in, submit_attempt
from tests.helpers import bearer

from .conftest import SCREENSHOTS

QUIZ = "backward-none-for-bounds"
HOSTILE_NAME = "<img src=x onerror=alert(1)> Mallory"


@pytest.fixture(scope="module")
def named(live_server) -> dict[str, str]:
    """A course whose roster names two of three learners (one of them left); an attempt each."""
    api, key = live_server.api(), live_server.keys["lms-one"]
    ids = {learner: submit_attempt(api, key, QUIZ, learner, answer="none-each")["id"]
           for learner in ("nrps-ada", "nrps-alan", "nrps-nobody", "nrps-mallory")}
    with live_server.app.app_context():
        session = db_session()
        client_id = session.scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
        now = utcnow()
        course = Course(client_id=client_id, external_id="names-course", title="Deep Learning 101", created_at=now,
                        updated_at=now)
        session.add(course)
        session.flush()
        session.add_all([
            CourseMember(course_id=course.id, learner="nrps-ada", name="Ada Lovelace", email="ada@example.invalid",
                         roles=[], status="active", first_seen_at=now, updated_at=now),
            CourseMember(course_id=course.id, learner="nrps-alan", name="Alan Turing", roles=[], status="left",
                         first_seen_at=now, updated_at=now, left_at=now),
            CourseMember(course_id=course.id, learner="nrps-mallory", name=HOSTILE_NAME, roles=[], status="active",
                         first_seen_at=now, updated_at=now),
        ])
        session.execute(update(Attempt).where(Attempt.id.in_([uuid.UUID(i) for i in ids.values()]))
                        .values(course_id=course.id))
        session.commit()
    return ids


def test_names_show_with_the_id_and_who_left_is_marked(page, live_server, named):
    sign_in(page, live_server.keys["teacher"])
    page.goto("/admin#/attempts?exercise=" + QUIZ)
    page.wait_for_selector("#attempts-table tbody tr")
    row = page.locator("#attempts-table tbody tr", has_text="nrps-ada")
    expect(row.locator("td.learner")).to_have_text("Ada Lovelace nrps-ada")
    alan = page.locator("#attempts-table tbody tr", has_text="nrps-alan").locator("td.learner")
    expect(alan).to_have_text("Alan Turing nrps-alan left the course")
    expect(page.locator("#attempts-table tbody tr", has_text="nrps-nobody").locator("td.learner")) \
        .to_have_text("nrps-nobody")
    mallory = page.locator("#attempts-table tbody tr", has_text="nrps-mallory").locator("td.learner")
    expect(mallory).to_have_text(f"{HOSTILE_NAME} nrps-mallory")  # text, never markup

    page.goto(f"/admin#/attempts/{named['nrps-alan']}")
    expect(page.locator("#attempt-learner")).to_have_text("Alan Turing nrps-alan left the course")
    page.goto(f"/admin#/attempts/{named['nrps-ada']}")
    expect(page.locator("#attempt-learner-email")).to_have_text("ada@example.invalid")

    page.goto("/admin#/attempts?exercise=" + QUIZ)
    page.wait_for_selector("#attempts-table tbody tr")
    page.screenshot(path=SCREENSHOTS / "dashboard-names-attempts.png", full_page=True)
    page.goto(f"/admin#/attempts/{named['nrps-ada']}")
    page.click("#attempt-learner a")
    expect(page.locator("h1.learner")).to_have_text("Ada Lovelace nrps-ada")
    courses = page.locator("table", has_text="Deep Learning 101")
    expect(courses).to_contain_text("ada@example.invalid")
    progress = live_server.api().get("/api/v1/admin/learners/nrps-ada/progress",
                                     headers=bearer(live_server.keys["teacher"])).json
    assert [m["name"] for m in progress["memberships"]] == ["Ada Lovelace"]
