"""An instructor's launch inside the LMS's cross-site frame opens the dashboard of their course
(issue 18), in headless Chromium with third-party cookies blocked: signed in by the launch alone (no
key), the course's people by the names the LMS's roster (NRPS) gives, their attempts, and nothing of
another course. Screenshots: build/screenshots/test_*.png (the course page with the frame) and
course-dashboard-phone.png (the same page at 375 px)."""

from __future__ import annotations

from service.config import Settings
from service.lti.roster import RosterSyncer
from tests.lti.platform import INSTRUCTOR_ROLES

from .conftest import SCREENSHOTS
from .test_lti_frame import (  # noqa: F401 (fixtures)
    LEARNER,
    _arrives_on_the_exercise_page,
    _the_token_works,
    blocking_browser,
    lms,
    open_course,
    tool,
)

TEACHER = "teacher-1"  # "Prof. Emmy Noether" in the test LMS's roster of course c1


def _read_rosters(live_server) -> None:
    """What `flask worker` does in the background: read the rosters that are due (the launch queued one)."""
    settings = Settings.from_env({}, database_url=live_server.database_url, env="testing")
    outcomes = RosterSyncer(settings).run_once()
    assert outcomes and all(o.error is None for o in outcomes), outcomes


def test_an_instructors_launch_opens_the_course_dashboard_in_the_lms_frame(blocking_browser, open_course, lms,
                                                                            live_server, tool):
    # A learner of the course answers first.
    learner = open_course(blocking_browser.new_context(), "frame")
    _the_token_works(learner, _arrives_on_the_exercise_page(learner, tool))
    lms.launch_claims = {**lms.launch_claims, "sub": TEACHER, "roles": INSTRUCTOR_ROLES}

    course = open_course(blocking_browser.new_context(viewport={"width": 1280, "height": 1000}), "frame")
    frame = course.tool_frame
    frame.wait_for_url(f"{tool}/lti/launch")
    frame.wait_for_selector("h1:has-text('Deep Learning 101')")
    assert not frame.is_visible("#signin")  # signed in by the launch: no key asked for
    assert "Noether" in frame.inner_text("#whoami") or TEACHER in frame.inner_text("#whoami")
    assert frame.is_visible("#try-exercise")
    _read_rosters(live_server)
    frame.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")
    people = frame.wait_for_selector("table.members")
    text = people.inner_text()
    for name in ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Prof. Emmy Noether"):
        assert name in text, text
    assert "ada@example.invalid" in text

    # The course's attempts: the learner's.
    frame.evaluate("location.hash = '#/attempts'")
    frame.wait_for_selector("#attempts-table tbody tr")
    assert LEARNER in frame.inner_text("#attempts-table tbody")
    assert course.problems == [] and learner.problems == [], course.problems + learner.problems

    # Storage is blocked in this frame (third-party): the session lives in the page's memory, and the
    # dashboard's own links (not an address typed anew) bring the course page back.
    frame.click("nav a[data-nav='courses']")
    frame.wait_for_selector("table.members")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    course.tab.locator("iframe[name=tool]").screenshot(path=SCREENSHOTS / "course-dashboard-frame.png")
    assert frame.get_attribute("nav a[data-nav='courses']", "href").startswith("#/courses/")

    # The same page at a phone's width.
    course.tab.set_viewport_size({"width": 375, "height": 900})
    frame.wait_for_selector("table.members")
    course.tab.locator("iframe[name=tool]").screenshot(path=SCREENSHOTS / "course-dashboard-phone.png")
    assert course.problems == [], course.problems
