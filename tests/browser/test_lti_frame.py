"""An LTI launch inside an LMS's cross-site frame, in headless Chromium.

The test platform's course page (http://127.0.0.1:<port>, tests/lti/platform.py) shows the tool
(http://localhost:<port>: another site) in an iframe, as LMSs do; the frame's address is the
tool's login initiation, and the launch must end on the exercise page with a learner token that
works (it submits an attempt, whose score reaches the LMS's gradebook, and is renewed):

- with Chromium's default settings, which here block third-party cookies (as Safari's do): the
  state cookie comes back because it is Partitioned (CHIPS), kept for this LMS's frame alone. A
  control test shows that the same cookie without Partitioned is not sent back;
- with third-party cookies blocked explicitly (Chromium's 3PC phase-out switch) and no platform
  storage offered;
- with no cookie of the tool kept at all, partitioned or not (a profile setting), as in a browser
  that blocks third-party cookies and has no CHIPS: the state and nonce come back from the
  platform's storage (lti_storage_target; lti.capabilities, lti.put_data, lti.get_data over
  postMessage), kept in a sibling frame (as Canvas does) or in the course page itself.

And the whole flow through the page's own UI, with third-party cookies blocked: a link to a code
exercise, whose learner reads the prompt, edits the code, presses Run and sees the numerical check,
presses Submit and sees the grade (graded by a real worker), and whose score reaches the gradebook.

And an instructor's launch (issue 18): the dashboard of their course, signed in by the launch alone
(no key), the course's people by the names the LMS's roster (NRPS) gives, their attempts
(course-dashboard-frame.png and, at 375 px, course-dashboard-phone.png).

Each test saves the course page, the tool's frame in it, in build/screenshots/<test>.png.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Iterator
from typing import Any

import pytest

from service.config import PROJECT_ROOT, Settings
from service.lti.passback import ScorePassbacks
from service.lti.platforms import platform_keys
from service.lti.roster import RosterSyncer
from service.lti.tokens import access_tokens
from service.outbound.runner import OutboundRunner
from tests.lti.platform import INSTRUCTOR_ROLES, STORAGE_FRAME, TestPlatform

from .conftest import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, axe_violations

QUIZ, RIGHT = "backward-none-for-bounds", "none-each"
CODE = "square-function"  # a code exercise, on a link of its own (resource link "link-code")
REFERENCE = (PROJECT_ROOT / "exercises" / CODE / "reference.py").read_text()
LEARNER = "student-7"
# Chromium's own switch for "third-party cookies blocked" (its 3PC phase-out test mode).
BLOCK_THIRD_PARTY = "--test-third-party-cookie-phaseout"


@pytest.fixture(scope="module")
def tool(live_server) -> str:
    """The tool's origin as the browser reaches it: another site than the platform's 127.0.0.1."""
    return live_server.url.replace("127.0.0.1", "localhost")


@pytest.fixture(scope="module")
def lms(live_server, tool) -> Iterator[TestPlatform]:
    """The test platform, registered with the tool, launching QUIZ for LEARNER."""
    with TestPlatform() as platform:
        http = live_server.api()
        response = http.post("/api/v1/admin/lti/platforms", json={"name": "Browser LMS", **platform.registration()},
                             headers={"Authorization": f"Bearer {live_server.keys['admin']}"})
        assert response.status_code == 201, response.json
        platform_keys.forget(response.json["id"])
        tool_jwks = http.get("/lti/jwks").json
        platform.tool_jwks = lambda: tool_jwks
        platform.tool_login_url, platform.tool_origin = f"{tool}/lti/login", tool
        platform.launch_claims = {"custom": {"exercise": QUIZ}, "sub": LEARNER, "target_link_uri": f"{tool}/lti/launch"}
        yield platform
    access_tokens.forget(platform.token_url, platform.client_id)  # as tests/lti/conftest.py's platform


@pytest.fixture(scope="module")
def blocking_browser(browser) -> Iterator[Any]:
    """Chromium with third-party cookies blocked (launched by the same Playwright as `browser`)."""
    chromium = browser.browser_type.launch(executable_path=CHROMIUM, headless=True,
                                           args=CHROMIUM_ARGS + [BLOCK_THIRD_PARTY])
    try:
        yield chromium
    finally:
        chromium.close()


@pytest.fixture(scope="module")
def cookieless_context(browser, tmp_path_factory, tool) -> Iterator[Any]:
    """A Chromium profile that keeps no cookie of the tool's site at all, partitioned or not (the
    content setting "block" for it, written into the profile before the browser starts)."""
    profile = tmp_path_factory.mktemp("cookieless-profile")
    (profile / "Default").mkdir()
    host = tool.split("//")[1].split(":")[0]
    preferences = {"profile": {"content_settings": {"exceptions": {"cookies": {
        f"http://{host}:*,*": {"setting": 2}, f"[*.]{host},*": {"setting": 2}}}}}}
    (profile / "Default" / "Preferences").write_text(json.dumps(preferences))
    context = browser.browser_type.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS + [BLOCK_THIRD_PARTY],
        viewport={"width": 1280, "height": 900}, service_workers="block")
    try:
        yield context
    finally:
        context.close()


@dataclasses.dataclass
class Course:
    """The course page open in a tab, and what the tool answered to its launches."""

    tab: Any
    launches: list
    problems: list[str]

    @property
    def tool_frame(self) -> Any:
        return self.tab.frame(name="tool")

    def storage_log(self, mode: str) -> list[str]:
        holder = self.tab.frame(name=STORAGE_FRAME) if mode == "frame" else self.tab.main_frame
        return [entry["subject"] for entry in holder.evaluate("window.ltiStorageLog")]


@pytest.fixture
def open_course(request, lms, tool) -> Iterator[Any]:
    """open_course(context, mode, exercise=QUIZ): the course page in a new tab of `context`, its link
    launching `exercise` (another exercise than QUIZ on a resource link of its own), failing the test
    on JavaScript errors, dialogs, CSP violations and requests to any origin but the two sites'."""
    opened: list[tuple[Any, Course]] = []
    claims = lms.launch_claims

    def open_(context, mode: str, exercise: str = QUIZ) -> Course:
        if exercise != QUIZ:  # read at the platform's /auth, while the frame loads: kept until teardown
            lms.launch_claims = {**claims, "custom": {"exercise": exercise}, "resource_link_id": f"link-{exercise}"}
        course = Course(context.new_page(), [], [])
        tab = course.tab
        tab.set_default_timeout(15_000)

        def route(r):
            if r.request.url.startswith((tool, lms.issuer, "data:", "blob:")):
                return r.continue_()
            course.problems.append(f"request to another origin: {r.request.url}")
            return r.abort()

        tab.route("**/*", route)
        tab.on("pageerror", lambda error: course.problems.append(f"uncaught error: {error}"))
        tab.on("dialog", lambda dialog: (course.problems.append(f"dialog {dialog.type}"), dialog.dismiss()))
        tab.on("console", lambda message: course.problems.append(f"console {message.type}: {message.text}")
               if message.type == "error" and "Content Security Policy" in message.text else None)
        tab.on("response", lambda r: course.launches.append(r)
               if r.url == f"{tool}/lti/launch" and r.request.method == "POST" else None)
        tab.goto(f"{lms.issuer}/course/{mode}")
        opened.append((context, course))
        return course

    try:
        yield open_
    finally:
        lms.launch_claims = claims
    for _context, course in opened:
        try:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            course.tab.screenshot(path=SCREENSHOTS / f"{request.node.name}.png", full_page=True)
        except Exception as exc:  # for people to look at: never fails a test
            print(f"no screenshot of {request.node.name}: {exc}")
        course.tab.close()


