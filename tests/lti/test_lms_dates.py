"""The assignment's window as the LMS gives it (issue 17: the LMS's deadlines win, read at launch).

Deep Linking asks the platform for the dates with substitution variables in the link's custom
parameters; the test platform expands the ones a test gives a value (`platform.variables`) and
sends the others as written, as LTI Core has a platform do. Each launch brings the link's
`lms_available_from` and `lms_due_at` up to date (service/lti/dates.py)."""

from __future__ import annotations

import html
import logging
import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.lti import claims as c
from service.lti.dates import CUSTOM_VARIABLES, not_sent, parse_date
from service.models import LtiResourceLink

from .platform import INSTRUCTOR_ROLES, TestPlatform
from .support import LAUNCH_URL, QUIZ, launch_handoff, lti_launch

AVAILABLE, DUE = "ResourceLink.available.startDateTime", "ResourceLink.submission.endDateTime"
ASKING = {"exercise": QUIZ, **CUSTOM_VARIABLES}  # what a Deep Linking link's launches carry, unexpanded


@pytest.fixture
def lms(registered_platform):
    return registered_platform


def _window(app, link_id: str = "link-1") -> tuple[datetime | None, datetime | None]:
    with app.app_context():
        link = db_session().scalar(select(LtiResourceLink).where(LtiResourceLink.resource_link_id == link_id))
        assert link is not None
        return link.lms_available_from, link.lms_due_at


def _opens(client, platform: TestPlatform, custom: dict | None = ASKING, **claims) -> None:
    handoff = launch_handoff(lti_launch(client, platform, custom=custom, **claims))
    assert handoff["exercise"] == QUIZ


def _deep_link_items(client, platform: TestPlatform) -> list[dict]:
    picker = lti_launch(client, platform, message_type=c.DEEP_LINKING_REQUEST, roles=INSTRUCTOR_ROLES, sub="teacher-1")
    token = html.unescape(re.search(r'name="picker" value="([^"]+)"', picker.get_data(as_text=True)).group(1))
    form = client.post("/lti/deep-link", data={"picker": token, "exercise": QUIZ}).get_data(as_text=True)
    response_jwt = html.unescape(re.search(r'name="JWT" value="([^"]+)"', form).group(1))
    return platform.read_deep_linking_response(response_jwt)[c.CONTENT_ITEMS]


def test_deep_linking_asks_for_the_window_and_a_launch_stores_it(app, client, lms):
    [item] = _deep_link_items(client, lms)
    assert item["custom"] == {"exercise": QUIZ, "gradquiz_available_from": "$" + AVAILABLE,
                              "gradquiz_due_at": "$" + DUE}
    assert "available" not in item and "submission" not in item  # the picker sets no dates
    # The instructor set both dates in the LMS; Canvas sends them with milliseconds and the account's offset.
    lms.variables = {AVAILABLE: "2026-04-20T08:00:00.000-04:00", DUE: "2026-05-01T23:59:59.000-04:00"}
    _opens(client, lms, custom=item["custom"], sub="student-1")
    assert _window(app) == (datetime(2026, 4, 20, 12, 0, tzinfo=UTC), datetime(2026, 5, 2, 3, 59, 59, tzinfo=UTC))


def test_a_later_launch_brings_the_dates_up_to_date_and_clears_a_removed_one(app, client, lms):
    lms.variables = {AVAILABLE: "2026-04-20T12:00:00Z", DUE: "2026-05-01T12:00:00Z"}
    _opens(client, lms)
    assert _window(app) == (datetime(2026, 4, 20, 12, tzinfo=UTC), datetime(2026, 5, 1, 12, tzinfo=UTC))
    lms.variables[DUE] = "2026-05-08T12:00:00+00:00"  # the instructor moved the due date
    _opens(client, lms, sub="learner-2")
    assert _window(app) == (datetime(2026, 4, 20, 12, tzinfo=UTC), datetime(2026, 5, 8, 12, tzinfo=UTC))
    del lms.variables[DUE]  # and removed it: the platform sends the variable as written
    _opens(client, lms)
    assert _window(app) == (datetime(2026, 4, 20, 12, tzinfo=UTC), None)
    lms.variables[AVAILABLE] = ""  # a platform that sends an empty value for "no date"
    _opens(client, lms)
    assert _window(app) == (None, None)


def test_a_platform_that_expands_no_variable_gives_no_dates(app, client, lms):
    # Moodle, say: its LTI activity has no dates, and it sends unsupported variables as written.
    _opens(client, lms)
    assert _window(app) == (None, None)


