"""Regrades of one course (issue 18): a course's staff regrade their course's attempts only, and see,
read and apply their course's regrades only; another course's regrade, or one of every course, is
a 404 to them, and naming another course's attempt writes nothing. An instructor's or admin's key
sees every regrade and may limit one to a course with `course`."""

from __future__ import annotations

import secrets
import uuid

import pytest
from sqlalchemy import select, update

from service.auth import hash_key
from service.extensions import db_session
from service.models import ApiClient, Attempt, Course, CourseKey, Regrade, RegradeItem, Role
from tests.api.support import grade_regrade_items
from tests.helpers import bearer, correct_answer, count_rows

QUIZ = "backward-none-for-bounds"  # single choice; "none-each" is right
OTHER_QUIZ = "squarefn-forward-value"
RIGHT, WRONG = "none-each", "zero-number"
REGRADES = "/api/v1/admin/regrades"


@pytest.fixture
def staff_key(app, client_key_for) -> str:
    return client_key_for(app, "prof", Role.INSTRUCTOR)


def make_course(app, external_id: str) -> int:
    with app.app_context():
        session = db_session()
        client_id = session.scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
        course = Course(client_id=client_id, external_id=external_id, title=f"Course {external_id}")
        session.add(course)
        session.commit()
        return course.id


def course_key(app, course_id: int, name: str = "scripts") -> str:
    """A course key of the course, as its staff make one."""
    key = "gqc_" + secrets.token_urlsafe(32)
    with app.app_context():
        db_session().add(CourseKey(course_id=course_id, name=name, key_hash=hash_key(key), key_prefix=key[:10],
                                   created_by="test"))
        db_session().commit()
    return key


def answer(client, key, learner, choice, slug=QUIZ, course_id=None) -> str:
    response = client.post(f"/api/v1/exercises/{slug}/attempts", json={"learner": learner, "answer": choice},
                           headers=bearer(key))
    assert response.status_code == 201, response.json
    if course_id is not None:  # as a launch of the course records it
        with app_of(client).app_context():
            db_session().execute(update(Attempt).where(Attempt.id == uuid.UUID(response.json["id"]))
                                 .values(course_id=course_id))
            db_session().commit()
    return response.json["id"]


def app_of(client):
    return client.application


@pytest.fixture
def courses(app, client, client_key):
    """Courses c1 (ada, bob) and c2 (cy) of lms-one, and dan's attempt outside any course."""
    c1, c2 = make_course(app, "c1"), make_course(app, "c2")
    attempts = {"ada": answer(client, client_key, "ada", RIGHT, course_id=c1),
                "bob": answer(client, client_key, "bob", WRONG, course_id=c1),
                "cy": answer(client, client_key, "cy", RIGHT, course_id=c2),
                "dan": answer(client, client_key, "dan", WRONG)}
    return {"c1": c1, "c2": c2, "attempts": attempts, "c1_key": course_key(app, c1), "c2_key": course_key(app, c2)}


def regrade(client, key, status=202, **body):
    response = client.post(REGRADES, headers=bearer(key), json=body)
    assert response.status_code == status, response.json
    return response.json


def regraded_attempts(app, regrade_id) -> set[str]:
    with app.app_context():
        return {str(a) for a in db_session().scalars(
            select(RegradeItem.attempt_id).where(RegradeItem.regrade_id == uuid.UUID(regrade_id)))}


def test_a_courses_staff_regrade_their_courses_attempts_only(app, client, staff_key, courses):
    attempts = courses["attempts"]
    of_c1 = regrade(client, courses["c1_key"], exercise=QUIZ)
    assert (of_c1["course"], of_c1["total"]) == (courses["c1"], 2)
    assert of_c1["requested_by"] == "course key 'scripts'"
    assert regraded_attempts(app, of_c1["id"]) == {attempts["ada"], attempts["bob"]}

    # An instructor's key: every course's attempts (dan's of no course too), or one course's with `course`.
    everyone = regrade(client, staff_key, exercise=QUIZ)
    assert (everyone["course"], everyone["total"]) == (None, 4)
    of_c2 = regrade(client, staff_key, exercise=QUIZ, course=courses["c2"])
    assert (of_c2["course"], regraded_attempts(app, of_c2["id"])) == (courses["c2"], {attempts["cy"]})
    # One attempt's regrade belongs to the attempt's course.
    assert regrade(client, staff_key, attempt=attempts["bob"])["course"] == courses["c1"]
    assert regrade(client, staff_key, attempt=attempts["dan"])["course"] is None
    # The course's own attempt, by its staff.
    assert regrade(client, courses["c2_key"], attempt=attempts["cy"])["course"] == courses["c2"]


