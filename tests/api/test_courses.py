"""A client's own courses and course keys (issue 18): a client without an LMS makes courses, its
learners' attempts belong to the course their token names, and a course key is that course's staff
alone."""

from __future__ import annotations

from sqlalchemy import select

from service.auth import hash_key
from service.extensions import db_session
from service.models import Attempt, Course, CourseKey, LtiPlatform, Role
from tests.helpers import bearer

QUIZ = "backward-none-for-bounds"
RIGHT = "none-each"


def _course(client, key: str, external_id: str, title: str = "Autograd, spring") -> dict:
    made = client.post("/api/v1/courses", headers=bearer(key), json={"external_id": external_id, "title": title})
    assert made.status_code == 201, made.json
    return made.json


def _token(client, key: str, learner: str, course: str | None) -> str:
    issued = client.post("/api/v1/learner-tokens", headers=bearer(key),
                         json={"learner": learner, "exercises": [QUIZ], "course": course})
    assert issued.status_code == 200, issued.json
    return issued.json["token"]


def _submit(client, token: str) -> str:
    made = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT})
    assert made.status_code == 201, made.json
    return made.json["id"]


def _course_key(client, key: str, course_id: int, name: str = "gradebook script") -> dict:
    made = client.post(f"/api/v1/courses/{course_id}/keys", headers=bearer(key), json={"name": name})
    assert made.status_code == 201, made.json
    return made.json


def test_a_clients_learners_attempts_belong_to_the_course_their_token_names(app, client, client_key, other_client_key):
    spring = _course(client, client_key, "cs101-spring")
    autumn = _course(client, client_key, "cs101-autumn", "Autograd, autumn")
    again = client.post("/api/v1/courses", headers=bearer(client_key), json={"external_id": "cs101-spring", "title": "x"})
    assert again.status_code == 409 and again.mimetype == "application/problem+json"
    _course(client, other_client_key, "cs101-spring")  # another client's ids are its own
    listed = client.get("/api/v1/courses", headers=bearer(client_key)).json
    assert sorted(c["external_id"] for c in listed) == ["cs101-autumn", "cs101-spring"]

    in_spring = _submit(client, _token(client, client_key, "ada", "cs101-spring"))
    in_autumn = _submit(client, _token(client, client_key, "ada", "cs101-autumn"))
    no_course = _submit(client, _token(client, client_key, "ada", None))
    with app.app_context():
        courses = dict(db_session().execute(select(Attempt.id, Attempt.course_id)).all())
    assert {str(k): v for k, v in courses.items()} == {in_spring: spring["id"], in_autumn: autumn["id"], no_course: None}
    # A token of the spring course reads its own course's attempts alone (issue 33: not its
    # learner's made in no course, which are the client's); a token of no course reads them all.
    history = client.get("/api/v1/learners/ada/attempts", headers=bearer(_token(client, client_key, "ada", "cs101-spring")))
    assert [a["id"] for a in history.json["attempts"]] == [in_spring]
    history = client.get("/api/v1/learners/ada/attempts", headers=bearer(_token(client, client_key, "ada", None)))
    assert sorted(a["id"] for a in history.json["attempts"]) == sorted([in_spring, in_autumn, no_course])

    unknown = client.post("/api/v1/learner-tokens", headers=bearer(other_client_key),
                          json={"learner": "ada", "exercises": [QUIZ], "course": "cs101-autumn"})
    assert unknown.status_code == 422 and unknown.json["errors"][0]["field"] == "json.course"


def test_a_course_key_is_its_courses_staff_and_nothing_more(app, client, client_key, other_client_key):
    spring = _course(client, client_key, "cs101-spring")
    autumn = _course(client, client_key, "cs101-autumn")
    spring_attempt = _submit(client, _token(client, client_key, "ada", "cs101-spring"))
    autumn_attempt = _submit(client, _token(client, client_key, "bob", "cs101-autumn"))
    # Another client cannot make keys of this client's course; its own client can.
    assert client.post(f"/api/v1/courses/{spring['id']}/keys", headers=bearer(other_client_key),
                       json={"name": "x"}).status_code == 404
    made = _course_key(client, client_key, spring["id"])
    key = made["key"]
    assert key.startswith("gqc_") and made["key_prefix"] == key[:11]
    with app.app_context():
        stored = db_session().scalar(select(CourseKey).where(CourseKey.id == made["id"]))
        assert stored.key_hash == hash_key(key) and key not in repr(vars(stored))

    me = client.get("/api/v1/admin/whoami", headers=bearer(key)).json
    assert me["kind"] == "course_key" and me["course"]["id"] == spring["id"] and me["actor"] == "course key 'gradebook script'"
    items = client.get("/api/v1/admin/attempts", headers=bearer(key)).json["items"]
    assert [a["id"] for a in items] == [spring_attempt]
    versions = client.get(f"/api/v1/admin/exercises/{QUIZ}/versions", headers=bearer(key)).json
    assert sum(v["attempts"] for v in versions) == 1  # of two attempts at the exercise, one is the course's
    assert client.get(f"/api/v1/admin/attempts/{autumn_attempt}", headers=bearer(key)).status_code == 404
    assert client.get(f"/api/v1/admin/courses/{autumn['id']}", headers=bearer(key)).status_code == 404
    # It issues tokens in its own course only, and cannot make keys (a leaked key makes no successor).
    token = _token(client, key, "cy", None)
    cys = _submit(client, token)
    with app.app_context():
        assert db_session().scalar(select(Attempt.course_id).where(Attempt.learner == "cy")) == spring["id"]
    assert cys in client.get("/api/v1/admin/attempts.csv", headers=bearer(key)).get_data(as_text=True)
    assert client.post("/api/v1/learner-tokens", headers=bearer(key),
                       json={"learner": "cy", "exercises": [QUIZ], "course": "cs101-autumn"}).status_code == 422
    assert client.post(f"/api/v1/courses/{spring['id']}/keys", headers=bearer(key), json={"name": "successor"}).status_code == 403
    # Not a client's key: it submits nothing itself, and reaches nothing beyond its course.
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(key),
                       json={"learner": "ada", "answer": RIGHT}).status_code == 403
    assert client.post(f"/api/v1/admin/exercises/{QUIZ}/unpublish", headers=bearer(key)).status_code == 403

    revoked = client.delete(f"/api/v1/courses/{spring['id']}/keys/{made['id']}", headers=bearer(client_key))
    assert revoked.status_code == 204
    refused = client.get("/api/v1/admin/whoami", headers=bearer(key))
    assert refused.status_code == 401 and "WWW-Authenticate" in refused.headers
    listed = client.get(f"/api/v1/courses/{spring['id']}/keys", headers=bearer(client_key)).json
    assert [(k["name"], k["revoked_at"] is not None) for k in listed] == [("gradebook script", True)]
    assert "key" not in listed[0]