def _arrives_on_the_exercise_page(course: Course, tool: str, exercise: str = QUIZ) -> dict:
    """Wait for the tool's frame to show the exercise page; the launch it was handed."""
    frame = course.tool_frame
    frame.wait_for_url(f"{tool}/lti/launch")
    frame.wait_for_selector("#exercise-title")
    # The page's script takes the block out of the document once read: the launch as it was sent.
    body = course.launches[-1].text()
    start = body.index('id="gradquiz-launch">') + len('id="gradquiz-launch">')
    launch = json.loads(html.unescape(body[start:body.index("</script>", start)]))
    assert launch["exercise"] == exercise and launch["learner"] == LEARNER
    assert launch["token"] not in frame.url
    frame.wait_for_selector(f"#session-status:has-text('{LEARNER}')")  # the page took the token
    return launch


def _the_token_works(course: Course, launch: dict) -> None:
    """From inside the tool's frame, as the page does: the token submits an attempt and is renewed."""
    used = course.tool_frame.evaluate("""async (launch) => {
        const auth = {"Authorization": "Bearer " + launch.token, "Content-Type": "application/json"};
        const attempt = await fetch(launch.api + "/exercises/" + launch.exercise + "/attempts",
                                    {method: "POST", headers: auth, body: JSON.stringify({answer: "none-each"})});
        const renewed = await fetch(launch.refresh_url, {method: "POST", headers: auth});
        return {attempt: attempt.status, body: await attempt.json(), renewed: renewed.status,
                exercises: (await renewed.json()).exercises};
    }""", launch)
    assert (used["attempt"], used["body"]["learner"], used["body"]["score"]) == (201, LEARNER, 1.0), used
    assert (used["renewed"], used["exercises"]) == (200, [QUIZ]), used


