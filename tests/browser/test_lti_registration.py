"""LTI Dynamic Registration in headless Chromium: the LMS admin's page (the test platform's, on
127.0.0.1) shows the tool's registration URL (the tool on localhost: another site) in a frame, as
Moodle and Canvas do; the tool registers itself and its page asks the LMS to close the frame. And the
dashboard's LTI platforms page: an admin makes a registration link and approves a pending platform.

Screenshots: build/screenshots/<test>.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.lti.platforms import register
from service.models import LtiPlatform
from tests.browser.support import sign_in
from tests.lti.platform import TestPlatform

from .conftest import SCREENSHOTS


@pytest.fixture
def lms() -> Iterator[TestPlatform]:
    with TestPlatform(client_id="browser-registration") as platform:
        yield platform


def _admin_link(live_server, label: str) -> str:
    response = live_server.api().post("/api/v1/admin/lti/registration-links", json={"label": label},
                                      headers={"Authorization": f"Bearer {live_server.keys['admin']}"})
    assert response.status_code == 201, response.json
    return response.json["url"]


def test_the_lms_shows_the_registration_in_a_frame_and_closes_it_when_done(browser, live_server, lms, request):
    tool = live_server.url.replace("127.0.0.1", "localhost")
    url = _admin_link(live_server, "Browser LMS")
    lms.tool_registration_url = url.replace("http://localhost", tool)  # the link as the tool's PUBLIC_URL would make it
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"uncaught error: {error}"))
    tab.on("console", lambda message: problems.append(message.text)  # the tool's page breaks no CSP rule of its own
           if message.type == "error" and "Content Security Policy" in message.text else None)
    frame_pages: list[Any] = []
    tab.on("framenavigated", lambda frame: frame_pages.append(frame) if frame.url.startswith(tool) else None)
    try:
        tab.goto(f"{lms.issuer}/tool-registration")
        tab.wait_for_function("window.ltiCloseMessages.length > 0")
        assert tab.evaluate("window.ltiCloseMessages") == [tool]  # once, from the tool's frame
        assert tab.locator("#registration").count() == 0 and tab.text_content("#status") == "The tool is registered."
        assert frame_pages, "the tool's page never loaded in the frame"
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=SCREENSHOTS / f"{request.node.name}.png", full_page=True)
        context.close()
    assert not problems, problems
    [sent] = lms.registrations
    assert sent["initiate_login_uri"] == f"{tool}/lti/login"
    with live_server.app.app_context():
        stored = db_session().scalar(select(LtiPlatform).where(LtiPlatform.client_id == "browser-registration"))
        assert stored is not None and stored.issuer == lms.issuer and stored.status == "active"


def test_the_registration_page_shows_why_it_cannot_register(page, live_server, lms):
    """The page the LMS shows when the link was used already: the reason, and nothing posted to the LMS."""
    url = _admin_link(live_server, "Used twice")
    first = live_server.api().get(lms.registration_url(url), headers={"Accept": "text/html"})
    assert first.status_code == 201
    page.goto(lms.registration_url(url).replace("http://localhost", live_server.url))
    assert page.text_content("h1") == "This registration link does not work"
    assert "Ask the administrator of gradquiz for a new registration link" in page.text_content("[role=alert]")


def test_an_admin_makes_a_link_and_approves_a_pending_platform(page, live_server):
    with live_server.app.app_context():
        session = db_session()
        pending = register(session, {"name": "Pending Moodle", "issuer": "https://moodle.example.edu",
                                     "client_id": "pending-client", "deployment_ids": ["1"],
                                     "auth_login_url": "https://moodle.example.edu/mod/lti/auth.php",
                                     "auth_token_url": "https://moodle.example.edu/mod/lti/token.php",
                                     "jwks_url": "https://moodle.example.edu/mod/lti/certs.php"}, approved=False)
        session.commit()
        pending_id = pending.id
    sign_in(page, live_server.keys["admin"])
    page.click("a[data-nav=platforms]")
    page.wait_for_selector(f"#approve-{pending_id}")
    assert page.get_attribute(f"#approve-{pending_id}", "aria-label") == "Approve Pending Moodle"

    page.fill("#link-label", "Moodle of the Faculty of Science")
    page.click("#link-form button[type=submit]")
    url = page.input_value("#new-link-url")
    assert url.startswith(live_server.url + "/lti/register?code=")
    assert page.is_visible("text=Registration link for “Moodle of the Faculty of Science”")

    page.click(f"#approve-{pending_id}")
    page.wait_for_selector(f"#approve-{pending_id}", state="detached")
    with live_server.app.app_context():
        assert db_session().get(LtiPlatform, pending_id).status == "active"
    assert page.is_visible("text=Moodle of the Faculty of Science")  # the link, listed