def test_a_key_of_an_lms_course_issues_no_learner_tokens(app, client, client_key_for):
    """An LMS course's learners get their tokens from their launches: a key of that course (an
    instructor's script) must not be able to act as one of them."""
    admin = client_key_for(app, "admin", Role.ADMIN)
    with app.app_context():
        lms = client.post("/api/v1/admin/lti/platforms", headers=bearer(admin), json={
            "name": "LMS", "issuer": "https://lms.example", "client_id": "tool", "deployment_ids": ["d1"],
            "auth_login_url": "https://lms.example/auth", "auth_token_url": "https://lms.example/token",
            "jwks_url": "https://lms.example/jwks"}).json
        platform_client = db_session().scalar(select(LtiPlatform.api_client_id).where(LtiPlatform.id == lms["id"]))
        course = Course(client_id=platform_client, platform_id=lms["id"], external_id="ctx-1", title="Course 1")
        db_session().add(course)
        db_session().commit()
        course_id = course.id
    key = _course_key(client, admin, course_id)["key"]
    refused = client.post("/api/v1/learner-tokens", headers=bearer(key), json={"learner": "ann", "exercises": [QUIZ]})
    assert refused.status_code == 403 and "launching from the LMS" in refused.json["detail"]
    assert client.get("/api/v1/admin/whoami", headers=bearer(key)).json["course"]["platform"] == "LMS"


def _client_id(app, key: str) -> int:
    with app.app_context():
        from service.models import ApiClient
        return db_session().scalar(select(ApiClient.id).where(ApiClient.key_hash == hash_key(key)))


def test_a_course_keys_token_reads_and_spends_nothing_of_its_learner_outside_its_course(app, client, client_key,
                                                                                         admin_key):
    """Issue 33: a course key names its tokens' learners at will. Its token for carol once read
    carol's attempts made in no course and used up her max_attempts there."""
    spring = _course(client, client_key, "cs101-spring")
    autumn = _course(client, client_key, "cs101-autumn")
    key = _course_key(client, client_key, spring["id"])["key"]
    rules = client.put(f"/api/v1/admin/exercises/{QUIZ}/clients/{_client_id(app, client_key)}/rules",
                       headers=bearer(admin_key), json={"max_attempts": 1})
    assert rules.status_code == 200, rules.json
    own = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(client_key),
                      json={"learner": "carol", "answer": RIGHT})
    assert own.status_code == 201, own.json
    in_autumn = _submit(client, _token(client, client_key, "carol", "cs101-autumn"))

    token = client.post("/api/v1/learner-tokens", headers=bearer(key),
                        json={"learner": "carol", "exercises": None}).json["token"]
    for attempt in (own.json["id"], in_autumn):
        refused = client.get(f"/api/v1/attempts/{attempt}", headers=bearer(token))
        assert refused.status_code == 404 and refused.mimetype == "application/problem+json"
    history = client.get("/api/v1/learners/carol/attempts", headers=bearer(token)).json
    assert history["attempts"] == [] and history["best_scores"] == []
    # Her attempts elsewhere count nothing here: the course has its own one attempt, numbered 1...
    standing = client.get(f"/api/v1/exercises/{QUIZ}/standing", headers=bearer(token)).json
    assert standing["attempts_used"] == 0, standing
    in_spring = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT})
    assert in_spring.status_code == 201 and in_spring.json["attempt_number"] == 1, in_spring.json
    assert client.get(f"/api/v1/attempts/{in_spring.json['id']}", headers=bearer(token)).status_code == 200
    # ...and spends nothing of hers elsewhere: in no course she has used her one, in autumn hers.
    with app.app_context():
        numbers = dict(db_session().execute(select(Attempt.course_id, Attempt.attempt_number)
                                            .where(Attempt.learner == "carol")).all())
    assert numbers == {None: 1, autumn["id"]: 1, spring["id"]: 1}
    again = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT})
    assert again.status_code == 409 and again.json["standing"]["attempts_used"] == 1
    no_course = client.get(f"/api/v1/exercises/{QUIZ}/standing?learner=carol", headers=bearer(client_key)).json
    assert no_course["attempts_used"] == 1