def test_launch_in_a_cross_site_frame_with_default_settings(browser, open_course, tool):
    course = open_course(browser.new_context(), "frame")
    _the_token_works(course, _arrives_on_the_exercise_page(course, tool))
    # The login stored the state and nonce in the platform's frame; the Partitioned state cookie
    # came back, so the launch did not need to read them.
    assert course.storage_log("frame") == ["lti.put_data", "lti.put_data"]
    assert len(course.launches) == 1
    assert not course.problems, course.problems


def test_launch_with_third_party_cookies_blocked(blocking_browser, open_course, tool):
    course = open_course(blocking_browser.new_context(), "none")  # and no platform storage to fall back on
    _the_token_works(course, _arrives_on_the_exercise_page(course, tool))
    assert not course.problems, course.problems


@pytest.mark.parametrize("name", ["default", "third-party cookies blocked"])
def test_without_partitioned_the_state_cookie_would_not_come_back(browser, blocking_browser, open_course, lms, tool,
                                                                   monkeypatch, name):
    """The control: these browsers do block third-party cookies, so the launch above works because
    the cookie is Partitioned (and the one below because of the platform's storage)."""
    import service.resources.lti as lti_endpoints

    monkeypatch.setattr(lti_endpoints, "COOKIE_OPTIONS",
                        {k: v for k, v in lti_endpoints.COOKIE_OPTIONS.items() if k != "partitioned"})
    course = open_course((browser if name == "default" else blocking_browser).new_context(), "none")
    course.tool_frame.wait_for_url(f"{tool}/lti/launch")
    course.tool_frame.wait_for_load_state()
    refused = course.launches[-1]
    assert refused.status == 401 and "browser that started it" in refused.json()["detail"]


@pytest.mark.parametrize("mode", ["frame", "parent"])
def test_launch_with_no_cookie_kept_uses_the_platforms_storage(cookieless_context, open_course, live_server, lms,
                                                               tool, mode):
    course = open_course(cookieless_context, mode)
    launch = _arrives_on_the_exercise_page(course, tool)
    # Stored at login, read back at the launch (the state cookie never came), then cleared.
    # (The course page answers lti.capabilities; in mode "parent" it keeps the data too.)
    asked = ["lti.capabilities"] if mode == "parent" else []
    assert course.storage_log(mode) == asked + ["lti.put_data", "lti.put_data"] + asked + [
        "lti.get_data", "lti.get_data", "lti.put_data", "lti.put_data"]
    assert [r.status for r in course.launches] == [200, 200]  # the page that read the storage, then the exercise
    sent_before = len(lms.scores)
    _the_token_works(course, launch)
    # The score reaches the LMS's gradebook.
    settings = dataclasses.replace(live_server.app.config["SETTINGS"], outbound_retry_seconds=0.01)
    assert OutboundRunner(settings, kinds=[ScorePassbacks(settings)]).run_once() >= 1
    latest = lms.scores[sent_before:]
    assert latest and latest[-1]["body"]["userId"] == LEARNER and latest[-1]["body"]["scoreGiven"] == 100
    assert not course.problems, course.problems


def test_with_no_cookie_and_no_platform_storage_the_launch_is_refused(cookieless_context, open_course, tool):
    course = open_course(cookieless_context, "none")
    course.tool_frame.wait_for_url(f"{tool}/lti/launch")
    course.tool_frame.wait_for_load_state()
    refused = course.launches[-1]
    assert refused.status == 401 and refused.headers["content-type"] == "application/problem+json"
    assert "browser that started it" in refused.json()["detail"]


