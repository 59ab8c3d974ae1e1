"""A course's own exercises through its LMS (issue 34): its Deep Linking picker lists them beside the
catalog, another course's picker neither lists nor takes them, and a link to one opens in its course
alone."""

from __future__ import annotations

import html
import re

from sqlalchemy import select

from service.extensions import db_session
from service.lti import claims as c
from service.models import Course, LtiResourceLink
from tests.helpers import add_course_exercise, count_rows

from .platform import INSTRUCTOR_ROLES, TestPlatform
from .support import QUIZ, context_claim, launch_handoff, lti_launch, rejection

C1_OWN, C2_OWN = "c1-own-quiz", "c2-own-quiz"


def _courses(app, client, platform: TestPlatform) -> dict[str, int]:
    """Courses c1 and c2 of the platform (made by a launch in each), each with its own exercise."""
    for context, link in (("c1", "link-1"), ("c2", "link-c2")):
        launched = lti_launch(client, platform, custom={"exercise": QUIZ}, resource_link_id=link,
                              overrides=context_claim(context))
        assert launched.status_code == 200, launched.get_data(as_text=True)
    with app.app_context():
        ids = {external_id: id_ for external_id, id_ in db_session().execute(select(Course.external_id, Course.id))}
    add_course_exercise(app, ids["c1"], C1_OWN, QUIZ)
    add_course_exercise(app, ids["c2"], C2_OWN, QUIZ)
    return ids


def _picker(client, platform: TestPlatform, context: str) -> tuple[str, str]:
    page = lti_launch(client, platform, message_type=c.DEEP_LINKING_REQUEST, roles=INSTRUCTOR_ROLES, sub="teacher-1",
                      overrides=context_claim(context))
    assert page.status_code == 200, page.get_data(as_text=True)
    text = page.get_data(as_text=True)
    return text, html.unescape(re.search(r'name="picker" value="([^"]+)"', text).group(1))


def test_a_courses_picker_lists_and_places_its_own_exercises_and_no_other_courses(app, client, platform, lms):
    _courses(app, client, platform)
    page, token = _picker(client, platform, "c1")
    assert f'value="{QUIZ}"' in page and f'value="{C1_OWN}"' in page and f'value="{C2_OWN}"' not in page
    # c2's exercise, posted to c1's picker by hand, is no exercise it knows; the token stays unused.
    refused = client.post("/lti/deep-link", data={"picker": token, "exercise": C2_OWN})
    assert refused.status_code == 422 and C2_OWN in refused.json["detail"]
    refused = client.post("/lti/deep-link", data={"picker": token, "exercise": [QUIZ, C2_OWN], "mode": "assignment",
                                                  "title": "Week 1", "scoring": "mean"})
    assert refused.status_code == 422
    placed = client.post("/lti/deep-link", data={"picker": token, "exercise": C1_OWN})
    assert placed.status_code == 200 and 'name="JWT"' in placed.get_data(as_text=True)
    other_page, _token = _picker(client, platform, "c2")
    assert f'value="{C2_OWN}"' in other_page and f'value="{C1_OWN}"' not in other_page


def test_a_link_to_a_courses_exercise_opens_in_that_course_alone(app, client, platform, lms):
    _courses(app, client, platform)
    links = count_rows(app, LtiResourceLink)
    elsewhere = lti_launch(client, platform, custom={"exercise": C1_OWN}, resource_link_id="copied",
                           overrides=context_claim("c2"))
    assert "not published" in rejection(elsewhere)
    assert count_rows(app, LtiResourceLink) == links
    launched = lti_launch(client, platform, custom={"exercise": C1_OWN}, resource_link_id="c1-own",
                          overrides=context_claim("c1"))
    handoff = launch_handoff(launched)
    assert handoff["exercise"] == C1_OWN
    page = launched.get_data(as_text=True)
    assert 'id="gradquiz-exercise"' in page and f'"slug": "{C1_OWN}"' in page  # its detail, as for the catalog's
    token = {"Authorization": f"Bearer {handoff['token']}"}
    answered = client.post(f"/api/v1/exercises/{C1_OWN}/attempts", headers=token, json={"answer": "none-each"})
    assert answered.status_code == 201 and answered.json["score"] == 1.0
