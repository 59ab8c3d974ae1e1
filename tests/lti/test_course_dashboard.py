"""An instructor's launch opens the dashboard of their course, signed in for that course alone
(issue 18): the session it hands the page reads and grades that course's data and nothing else."""

from __future__ import annotations

import threading
import time
import uuid

import jwt
import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.learner_tokens import INSTRUCTOR, LearnerScope, issue_learner_token
from service.lti import claims as c
from service.models import Attempt, Course, GradeOverride, LtiResourceLink
from service.staff_sessions import PREFIX, _key, mint_staff_session
from tests.helpers import bearer

from .platform import INSTRUCTOR_ROLES
from .support import context_claim, launch_handoff, lti_launch, lti_login

QUIZ = "backward-none-for-bounds"
RIGHT, WRONG = "none-each", "zero-number"
TA_ROLES = ["http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"]


def _attempt(client, token: str, answer: str = RIGHT) -> str:
    response = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": answer})
    assert response.status_code == 201, response.json
    return response.json["id"]


def _two_courses(client, platform) -> dict[str, str]:
    """bea's attempt in course c2 and ann's in course c1 (the test LMS's default context), launched as
    learners do; their ids by course."""
    in_c2 = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="bea", resource_link_id="link-c2",
                             overrides=context_claim("c2")))["token"]
    in_c1 = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="ann",
                                      resource_link_id="link-c1"))["token"]
    return {"c2": _attempt(client, in_c2), "c1": _attempt(client, in_c1, WRONG)}


def _dashboard(client, platform, roles=INSTRUCTOR_ROLES, **claims):
    response = lti_launch(client, platform, custom={"exercise": QUIZ}, sub="prof-1", roles=roles,
                       resource_link_id="link-c1", **claims)
    return response, launch_handoff(response)


def test_an_instructors_launch_opens_the_courses_dashboard_signed_in_for_that_course(app, client, platform, registration):
    attempts = _two_courses(client, platform)
    response, handoff = _dashboard(client, platform)
    page = response.get_data(as_text=True)
    assert "Grading dashboard" in page and 'src="/admin/app.js"' in page  # the dashboard, not the exercise page
    policy = response.headers["Content-Security-Policy"]
    assert f"frame-ancestors {platform.issuer}" in policy and "X-Frame-Options" not in response.headers
    assert response.headers["Cache-Control"] == "no-store"
    session = handoff["staff_session"]
    assert session.startswith(PREFIX) and handoff["course"]["title"] == "Deep Learning 101"
    assert handoff["exercise"] == QUIZ and handoff["role"] == "instructor"  # the token to try the exercise
    with app.app_context():
        c1 = db_session().scalar(select(Course).where(Course.external_id == "c1"))
        assert handoff["course"]["id"] == c1.id and c1.label == "DL101"

    me = client.get("/api/v1/admin/whoami", headers=bearer(session)).json
    assert me["kind"] == "course_session" and me["course"]["id"] == c1.id and me["actor"] == "User prof-1 (LTI)"
    courses = client.get("/api/v1/admin/courses", headers=bearer(session)).json
    assert [course["external_id"] for course in courses] == ["c1"]
    search = client.get("/api/v1/admin/attempts", headers=bearer(session)).json
    assert [a["id"] for a in search["items"]] == [attempts["c1"]]
    csv = client.get("/api/v1/admin/attempts.csv", headers=bearer(session)).get_data(as_text=True)
    assert attempts["c1"] in csv and attempts["c2"] not in csv
    gradebook = client.get("/api/v1/admin/gradebook.csv", headers=bearer(session)).get_data(as_text=True)
    assert "ann" in gradebook and "bea" not in gradebook
    assert client.get(f"/api/v1/admin/attempts/{attempts['c1']}", headers=bearer(session)).status_code == 200
    other = client.get(f"/api/v1/admin/attempts/{attempts['c2']}", headers=bearer(session))
    assert other.status_code == 404 and other.mimetype == "application/problem+json"
    asked = client.get("/api/v1/admin/attempts", headers=bearer(session), query_string={"course": c1.id + 1})
    assert asked.status_code == 404  # another course, asked for by id

    # Grading in the course is recorded as the person's doing; another course's attempt is out of reach.
    override = client.post(f"/api/v1/admin/attempts/{attempts['c1']}/override", headers=bearer(session),
                           json={"score": 1.0, "reason": "partial credit"})
    assert override.status_code == 201, override.json
    refused = client.post(f"/api/v1/admin/attempts/{attempts['c2']}/override", headers=bearer(session),
                          json={"score": 1.0, "reason": "not my course"})
    assert refused.status_code == 404
    with app.app_context():
        actors = db_session().scalars(select(GradeOverride.actor)).all()
        assert actors == ["User prof-1 (LTI)"]
        scores = dict(db_session().execute(select(Attempt.learner, Attempt.score)).all())
        assert scores == {"ann": 1.0, "bea": 1.0}  # bea's is her own grade, untouched


