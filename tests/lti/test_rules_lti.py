"""Assessment rules through real launches at the test LMS (issue 17): staff's rules on an LTI link,
the LMS's due date over staff's, a learner's extension over both, late work's penalised score in
the gradebook with the learner's submission time, and an instructor trying the exercise out
(service/rules.py; the API-key path is tests/api/test_rules.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.lti.dates import CUSTOM_VARIABLES
from service.models import Attempt, AttemptEvent, LtiPlatform, LtiResourceLink, Role, ScorePassback
from service.models.base import utcnow
from tests.helpers import bearer, count_rows

from .platform import INSTRUCTOR_ROLES, TestPlatform
from .support import (
    QUIZ,
    RIGHT,
    WRONG,
    delivered_after_one_failure,
    expected_score,
    launch_handoff,
    lti_launch,
    passback_runner,
    submitted_hours_ago,
)

DUE = "ResourceLink.submission.endDateTime"
ASKING = {"exercise": QUIZ, **CUSTOM_VARIABLES}  # a Deep Linking link's custom parameters, unexpanded


@pytest.fixture
def lms(registered_platform):
    return registered_platform


@pytest.fixture
def staff_key(app, client_key_for) -> str:
    """An instructor's API key: staff set rules on the dashboard with one."""
    return client_key_for(app, "prof", Role.INSTRUCTOR)


def _token(client, lms: TestPlatform, sub: str = "student-1", **claims) -> str:
    handoff = launch_handoff(lti_launch(client, lms, custom=ASKING, sub=sub, **claims))
    assert handoff["exercise"] == QUIZ
    return handoff["token"]


def _link_id(client, key: str) -> int:
    """The launched link's id, as the dashboard finds it (GET /api/v1/admin/links?exercise=)."""
    links = client.get(f"/api/v1/admin/links?exercise={QUIZ}", headers=bearer(key))
    assert links.status_code == 200, links.json
    [link] = links.json
    assert link["resource_link_id"] == "link-1" and link["platform"] == "Test LMS"
    return link["id"]


def _set_rules(client, key: str, link_id: int, **rules) -> dict:
    response = client.put(f"/api/v1/admin/links/{link_id}/rules", headers=bearer(key), json=rules)
    assert response.status_code == 200, response.json
    return response.json


def _answer(client, token: str, choice: str = RIGHT):
    return client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": choice})


def _written(app) -> tuple[int, int, int]:
    """What an attempt writes: attempts, their events, score passbacks."""
    return count_rows(app, Attempt), count_rows(app, AttemptEvent), count_rows(app, ScorePassback)


def iso_millis(at) -> str:
    return at.isoformat()


@pytest.mark.parametrize("key_role", ["instructor", "admin"])
def test_staffs_max_attempts_on_the_link_refuses_the_learners_next_attempt_and_writes_nothing(
        app, client, lms, staff_key, admin_key, key_role):
    token = _token(client, lms)
    key = staff_key if key_role == "instructor" else admin_key
    link_id = _link_id(client, key)
    described = _set_rules(client, key, link_id, max_attempts=1)
    assert (described["link"], described["assignment"], described["in_force"]["max_attempts"]) == (
        link_id, {"max_attempts": 1}, 1)
    assert described["updated_by"] == ("prof" if key_role == "instructor" else "admin")

    first = _answer(client, token, WRONG)
    assert first.status_code == 201, first.json
    assert (first.json["attempt_number"], first.json["standing"]["attempts_left"]) == (1, 0)
    written = _written(app)
    assert written == (1, 1, 1)

    second = _answer(client, token)
    assert second.status_code == 409 and second.content_type == "application/problem+json"
    assert second.json["type"] == "/problems/attempt-refused/no-attempts-left"
    assert (second.json["standing"]["attempts_used"], second.json["standing"]["attempts_left"]) == (1, 0)
    assert _written(app) == written  # no attempt, no event, no passback
    # The gradebook has the first attempt's score only.
    passback_runner(app).run_once()
    assert [s["body"]["scoreGiven"] for s in lms.scores] == [0]
    # Another learner of the same link has their own attempt.
    assert _answer(client, _token(client, lms, sub="student-2")).status_code == 201


def test_the_lms_due_date_wins_over_staffs_and_an_extension_wins_over_both(app, client, lms, staff_key):
    past = utcnow() - timedelta(hours=2)
    lms.variables = {DUE: past.isoformat()}  # the instructor's due date in the LMS has passed
    token = _token(client, lms)
    link_id = _link_id(client, staff_key)
    described = _set_rules(client, staff_key, link_id, due_at=iso_millis(utcnow() + timedelta(days=7)))
    assert described["lms"]["due_at"] is not None
    assert described["in_force"]["due_at"] == described["lms"]["due_at"]

    refused = _answer(client, token)
    assert (refused.status_code, refused.json["type"]) == (403, "/problems/attempt-refused/past-due")
    assert refused.json["standing"]["late"] is True
    assert refused.json["standing"]["refused"]["reason"] == "past-due"
    assert _written(app) == (0, 0, 0)

    later = utcnow() + timedelta(days=2)
    extension = client.put(f"/api/v1/admin/links/{link_id}/extensions/student-1", headers=bearer(staff_key),
                           json={"rules": {"due_at": iso_millis(later)}, "note": "Ill during the week"})
    assert extension.status_code == 200, extension.json
    [listed] = extension.json["extensions"]
    assert (listed["learner"], listed["note"]) == ("student-1", "Ill during the week")
    accepted = _answer(client, token)
    assert accepted.status_code == 201, accepted.json
    assert accepted.json["late"] is False and accepted.json["score"] == 1.0
    # The extension is that learner's only.
    other = _answer(client, _token(client, lms, sub="student-2"))
    assert (other.status_code, other.json["type"]) == (403, "/problems/attempt-refused/past-due")
    # Removed, the LMS's date is in force again for them.
    assert client.delete(f"/api/v1/admin/links/{link_id}/extensions/student-1",
                         headers=bearer(staff_key)).status_code == 204
    assert _answer(client, token).status_code == 403


