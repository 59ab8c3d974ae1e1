"""The Deep Linking picker: the pages' security headers, framed by the launching platform alone,
and a picker token that works for one post only. And a launch's sub, a learner id like any other."""

from __future__ import annotations

import html
import re

import pytest

from service.lti import claims as c
from service.models import LtiNonce, LtiResourceLink
from tests.helpers import count_rows

from .platform import INSTRUCTOR_ROLES, TestPlatform
from .support import QUIZ, lti_launch, rejection


def _picker(client, platform: TestPlatform):
    page = lti_launch(client, platform, message_type=c.DEEP_LINKING_REQUEST, roles=INSTRUCTOR_ROLES, sub="teacher-1")
    assert page.status_code == 200, page.get_data(as_text=True)
    token = html.unescape(re.search(r'name="picker" value="([^"]+)"', page.get_data(as_text=True)).group(1))
    return page, token


def _policy(response) -> dict[str, str]:
    directives = (d.strip().split(None, 1) for d in response.headers["Content-Security-Policy"].split(";"))
    return {d[0]: d[1] if len(d) > 1 else "" for d in directives}


def test_the_picker_has_the_pages_policy_and_only_its_platform_may_frame_it(app, client, platform, lms):
    page, _token = _picker(client, platform)
    policy = _policy(page)
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'" and policy["object-src"] == "'none'"
    assert policy["frame-ancestors"].split() == [platform.issuer]  # the LMS frame; nobody else's page
    assert policy["form-action"] == "'self'"
    assert "X-Frame-Options" not in page.headers  # DENY would keep it out of the LMS's frame
    assert page.headers["X-Content-Type-Options"] == "nosniff" and page.headers["Cache-Control"] == "no-store"
    text = page.get_data(as_text=True)
    assert "<script" not in text and "<style" not in text and " style=" not in text  # nothing inline to allow
    style = client.get("/lti/picker.css")
    assert style.status_code == 200 and style.mimetype == "text/css" and ".exercise-row" in style.get_data(as_text=True)
    assert 'href="/lti/picker.css"' in text


def test_a_picker_token_is_used_up_by_its_first_post(app, client, platform, lms):
    _page, token = _picker(client, platform)
    nonces = count_rows(app, LtiNonce)
    first = client.post("/lti/deep-link", data={"picker": token, "exercise": QUIZ})
    assert first.status_code == 200 and 'name="JWT"' in first.get_data(as_text=True)
    assert count_rows(app, LtiNonce) == nonces + 1
    # Again, from this browser or any other within the token's 30 minutes: refused, nothing written.
    for browser in (client, app.test_client()):
        again = browser.post("/lti/deep-link", data={"picker": token, "exercise": "clamp-function"})
        assert "used already" in rejection(again) and "JWT" not in again.get_data(as_text=True)
    cancelled = client.post("/lti/deep-link", data={"picker": token, "cancel": "1"})
    assert "used already" in rejection(cancelled)
    assert count_rows(app, LtiNonce) == nonces + 1 and count_rows(app, LtiResourceLink) == 0


def test_a_refused_form_leaves_the_picker_token_unused(app, client, platform, lms):
    _page, token = _picker(client, platform)
    unknown = client.post("/lti/deep-link", data={"picker": token, "exercise": "no-such-exercise"})
    assert unknown.status_code == 422
    bad_assignment = client.post("/lti/deep-link", data={"picker": token, "exercise": [QUIZ], "mode": "assignment",
                                                         "title": "", "scoring": "median"})
    assert bad_assignment.status_code == 422
    assert client.post("/lti/deep-link", data={"picker": token, "exercise": QUIZ}).status_code == 200


@pytest.mark.parametrize("sub", ["\u202eteacher", "learner\u2028one", "   ", "a\u200bb"])
def test_a_launch_whose_sub_is_no_learner_id_is_refused(app, client, platform, lms, sub):
    response = lti_launch(client, platform, custom={"exercise": QUIZ}, sub=sub)
    assert "sub must be a learner id" in rejection(response)
    assert count_rows(app, LtiResourceLink) == 0