def test_learner_in_a_frame_with_third_party_cookies_blocked_reads_runs_submits_and_the_lms_gets_the_score(
        blocking_browser, open_course, live_server, live_worker, lms, tool):
    """The issue's "done when", through the page's own UI only (no fetch from the test): launched
    from the LMS into its cross-site frame, third-party cookies blocked, a code exercise."""
    from playwright.sync_api import expect

    course = open_course(blocking_browser.new_context(viewport={"width": 1280, "height": 900}), "none", CODE)
    _arrives_on_the_exercise_page(course, tool, CODE)
    frame = course.tool_frame
    # Reads: the title and the prompt, rendered from the exercise's Markdown.
    expect(frame.locator("#exercise-title")).to_have_text("SquareFn: saving a tensor for backward")
    expect(frame.locator("#exercise .prompt")).to_contain_text("Write SquareFn with SquareFn.apply(x)")
    expect(frame.locator("#exercise .prompt code").first).to_have_text("SquareFn")
    # Edits: the editor holds the starter code; the learner types the answer in its place.
    expect(frame.get_by_role("textbox", name="Code")).to_be_visible()
    frame.locator(".cm-content").click()
    course.tab.keyboard.press("Control+a")
    course.tab.keyboard.insert_text(REFERENCE)
    expect(frame.locator(".cm-content")).to_contain_text("ctx.save_for_backward(x)")
    # Runs: the sandbox's result and its numerical check, shown on the page.
    status = frame.locator(".panel .status").first
    frame.get_by_role("button", name="Run").click()
    expect(status).to_have_text("Run finished: the numerical check passed.", timeout=40_000)
    run = frame.locator(".run-result")
    expect(run.locator(".verdict")).to_have_text("Run finished. Every check passed on these inputs.")
    expect(run.locator("details.values")).to_contain_text("Gradients")
    # Submits: the worker grades it, and the page shows the score and each check.
    sent_before = len(lms.scores)
    frame.get_by_role("button", name="Submit").click()
    expect(status).to_have_text("Graded: score 100%.", timeout=40_000)
    grade = frame.locator(".grade").first
    expect(grade.locator("h3.verdict")).to_have_text("Score: 100%. Every check passed.")
    expect(grade).not_to_contain_text("null")
    expect(grade.locator("details.all-checks ul.checks > li.bad")).to_have_count(0)
    expect(grade.locator("details.all-checks ul.checks > li.ok")).not_to_have_count(0)
    expect(grade).to_contain_text("Explanation")  # shown to a passed attempt only
    expect(frame.locator("ul.attempts > li")).to_have_count(1)
    status.scroll_into_view_if_needed()  # what the screenshot of the course page shows: the grade
    # The LMS receives the score: the passback the graded attempt queued, sent to its gradebook.
    settings = dataclasses.replace(live_server.app.config["SETTINGS"], outbound_retry_seconds=0.01)
    assert OutboundRunner(settings, kinds=[ScorePassbacks(settings)]).run_once() >= 1
    latest = lms.scores[sent_before:]
    assert latest, "no score reached the LMS"
    assert latest[-1]["lineitem"] == lms.lineitem_url()
    assert (latest[-1]["body"]["userId"], latest[-1]["body"]["scoreGiven"]) == (LEARNER, 100), latest[-1]
    assert latest[-1]["body"]["gradingProgress"] == "FullyGraded", latest[-1]
    assert not course.problems, course.problems


# --- an instructor's launch: the course's dashboard (issue 18) ----------------------------------

TEACHER = "teacher-1"  # "Prof. Emmy Noether" in the test LMS's roster of course c1


def _read_rosters(live_server) -> None:
    """What `flask worker` does in the background: read the rosters that are due (the launch queued one)."""
    settings = Settings.from_env({}, database_url=live_server.database_url, env="testing")
    outcomes = RosterSyncer(settings).run_once()
    assert outcomes and all(o.error is None for o in outcomes), outcomes


def test_an_instructors_launch_opens_the_course_dashboard_in_the_lms_frame(blocking_browser, open_course, lms,
                                                                            live_server, tool, axe_source):
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
    assert not frame.is_visible("nav a[data-nav='platforms']")  # admins only
    _read_rosters(live_server)
    frame.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")
    people = frame.wait_for_selector("table.members")
    text = people.inner_text()
    for name in ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Prof. Emmy Noether"):
        assert name in text, text
    assert "ada@example.invalid" in text
    assert axe_violations(frame, axe_source) == []

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


def test_the_exercise_picker_in_the_lms_frame_keeps_its_policy_and_its_styles(blocking_browser, open_course, lms,
                                                                                tool, axe_source):
    """Issue 33: the Deep Linking picker answers with the pages' CSP (no inline style, framed by its
    platform alone); its styles come from /lti/picker.css, and it still reads as a form a teacher can use."""
    from service.lti import claims as c

    lms.launch_claims = {**lms.launch_claims, "sub": TEACHER, "roles": INSTRUCTOR_ROLES,
                         "message_type": c.DEEP_LINKING_REQUEST}
    course = open_course(blocking_browser.new_context(viewport={"width": 1280, "height": 1000}), "frame")
    frame = course.tool_frame
    frame.wait_for_selector("h1:has-text('Add exercises to your course')")
    policy = course.launches[-1].headers["content-security-policy"]
    assert "style-src 'self'" in policy and f"frame-ancestors {lms.issuer}" in policy, policy
    # The stylesheet applied (an inline style would have been blocked and reported in course.problems).
    assert frame.evaluate("getComputedStyle(document.querySelector('.exercise-list')).listStyleType") == "none"
    assert frame.evaluate("getComputedStyle(document.body).maxWidth") != "none"
    frame.check(f"input[name=exercise][value='{QUIZ}']")
    assert frame.is_checked(f"input[name=exercise][value='{QUIZ}']")
    assert axe_violations(frame, axe_source) == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    course.tab.locator("iframe[name=tool]").screenshot(path=SCREENSHOTS / "lti-picker-frame.png")
    assert course.problems == [], course.problems
