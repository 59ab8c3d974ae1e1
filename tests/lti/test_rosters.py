"""Course rosters from the test LMS's Names and Role Provisioning Service (NRPS 2.0), and the names
they give: an instructor's launch queues a sync, the sync reads every page and stores names (e-mail
only where shared), a learner who left is marked and comes back, a failed read keeps the roster,
and the names show in the attempt search, its detail, the CSV exports and the learner's progress.
No access token ever reaches a log or the stored error."""

from __future__ import annotations

import csv
import io
import logging
from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from sqlalchemy import select, update

from service.extensions import db_session
from service.lti.roster import RosterSyncer, first_page, next_page
from service.models import Course, CourseMember, Role
from service.models.base import utcnow
from tests.helpers import bearer

from .platform import INSTRUCTOR_ROLES, SCOPE_MEMBERSHIPS, TestPlatform
from .support import QUIZ, RIGHT, launch_handoff, lti_launch

MEMBERS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"


@pytest.fixture
def staff_key(app, client_key_for) -> str:
    return client_key_for(app, "prof", Role.INSTRUCTOR)


def _syncer(app) -> RosterSyncer:
    return RosterSyncer(app.config["SETTINGS"])


def context_claim(app) -> Course:
    with app.app_context():
        course = db_session().scalar(select(Course).where(Course.external_id == "c1"))
        db_session().expunge(course)
        return course


def _members(app) -> dict[str, CourseMember]:
    with app.app_context():
        session = db_session()
        rows = {m.learner: m for m in session.scalars(select(CourseMember).order_by(CourseMember.learner))}
        session.expunge_all()
        return rows


def _learner_launch(client, platform: TestPlatform, sub: str = "learner-1", **claims) -> str:
    """A learner's launch of QUIZ in course c1; their learner token."""
    return launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub=sub, **claims))["token"]


def _synced(app, client, platform: TestPlatform) -> None:
    """Course c1 with its roster read once (a learner's launch brought the memberships URL)."""
    _learner_launch(client, platform)
    [outcome] = _syncer(app).run_once()
    assert outcome.synced, outcome.error


def _mark_synced_long_ago(app) -> None:
    """As if the last sync were an hour old and the next not due yet (an instructor's launch within a
    minute of a sync queues none)."""
    with app.app_context():
        db_session().execute(update(Course).values(roster_synced_at=utcnow() - timedelta(hours=1),
                                                   roster_sync_due_at=utcnow() + timedelta(hours=5)))
        db_session().commit()