def test_a_course_session_is_for_the_staff_api_of_its_course_only(app, client, platform, registration, admin_key):
    _response, handoff = _dashboard(client, platform, roles=TA_ROLES)
    session = handoff["staff_session"]
    # Beyond the course: the catalog, a client's rules, the service's setup; and it is no learner.
    assert client.post(f"/api/v1/admin/exercises/{QUIZ}/unpublish", headers=bearer(session)).status_code == 403
    assert client.get("/api/v1/admin/lti/platforms", headers=bearer(session)).status_code == 403
    submit = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(session), json={"answer": RIGHT})
    assert submit.status_code == 403 and "staff API" in submit.json["detail"]
    assert client.post("/api/v1/learner-tokens", headers=bearer(session),
                       json={"learner": "ann", "exercises": [QUIZ]}).status_code == 403
    with app.app_context():
        assert db_session().scalar(select(Attempt.id)) is None

    # A forged or expired session is refused; disabling the platform ends its sessions.
    claims = jwt.decode(session[len(PREFIX):], options={"verify_signature": False})
    not_the_key = "a-key-that-is-not-the-services-own-32b"
    forged = PREFIX + jwt.encode({**claims, "crs": claims["crs"] + 1}, not_the_key, algorithm="HS256")
    assert client.get("/api/v1/admin/whoami", headers=bearer(forged)).status_code == 401
    expired = PREFIX + jwt.encode({**claims, "exp": int(time.time()) - 5}, _key(app.config["SECRET_KEY"]),
                                  algorithm="HS256")
    refused = client.get("/api/v1/admin/whoami", headers=bearer(expired))
    assert refused.status_code == 401 and "launch the tool from the course again" in refused.json["detail"]
    assert client.get("/api/v1/admin/whoami", headers=bearer(session)).status_code == 200
    assert client.delete(f"/api/v1/admin/lti/platforms/{registration['id']}", headers=bearer(admin_key)).status_code == 204
    assert client.get("/api/v1/admin/whoami", headers=bearer(session)).status_code == 401


def test_a_learners_launch_opens_the_exercise_and_holds_no_staff_session(app, client, platform, registration):
    response = lti_launch(client, platform, custom={"exercise": QUIZ}, sub="ann", resource_link_id="link-c1")
    handoff = launch_handoff(response)
    assert "staff_session" not in handoff and "Grading dashboard" not in response.get_data(as_text=True)
    # A learner's token is refused by the staff API, course or not.
    assert client.get("/api/v1/admin/whoami", headers=bearer(handoff["token"])).status_code == 403


def test_a_session_names_its_course_by_the_launch_context_not_by_anything_the_browser_sends(app, client, platform, registration):
    """The course comes from the signed launch; a staff session minted for one course cannot read
    another's even through ?course=, and the same instructor's launch in course c2 opens c2's."""
    attempts = _two_courses(client, platform)
    _response, in_c2 = _dashboard(client, platform, overrides={**context_claim("c2"), c.RESOURCE_LINK: {"id": "link-c2"}})
    session = in_c2["staff_session"]
    assert in_c2["course"]["title"] == "Course c2"
    search = client.get("/api/v1/admin/attempts", headers=bearer(session)).json
    assert [a["id"] for a in search["items"]] == [attempts["c2"]]
    with app.app_context():
        c1 = db_session().scalar(select(Course.id).where(Course.external_id == "c1"))
        client_id = db_session().scalar(select(Course.client_id).where(Course.id == c1))
    assert client.get(f"/api/v1/admin/courses/{c1}", headers=bearer(session)).status_code == 404
    # A session signed for c1 (as a launch of c1 would mint) reads c1 alone.
    token, _staff = mint_staff_session(app.config["SECRET_KEY"], client_id, c1, "prof-1", None, 60)
    assert [a["id"] for a in client.get("/api/v1/admin/attempts", headers=bearer(token)).json["items"]] == [attempts["c1"]]


def test_a_launch_token_from_before_courses_acts_in_its_links_course(app, client, platform, registration):
    """A token issued before tokens named their course (and renewed since) names only its link: its
    attempts belong to the link's course all the same, and it reads that course alone."""
    attempts = _two_courses(client, platform)
    with app.app_context():
        link = db_session().scalar(select(LtiResourceLink).where(LtiResourceLink.resource_link_id == "link-c1"))
        link_id, course_id, client_id = link.id, link.course_id, link.platform.api_client_id
    old = LearnerScope(client_id=client_id, learner="cy", exercise=QUIZ, link_id=link_id)
    token = issue_learner_token(app.config["SECRET_KEY"], old, 600)
    made = _attempt(client, token)
    with app.app_context():
        assert db_session().scalar(select(Attempt.course_id).where(Attempt.id == uuid.UUID(made))) == course_id
    teacher = LearnerScope(client_id=client_id, learner="prof-1", exercise=QUIZ, link_id=link_id, role=INSTRUCTOR)
    seen = client.get(f"/api/v1/attempts/{attempts['c2']}",
                      headers=bearer(issue_learner_token(app.config["SECRET_KEY"], teacher, 600)))
    assert seen.status_code == 404