def test_another_courses_regrades_are_invisible_and_unappliable(app, client, database_url, staff_key, courses):
    c1_key, c2 = courses["c1_key"], courses["c2"]
    own = regrade(client, c1_key, exercise=QUIZ)["id"]
    of_c2 = regrade(client, staff_key, exercise=QUIZ, course=c2)["id"]
    everyone = regrade(client, staff_key, exercise=QUIZ)["id"]
    grade_regrade_items(database_url)

    listed = client.get(REGRADES, headers=bearer(c1_key))
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json] == [own]
    assert listed.headers["X-Pagination"] and '"total": 1' in listed.headers["X-Pagination"]
    assert [r["id"] for r in client.get(REGRADES, headers=bearer(c1_key), query_string={"exercise": QUIZ}).json] \
        == [own]
    for hidden in (of_c2, everyone):
        for method, path in (("GET", f"{REGRADES}/{hidden}"), ("POST", f"{REGRADES}/{hidden}/apply")):
            response = client.open(path, method=method, headers=bearer(c1_key))
            assert response.status_code == 404, (method, path, response.json)
            assert response.mimetype == "application/problem+json"
    with app.app_context():
        assert {str(r.id): r.status for r in db_session().scalars(select(Regrade))} == {
            own: "dry_run", of_c2: "dry_run", everyone: "dry_run"}
    assert client.get(REGRADES, headers=bearer(c1_key), query_string={"course": c2}).status_code == 404
    assert client.get(REGRADES, headers=bearer(c1_key), query_string={"course": courses["c1"]}).json[0]["id"] == own

    applied = client.post(f"{REGRADES}/{own}/apply", headers=bearer(c1_key))
    assert applied.status_code == 200, applied.json
    assert (applied.json["status"], applied.json["applied_by"]) == ("applied", "course key 'scripts'")
    assert client.get(f"{REGRADES}/{own}", headers=bearer(c1_key)).json["status"] == "applied"

    # The instructor's key sees them all; ?course= lists the regrades limited to that course.
    assert {r["id"] for r in client.get(REGRADES, headers=bearer(staff_key)).json} == {own, of_c2, everyone}
    assert [r["id"] for r in client.get(REGRADES, headers=bearer(staff_key), query_string={"course": c2}).json] \
        == [of_c2]
    assert client.get(f"{REGRADES}/{of_c2}", headers=bearer(staff_key)).status_code == 200
    # c2's own staff see theirs.
    assert [r["id"] for r in client.get(REGRADES, headers=bearer(courses["c2_key"])).json] == [of_c2]


def test_naming_another_courses_attempt_or_course_is_a_404_and_writes_nothing(app, client, staff_key, courses):
    attempts, c1_key = courses["attempts"], courses["c1_key"]
    refused = [
        (c1_key, {"attempt": attempts["cy"]}),  # c2's
        (c1_key, {"attempt": attempts["dan"]}),  # of no course
        (c1_key, {"attempt": str(uuid.uuid4())}),
        (c1_key, {"exercise": QUIZ, "course": courses["c2"]}),
        (c1_key, {"attempt": attempts["ada"], "course": courses["c2"]}),
        (staff_key, {"attempt": attempts["cy"], "course": courses["c1"]}),
        (staff_key, {"exercise": QUIZ, "course": 999999}),
    ]
    for key, body in refused:
        response = client.post(REGRADES, headers=bearer(key), json=body)
        assert response.status_code == 404, (body, response.json)
        assert response.mimetype == "application/problem+json"
    assert count_rows(app, Regrade) == 0 and count_rows(app, RegradeItem) == 0


def test_a_course_without_a_graded_attempt_at_the_exercise_has_nothing_to_regrade(app, client, client_key,
                                                                               staff_key, courses, quiz_catalog):
    answer(client, client_key, "cy", correct_answer(quiz_catalog[OTHER_QUIZ]), slug=OTHER_QUIZ,
           course_id=courses["c2"])
    nothing = client.post(REGRADES, headers=bearer(courses["c1_key"]), json={"exercise": OTHER_QUIZ})
    assert nothing.status_code == 409, nothing.json
    assert "in this course" in nothing.json["detail"]
    assert count_rows(app, Regrade) == 0
    assert regrade(client, courses["c2_key"], exercise=OTHER_QUIZ)["total"] == 1