def test_late_work_accepted_sends_the_penalised_score_with_the_learners_submission_time(app, client, lms, staff_key):
    lms.variables = {DUE: (utcnow() - timedelta(hours=6)).isoformat()}
    token = _token(client, lms)
    _set_rules(client, staff_key, _link_id(client, staff_key), late="accept", late_penalty=0.25)

    body = _answer(client, token).json
    assert body["late"] is True and body["penalties"] == [{"reason": "late", "factor": 0.75}]
    assert (body["raw_score"], body["score"]) == (1.0, 0.75)
    # The learner submitted three hours ago (late already) and the LMS was down since: the
    # passback's retry, sent now, says when they submitted and carries the penalised score.
    submitted, graded = submitted_hours_ago(app, body["id"], 3)
    delivered_after_one_failure(app, lms)
    assert [s["body"] for s in lms.scores] == [expected_score("student-1", 75, graded, submitted, True)]
    assert submitted == graded and datetime.fromisoformat(submitted) < utcnow() - timedelta(hours=2)
    assert lms.submissions == [{"lineitem": lms.lineitem_url(), "userId": "student-1", "submitted_at": submitted}]
    assert [r["status"] for r in lms.rejected] == [500]  # the injected failure only


def test_an_instructors_launch_is_not_bound_by_the_rules(app, client, lms, staff_key):
    lms.variables = {DUE: (utcnow() - timedelta(days=1)).isoformat()}
    learner = _token(client, lms)
    link_id = _link_id(client, staff_key)
    strict = {"max_attempts": 1, "attempt_penalty": 0.5, "late": "refuse"}
    _set_rules(client, staff_key, link_id, **strict)
    # An instructor's attempts are not the link's (no score goes to the LMS): they count in the
    # platform client's own use of the exercise. Rules there, as strict, bind them no more.
    with app.app_context():
        platform_client = db_session().scalar(select(LtiPlatform.api_client_id))
    own = client.put(f"/api/v1/admin/exercises/{QUIZ}/clients/{platform_client}/rules", headers=bearer(staff_key),
                     json={**strict, "due_at": iso_millis(utcnow() - timedelta(days=1))})
    assert own.status_code == 200, own.json
    teacher = _token(client, lms, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    tries = [_answer(client, teacher) for _ in range(3)]
    assert [t.status_code for t in tries] == [201, 201, 201], [t.json for t in tries]
    assert [(t.json["score"], t.json["late"], t.json["penalties"]) for t in tries] == [(1.0, False, None)] * 3
    assert tries[-1].json["standing"]["attempts_left"] is None
    assert tries[0].json["explanation"] is not None  # shown to staff whatever show_explanation says
    # The same link, the same moment: its learner is refused.
    assert _answer(client, learner).status_code == 403
    with app.app_context():
        link = db_session().scalar(select(LtiResourceLink).where(LtiResourceLink.id == link_id))
        assert link.lms_due_at is not None
    assert count_rows(app, ScorePassback) == 0  # an instructor's attempts send no score


def test_on_canvas_each_learner_is_held_to_their_own_due_date(app, client, lms, staff_key):
    """Canvas sends a student their own due date (their section's, their own override): it holds for
    them alone, over the link's (an instructor's launch: the latest of all), under a staff extension."""
    lms.product_family_code = "canvas"
    past, future = utcnow() - timedelta(hours=2), utcnow() + timedelta(days=3)
    lms.variables = {DUE: future.isoformat()}
    _token(client, lms, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    lms.variables = {DUE: past.isoformat()}  # an early section's due date, passed
    early = _token(client, lms, sub="student-early")
    lms.variables = {DUE: future.isoformat()}
    later = _token(client, lms, sub="student-later")
    link_id = _link_id(client, staff_key)
    refused = _answer(client, early)
    assert (refused.status_code, refused.json["type"]) == (403, "/problems/attempt-refused/past-due")
    assert _answer(client, later).status_code == 201
    described = client.get(f"/api/v1/admin/links/{link_id}/rules", headers=bearer(staff_key)).json
    assert set(described["lms_learners"]) == {"student-early", "student-later"}
    assert described["in_force"]["due_at"].startswith(future.isoformat()[:16])
    extended = client.put(f"/api/v1/admin/links/{link_id}/extensions/student-early", headers=bearer(staff_key),
                          json={"rules": {"due_at": future.isoformat()}})
    assert extended.status_code == 200, extended.json
    assert _answer(client, early).status_code == 201