def test_an_instructors_launch_queues_a_sync_the_launch_does_not_wait_for(app, client, registered_platform):
    platform = registered_platform
    _synced(app, client, platform)
    _mark_synced_long_ago(app)
    requests_before = len(platform.membership_requests)

    lti_launch(client, platform, custom={"exercise": QUIZ}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    course = context_claim(app)
    assert course.roster_sync_due_at <= utcnow()  # queued...
    assert len(platform.membership_requests) == requests_before  # ...not read during the launch
    assert [o.synced for o in _syncer(app).run_once()] == [True]
    assert len(platform.membership_requests) > requests_before
    course = context_claim(app)
    assert course.roster_synced_at > utcnow() - timedelta(minutes=1)
    # The next sync is due a schedule's interval later (ROSTER_SYNC_SECONDS).
    interval = timedelta(seconds=app.config["SETTINGS"].roster_sync_seconds)
    assert utcnow() + interval - timedelta(minutes=1) < course.roster_sync_due_at <= utcnow() + interval
    assert _syncer(app).run_once() == []  # nothing due now

    # A learner's launch queues nothing.
    _mark_synced_long_ago(app)
    _learner_launch(client, platform, sub="learner-2")
    assert context_claim(app).roster_sync_due_at > utcnow()


def test_the_sync_reads_every_page_and_stores_names_with_email_only_where_shared(app, client, registered_platform):
    platform = registered_platform
    _synced(app, client, platform)
    # Four members, two a page: two pages, the second one from the first's Link rel="next".
    pages = [parse_qs(r["query"]) for r in platform.membership_requests]
    assert [p.get("page", ["1"]) for p in pages] == [["1"], ["2"]]
    assert all(r["accept"] == MEMBERS_TYPE and r["authorization"].startswith("Bearer ")
               for r in platform.membership_requests)
    assert any(request.get("scope") == SCOPE_MEMBERSHIPS for request in platform.token_requests)

    members = _members(app)
    assert {learner: (m.name, m.email, m.status) for learner, m in members.items()} == {
        "learner-1": ("Ada Lovelace", "ada@example.invalid", "active"),
        "learner-2": ("Grace Hopper", None, "active"),  # given and family names; no e-mail shared
        "learner-3": ("Alan Turing", "alan@example.invalid", "active"),
        "teacher-1": ("Prof. Emmy Noether", "emmy@example.invalid", "active"),
    }
    assert members["learner-2"].given_name == "Grace" and members["learner-2"].family_name == "Hopper"
    assert members["teacher-1"].roles == INSTRUCTOR_ROLES
    course = context_claim(app)
    assert course.roster_error is None and course.memberships_url == platform.memberships_url()


def test_a_learner_who_left_is_marked_not_deleted_and_is_active_again_when_back(app, client, registered_platform):
    platform = registered_platform
    _synced(app, client, platform)
    roster = platform.rosters["c1"]
    alan = next(m for m in roster if m["user_id"] == "learner-3")
    roster.remove(alan)  # learner-3 left the course
    next(m for m in roster if m["user_id"] == "learner-2")["status"] = "Inactive"
    _mark_synced_long_ago(app)
    lti_launch(client, platform, custom={"exercise": QUIZ}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    assert [o.change.left for o in _syncer(app).run_once()] == [2]

    members = _members(app)
    assert set(members) == {"learner-1", "learner-2", "learner-3", "teacher-1"}  # nobody deleted
    for learner in ("learner-2", "learner-3"):
        assert members[learner].status == "left" and members[learner].left_at is not None
    assert members["learner-3"].name == "Alan Turing"  # still named in their attempts
    assert members["learner-1"].status == "active" and members["learner-1"].left_at is None

    roster.append(alan)  # back again
    next(m for m in roster if m["user_id"] == "learner-2")["status"] = "Active"
    _mark_synced_long_ago(app)
    lti_launch(client, platform, custom={"exercise": QUIZ}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    assert [o.change.returned for o in _syncer(app).run_once()] == [2]
    assert all(m.status == "active" and m.left_at is None for m in _members(app).values())


def test_a_failed_read_keeps_the_roster_records_the_error_and_logs_no_token(app, client, registered_platform, caplog):
    platform = registered_platform
    caplog.set_level(logging.DEBUG)
    _synced(app, client, platform)
    platform.rosters["c1"] = platform.rosters["c1"][:3]  # teacher-1 left...
    platform.fail_memberships_page = 2  # ...but the second page fails: the roster is not complete

    _mark_synced_long_ago(app)
    synced_at = context_claim(app).roster_synced_at
    lti_launch(client, platform, custom={"exercise": QUIZ}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    [outcome] = _syncer(app).run_once()
    assert not outcome.synced
    assert all(m.status == "active" for m in _members(app).values())  # nothing changed
    course = context_claim(app)
    assert "500" in course.roster_error and course.roster_failed_at is not None
    assert course.roster_synced_at == synced_at
    assert course.roster_sync_due_at > utcnow()  # tried again later, not in a loop

    # A revoked token: refused (401), forgotten, and the next sync gets a new one.
    platform.fail_memberships_page = None
    platform.access_tokens.clear()
    _mark_synced_long_ago(app)
    lti_launch(client, platform, custom={"exercise": QUIZ}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    [outcome] = _syncer(app).run_once()
    assert not outcome.synced and "401" in outcome.error
    _mark_synced_long_ago(app)
    lti_launch(client, platform, custom={"exercise": QUIZ}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    [outcome] = _syncer(app).run_once()
    assert outcome.synced and outcome.change.left == 1
    assert context_claim(app).roster_error is None

    tokens = [r["authorization"].removeprefix("Bearer ") for r in platform.membership_requests]
    assert tokens and all(tokens)
    written = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records) + (course.roster_error or "")
    assert not [token for token in tokens if token in written]


def test_a_launch_names_its_user_where_the_platform_grants_no_roster(app, client, registered_platform, staff_key):
    platform = registered_platform
    _learner_launch(client, platform, sub="learner-9", nrps=False,
                    overrides={"name": "Mary Somerville", "email": "mary@example.invalid"})
    member = _members(app)["learner-9"]
    assert (member.name, member.email, member.status) == ("Mary Somerville", "mary@example.invalid", "active")
    course = context_claim(app)
    assert course.memberships_url is None and course.roster_sync_due_at is None
    assert _syncer(app).run_once() == []

    answer = client.post(f"/api/v1/admin/courses/{course.id}/roster/sync", headers=bearer(staff_key))
    assert answer.status_code == 409 and answer.mimetype == "application/problem+json"
    roster = client.get(f"/api/v1/admin/courses/{course.id}/members", headers=bearer(staff_key)).json
    assert roster["nrps"] is False
    assert [(m["learner"], m["name"], m["email"]) for m in roster["members"]] == [
        ("learner-9", "Mary Somerville", "mary@example.invalid")]

    # A launch that withholds the name keeps the one known.
    _learner_launch(client, platform, sub="learner-9", nrps=False, remove=("name", "email"))
    assert _members(app)["learner-9"].name == "Mary Somerville"


def test_staff_read_the_roster_and_queue_a_sync(app, client, registered_platform, staff_key, client_key):
    platform = registered_platform
    _synced(app, client, platform)
    platform.rosters["c1"].pop()  # teacher-1 left
    course = context_claim(app)
    url = f"/api/v1/admin/courses/{course.id}"

    queued = client.post(url + "/roster/sync", headers=bearer(staff_key))
    assert queued.status_code == 202, queued.json
    assert queued.json["nrps"] is True and queued.json["error"] is None
    assert [o.synced for o in _syncer(app).run_once()] == [True]

    roster = client.get(url + "/members", headers=bearer(staff_key)).json
    assert roster["synced_at"] is not None
    assert [(m["name"], m["status"]) for m in roster["members"]] == [
        ("Ada Lovelace", "active"), ("Alan Turing", "active"), ("Grace Hopper", "active"),
        ("Prof. Emmy Noether", "left")]
    left = client.get(url + "/members", headers=bearer(staff_key), query_string={"status": "left"}).json
    assert [m["learner"] for m in left["members"]] == ["teacher-1"]
    assert client.get(url + "/members", headers=bearer(client_key)).status_code == 403
    missing = client.get(f"/api/v1/admin/courses/{course.id + 1000}/members", headers=bearer(staff_key))
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"


def test_link_headers_and_page_limits():
    assert next_page('<https://lms.example/m?page=2>; rel="next", <https://lms.example/m?page=9>; rel="last"') \
        == "https://lms.example/m?page=2"
    assert next_page('<https://lms.example/m?p=1>; rel="differences"') is None
    assert next_page(None) is None
    assert first_page("https://lms.example/m?role=Learner") == "https://lms.example/m?role=Learner&limit=200"
    assert first_page("https://lms.example/m?limit=10") == "https://lms.example/m?limit=10"


def _csv(response) -> list[dict]:
    assert response.status_code == 200, response.get_data(as_text=True)
    return list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))


def test_names_show_in_the_attempt_search_its_detail_the_csv_exports_and_progress(
        app, client, registered_platform, staff_key, client_key):
    platform = registered_platform
    for sub in ("learner-1", "learner-3"):
        token = _learner_launch(client, platform, sub=sub)
        made = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT})
        assert made.status_code == 201, made.json
    # An attempt outside any course (a client's own learner): no name.
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(client_key),
                       json={"learner": "zed", "answer": RIGHT}).status_code == 201
    assert [o.synced for o in _syncer(app).run_once()] == [True]
    platform.rosters["c1"] = [m for m in platform.rosters["c1"] if m["user_id"] != "learner-3"]  # Alan left
    course = context_claim(app)
    assert client.post(f"/api/v1/admin/courses/{course.id}/roster/sync", headers=bearer(staff_key)).status_code == 202
    assert [o.change.left for o in _syncer(app).run_once()] == [1]

    found = client.get("/api/v1/admin/attempts", headers=bearer(staff_key)).json["items"]
    named = {a["learner"]: (a["learner_name"], a["learner_email"], a["learner_status"]) for a in found}
    assert named == {"learner-1": ("Ada Lovelace", "ada@example.invalid", "active"),
                     "learner-3": ("Alan Turing", "alan@example.invalid", "left"),
                     "zed": (None, None, None)}
    ada = next(a for a in found if a["learner"] == "learner-1")
    detail = client.get(f"/api/v1/admin/attempts/{ada['id']}", headers=bearer(staff_key)).json
    assert (detail["learner_name"], detail["learner_email"], detail["learner_status"]) == \
        ("Ada Lovelace", "ada@example.invalid", "active")

    rows = _csv(client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key)))
    assert {r["learner"]: (r["learner_name"], r["learner_email"], r["learner_status"]) for r in rows} == {
        "learner-1": ("Ada Lovelace", "ada@example.invalid", "active"),
        "learner-3": ("Alan Turing", "alan@example.invalid", "left"), "zed": ("", "", "")}
    book = _csv(client.get("/api/v1/admin/gradebook.csv", headers=bearer(staff_key), query_string={"exercise": QUIZ}))
    assert [list(r) for r in book][0] == ["client", "learner", "learner_name", "learner_email", QUIZ]
    assert {r["learner"]: (r["learner_name"], r["learner_email"]) for r in book} == {
        "learner-1": ("Ada Lovelace", "ada@example.invalid"), "learner-3": ("Alan Turing", "alan@example.invalid"),
        "zed": ("", "")}

    progress = client.get("/api/v1/admin/learners/learner-3/progress", headers=bearer(staff_key)).json
    [membership] = progress["memberships"]
    assert (membership["name"], membership["course"], membership["status"]) == \
        ("Alan Turing", "Deep Learning 101", "left") and membership["left_at"]
    assert client.get("/api/v1/admin/learners/zed/progress", headers=bearer(staff_key)).json["memberships"] == []