def test_an_unreadable_date_is_ignored_and_logged_and_the_launch_goes_on(app, client, lms, caplog):
    lms.variables = {AVAILABLE: "2026-04-20T12:00:00Z", DUE: "2026-05-01T12:00:00Z"}
    _opens(client, lms)
    for unreadable in ("2026-05-08T12:00:00", "next Friday", "2026-05-08"):  # no time zone, no date, no time
        lms.variables = {AVAILABLE: unreadable, DUE: unreadable}
        with caplog.at_level(logging.INFO, logger="service.lti.dates"):
            _opens(client, lms)
        assert _window(app) == (datetime(2026, 4, 20, 12, tzinfo=UTC), datetime(2026, 5, 1, 12, tzinfo=UTC))
    ignored = [r.getMessage() for r in caplog.records if r.name == "service.lti.dates"]
    assert len(ignored) == 6 and all(r.levelno == logging.INFO for r in caplog.records if r.name == "service.lti.dates")
    assert "gradquiz_due_at='next Friday'" in ignored[3] and "ignored" in ignored[3]
    # Not a string at all (a JSON number): ignored the same way.
    _opens(client, lms, custom={**ASKING, "gradquiz_due_at": 1777636800})
    assert _window(app)[1] == datetime(2026, 5, 1, 12, tzinfo=UTC)


def test_without_a_custom_claim_the_link_keeps_its_dates_and_without_the_keys_it_has_none(app, client, lms):
    lms.variables = {DUE: "2026-05-01T12:00:00Z"}
    _opens(client, lms)
    # A launch with no custom claim (the link names its exercise in the target link URI) says nothing.
    _opens(client, lms, custom=None, target_link_uri=f"{LAUNCH_URL}?exercise={QUIZ}")
    assert _window(app) == (None, datetime(2026, 5, 1, 12, tzinfo=UTC))
    # A custom claim without the date keys: the platform is no longer asked (the admin removed the
    # registration's parameters), so the LMS gives no dates any more.
    _opens(client, lms, custom={"exercise": QUIZ})
    assert _window(app) == (None, None)


def test_canvas_own_variables_are_accepted_as_an_alternative(app, client, lms):
    custom = {**ASKING, "gradquiz_canvas_unlock_at": "$Canvas.assignment.unlockAt.iso8601",
              "gradquiz_canvas_due_at": "$Canvas.assignment.dueAt.iso8601"}
    lms.variables = {"Canvas.assignment.dueAt.iso8601": "2026-05-01T12:00:00Z"}
    _opens(client, lms, custom=custom)
    assert _window(app) == (None, datetime(2026, 5, 1, 12, tzinfo=UTC))
    # The spec's variable comes first when both are sent.
    lms.variables.update({DUE: "2026-05-02T12:00:00Z", "Canvas.assignment.unlockAt.iso8601": "2026-04-01T00:00:00Z"})
    _opens(client, lms, custom=custom)
    assert _window(app) == (datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 2, 12, tzinfo=UTC))


def test_on_canvas_only_an_instructors_launch_sets_the_links_window(app, client, lms):
    """Canvas expands the dates for the launching user: a student's own (overrides applied), an
    instructor's the latest of all. The link's window is everyone's, so students' launches leave it."""
    lms.product_family_code = "canvas"
    lms.variables = {DUE: "2026-05-01T12:00:00Z"}  # a student in a section due earlier
    _opens(client, lms, sub="student-early")
    assert _window(app) == (None, None)
    lms.variables = {DUE: "2026-05-08T12:00:00Z"}  # the latest due date of any section
    _opens(client, lms, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    assert _window(app) == (None, datetime(2026, 5, 8, 12, tzinfo=UTC))
    lms.variables = {DUE: "2026-05-01T12:00:00Z"}
    _opens(client, lms, sub="student-early")
    lms.variables = {}  # a student with no due date at all
    _opens(client, lms, sub="student-undated")
    assert _window(app) == (None, datetime(2026, 5, 8, 12, tzinfo=UTC))
    _opens(client, lms, sub="teacher-1", roles=INSTRUCTOR_ROLES)  # the instructor removed the dates
    assert _window(app) == (None, None)


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-05-01T23:59:59.000-04:00", datetime(2026, 5, 2, 3, 59, 59, tzinfo=UTC)),
    ("2026-05-01T12:00:00Z", datetime(2026, 5, 1, 12, tzinfo=UTC)),
    (" 2026-05-01T12:00:00+02:00 ", datetime(2026, 5, 1, 10, tzinfo=UTC)),
    ("2026-05-01T12:00:00", None), ("2026-05-01", None), ("$ResourceLink.submission.endDateTime", None),
    ("", None), (None, None), (1777636800, None), ("2026-13-01T00:00:00Z", None),
])
def test_parse_date(value, expected):
    assert parse_date(value) == expected


def test_not_sent():
    assert all(map(not_sent, [None, "", "  ", "$ResourceLink.submission.endDateTime", " $Canvas.assignment.dueAt"]))
    assert not any(map(not_sent, ["2026-05-01T12:00:00Z", "garbage", 0]))