def test_a_class_opening_a_new_courses_first_link_at_once_makes_one_course_and_one_link(
        app, platform, registration, database_url):
    """The first launches of a new link in a new course, at the same moment (a class told "open it
    now"): every launch opens, and one course and one link are made."""
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite's writers queue on its one write lock: no two first launches overlap")
    for round_ in range(3):
        context, link = f"race-{round_}", f"race-link-{round_}"
        forms = []
        browsers = [app.test_client() for _ in range(4)]
        for n, browser in enumerate(browsers):
            forms.append(platform.authorize(lti_login(browser, platform), custom={"exercise": QUIZ}, sub=f"racer-{n}",
                                            resource_link_id=link, overrides=context_claim(context)).form)
        start = threading.Barrier(len(browsers))
        statuses: list[int] = []

        def launch(browser, form, start=start, statuses=statuses) -> None:
            start.wait()
            statuses.append(browser.post("/lti/launch", data=form).status_code)

        threads = [threading.Thread(target=launch, args=pair) for pair in zip(browsers, forms, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert statuses == [200] * len(browsers), statuses
        with app.app_context():
            session = db_session()
            assert len(session.scalars(select(Course.id).where(Course.external_id == context)).all()) == 1
            assert len(session.scalars(select(LtiResourceLink.id).where(LtiResourceLink.resource_link_id == link)).all()) == 1


def test_a_launch_of_a_links_id_from_another_course_makes_that_courses_own_link_and_moves_nothing(
        app, client, platform, registration):
    """Issue 33: links were found by platform and link id alone, and every launch rewrote the
    course. A course-B launch carrying course A's link id (an LMS's course copy keeps link ids)
    moved the link: A's staff lost its rules, B's staff read A's learner's extension and its note."""
    learner_a = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="ann", resource_link_id="link-c1"))
    _response, staff_a = _dashboard(client, platform)
    session_a = staff_a["staff_session"]
    [link_a] = client.get("/api/v1/admin/links", headers=bearer(session_a)).json
    rules = client.put(f"/api/v1/admin/links/{link_a['id']}/rules", headers=bearer(session_a), json={"max_attempts": 3})
    assert rules.status_code == 200, rules.json
    extension = client.put(f"/api/v1/admin/links/{link_a['id']}/extensions/ann", headers=bearer(session_a),
                           json={"rules": {"max_attempts": 5}, "note": "medical note, staff only"})
    assert extension.status_code == 200, extension.json

    _response, staff_b = _dashboard(client, platform, overrides=context_claim("c2"))
    session_b = staff_b["staff_session"]
    assert staff_b["course"]["id"] != staff_a["course"]["id"]
    [link_b] = client.get("/api/v1/admin/links", headers=bearer(session_b)).json
    assert link_b["id"] != link_a["id"] and link_b["resource_link_id"] == "link-c1"
    # Course A keeps its link, its rules and its extension; course B reaches none of them.
    kept = client.get(f"/api/v1/admin/links/{link_a['id']}/rules", headers=bearer(session_a))
    assert kept.status_code == 200 and kept.json["assignment"] == {"max_attempts": 3}
    assert [e["note"] for e in kept.json["extensions"]] == ["medical note, staff only"]
    for method, path, body in (("GET", f"/api/v1/admin/links/{link_a['id']}/rules", None),
                               ("PUT", f"/api/v1/admin/links/{link_a['id']}/rules", {"max_attempts": 1})):
        refused = client.open(path, method=method, headers=bearer(session_b), json=body)
        assert refused.status_code == 404 and refused.mimetype == "application/problem+json"
    fresh = client.get(f"/api/v1/admin/links/{link_b['id']}/rules", headers=bearer(session_b)).json
    assert fresh["assignment"] is None and fresh["extensions"] == []
    with app.app_context():
        courses = dict(db_session().execute(select(LtiResourceLink.id, LtiResourceLink.course_id)).all())
    assert courses == {link_a["id"]: staff_a["course"]["id"], link_b["id"]: staff_b["course"]["id"]}
    # Course B's max_attempts = 1 binds its own learners; ann in course A keeps her 3 (and 5 for her).
    assert client.put(f"/api/v1/admin/links/{link_b['id']}/rules", headers=bearer(session_b),
                      json={"max_attempts": 1}).status_code == 200
    for _ in range(2):
        _attempt(client, learner_a["token"])
    learner_b = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="ann", resource_link_id="link-c1",
                                 overrides=context_claim("c2")))
    assert _attempt(client, learner_b["token"])
    second = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(learner_b["token"]), json={"answer": RIGHT})
    assert second.status_code == 409