def test_a_launch_whose_member_row_another_transaction_added_meanwhile_still_succeeds(app, client,
                                                                                    registered_platform):
    """Two launches of one user (two tabs), or a launch beside a roster read: both find no member row,
    the other commits first; this one's insert conflicts, and it updates the row instead of failing."""
    from service.lti import roster
    from service.lti.launch import Launch
    from service.models import LtiPlatform

    _learner_launch(client, registered_platform, sub="learner-1")  # makes the course and the row
    with app.app_context():
        session = db_session()
        course = session.scalar(select(Course).where(Course.external_id == "c1"))
        platform = session.scalar(select(LtiPlatform))
        launch = Launch(platform, {"sub": "learner-1", "name": "Ada King", "email": "ada.king@example.invalid"})
        real_scalar = session.scalar
        calls = []

        def scalar_missing_the_row_once(stmt, *args, **kwargs):  # as read before the other commit
            calls.append(stmt)
            return None if len(calls) == 1 else real_scalar(stmt, *args, **kwargs)

        session.scalar = scalar_missing_the_row_once
        try:
            roster._record_launching_member(session, course, launch, utcnow())
        finally:
            del session.scalar
        session.commit()
    member = _members(app)["learner-1"]
    assert (member.name, member.email) == ("Ada King", "ada.king@example.invalid") and len(calls) == 2
