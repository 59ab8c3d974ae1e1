"""Staff search of attempts (filters, sorts, keyset pages), one attempt in full, streamed CSV exports."""

from __future__ import annotations

import base64
import csv
import dataclasses
import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select

from service.auth import create_client
from service.extensions import db_session
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import (
    ApiClient,
    Attempt,
    AttemptEvent,
    Exercise,
    GradeOverride,
    LtiPlatform,
    LtiResourceLink,
    Role,
    ScorePassback,
    WebhookDelivery,
    WebhookEndpoint,
)
from service.schemas.admin_attempts import (
    AttemptDetailSchema,
    DeliveryStateSchema,
    EventSchema,
    OverrideEntrySchema,
    PassbackStateSchema,
    TimingsSchema,
)
from service.services import admin_detail, admin_export, admin_search
from tests.helpers import bearer, correct_answer

QUIZ = "backward-none-for-bounds"
OTHER_QUIZ = "call-through-apply"
CODE = "clamp-function"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


# --- fixtures and builders ---------------------------------------------------------------------


@pytest.fixture
def staff_key(app) -> str:
    with app.app_context():
        _client, key = create_client(db_session(), "teacher", Role.INSTRUCTOR)
        db_session().commit()
    return key


def client_id(app, name: str) -> int:
    with app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == name))


def learner_token(app, client_name: str = "lms-one") -> str:
    scope = LearnerScope(client_id=client_id(app, client_name), learner="ada", exercise=QUIZ, role=LEARNER,
                         link_id=None)
    return issue_learner_token(app.config["SETTINGS"].secret_key, scope, 600)


def add_attempts(app, *rows: dict) -> list[uuid.UUID]:
    """Insert graded (or not) attempts directly, for control over times, verdicts and scores.

    Each row: exercise (slug), client (name), learner, created_at, and any Attempt column."""
    ids = []
    with app.app_context():
        session = db_session()
        for row in rows:
            row = dict(row)
            exercise = session.scalar(select(Exercise).where(Exercise.slug == row.pop("exercise", QUIZ)))
            name = row.pop("client", "lms-one")
            owner = session.scalar(select(ApiClient).where(ApiClient.name == name))
            if owner is None:
                owner, _key = create_client(session, name, Role.CLIENT)
            score = row.get("score")
            status = row.pop("status", "graded" if score is not None else "queued")
            attempt = Attempt(exercise_id=exercise.id, exercise_version_id=exercise.version.id, client_id=owner.id,
                              status=status, grader_score=score, **row)
            if status == "graded" and "graded_at" not in row:
                attempt.graded_at = attempt.created_at + timedelta(seconds=1)
            if status == "graded" and "verdict" not in row:
                attempt.verdict = "passed" if score >= 1 else "failed"
            if status == "graded" and "correct" not in row:
                attempt.correct = score >= 1
            session.add(attempt)
            session.flush()
            ids.append(attempt.id)
        session.commit()
    return ids


def search(http, key, **params):
    response = http.get("/api/v1/admin/attempts", query_string=params, headers=bearer(key))
    assert response.status_code == 200, response.json
    return response.json


def walk(http, key, **params) -> list[dict]:
    """Every page, following next_cursor to the end."""
    items, cursor = [], None
    for _ in range(1000):
        body = search(http, key, **params, **({"cursor": cursor} if cursor else {}))
        assert len(body["items"]) <= int(params.get("limit", 50))
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError("the pages never ended")


def ids(items) -> list[str]:
    return [item["id"] for item in items]


def as_str(values) -> list[str]:
    return [str(v) for v in values]


def read_csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


@pytest.fixture
def population(app, client_key, other_client_key):
    """Attempts that differ in every searchable column, one minute apart, oldest first."""
    at = [T0 + timedelta(minutes=i) for i in range(10)]
    rows = [
        dict(exercise=QUIZ, learner="ada", created_at=at[0], score=1.0),
        dict(exercise=QUIZ, learner="ada", created_at=at[1], score=0.0),
        dict(exercise=QUIZ, learner="bob", created_at=at[2], score=0.5, verdict="failed"),
        dict(exercise=OTHER_QUIZ, learner="ada", created_at=at[3], score=1.0),
        dict(exercise=CODE, learner="ada", created_at=at[4], code="x = 1", score=0.25, verdict="failed",
             likely_cause="wrong_sign"),
        dict(exercise=CODE, learner="bob", created_at=at[5], code="x = 1", score=0.0, verdict="timeout"),
        dict(exercise=CODE, learner="cy", created_at=at[6], code="x = 1", score=0.6, verdict="failed",
             likely_cause="forgot_grad_output"),
        dict(exercise=CODE, learner="cy", created_at=at[7], code="x = 1", status="queued"),
        dict(exercise=CODE, learner="ada", created_at=at[8], code="x = 1", status="error", verdict="internal_error",
             graded_at=at[8]),
        dict(exercise=QUIZ, learner="ada", client="lms-two", created_at=at[9], score=0.75, verdict="failed"),
    ]
    return [str(i) for i in add_attempts(app, *rows)]


# --- authorization -----------------------------------------------------------------------------


ENDPOINTS = ["/api/v1/admin/attempts", f"/api/v1/admin/attempts/{uuid.uuid4()}", "/api/v1/admin/attempts.csv",
             "/api/v1/admin/gradebook.csv"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_only_staff_may_call(app, client, client_key, path):
    response = client.get(path)
    assert response.status_code == 401 and response.mimetype == "application/problem+json"
    for key in (client_key, learner_token(app)):
        response = client.get(path, headers=bearer(key))
        assert response.status_code == 403, (path, response.json)
        assert response.mimetype == "application/problem+json"


def test_instructors_and_admins_may_call(app, client, staff_key, admin_key, population):
    for key in (staff_key, admin_key):
        for path in ("/api/v1/admin/attempts", f"/api/v1/admin/attempts/{population[0]}",
                     "/api/v1/admin/attempts.csv", "/api/v1/admin/gradebook.csv"):
            assert client.get(path, headers=bearer(key)).status_code == 200, path


def test_every_endpoint_documents_its_problems(client):
    paths = client.get("/api/v1/openapi.json").json["paths"]
    for path in ("/api/v1/admin/attempts", "/api/v1/admin/attempts/{attempt_id}", "/api/v1/admin/attempts.csv",
                 "/api/v1/admin/gradebook.csv"):
        responses = paths[path]["get"]["responses"]
        assert {"401", "403"} <= responses.keys(), path
        assert "application/problem+json" in responses["403"]["content"]
    assert "400" in paths["/api/v1/admin/attempts"]["get"]["responses"]
    assert "404" in paths["/api/v1/admin/attempts/{attempt_id}"]["get"]["responses"]
    assert "text/csv" in paths["/api/v1/admin/attempts.csv"]["get"]["responses"]["200"]["content"]


# --- search: filters and sorts -----------------------------------------------------------------


def test_the_default_is_newest_first_with_every_summary_field(client, staff_key, population):
    body = search(client, staff_key)
    assert ids(body["items"]) == population[::-1] and body["next_cursor"] is None
    newest = body["items"][0]
    assert newest == {
        "id": population[9], "exercise": QUIZ, "exercise_version": 1, "client": "lms-two", "learner": "ada",
        "learner_name": None, "learner_email": None, "learner_status": None,  # no course roster names her
        "status": "graded", "verdict": "failed", "likely_cause": None, "score": 0.75, "grader_score": 0.75,
        "overridden": False, "correct": False, "created_at": (T0 + timedelta(minutes=9)).isoformat(),
        "started_at": None, "graded_at": (T0 + timedelta(minutes=9, seconds=1)).isoformat()}


@pytest.mark.parametrize(("params", "expected"), [
    ({"exercise": QUIZ}, [0, 1, 2, 9]),
    ({"exercise": CODE}, [4, 5, 6, 7, 8]),
    ({"learner": "ada"}, [0, 1, 3, 4, 8, 9]),
    ({"learner": "ada", "client": "lms-one"}, [0, 1, 3, 4, 8]),
    ({"client": "lms-two"}, [9]),
    ({"status": "queued"}, [7]),
    ({"status": "error"}, [8]),
    ({"verdict": "timeout"}, [5]),
    ({"verdict": "failed"}, [1, 2, 4, 6, 9]),
    ({"verdict": "passed", "exercise": QUIZ}, [0]),
    ({"likely_cause": "wrong_sign"}, [4]),
    ({"score_min": 0.5}, [0, 2, 3, 6, 9]),
    ({"score_max": 0.25}, [1, 4, 5]),
    ({"exercise": CODE, "score_min": 0.2, "score_max": 0.6}, [4, 6]),
    ({"since": (T0 + timedelta(minutes=3)).isoformat(), "until": (T0 + timedelta(minutes=6)).isoformat()},
     [3, 4, 5]),
    ({"since": "2026-03-01T09:08:00"}, [8, 9]),  # no offset: UTC
    ({"until": "2026-03-01T10:00:30+01:00"}, [0]),
    ({"exercise": "no-such-exercise"}, []),
    ({"client": "no-such-client"}, []),
    ({"learner": "nobody"}, []),
    ({"exercise": "", "learner": "", "score_min": ""}, list(range(10))),  # blank form fields: no filter
])
def test_each_filter_narrows(client, staff_key, population, params, expected):
    found = ids(search(client, staff_key, **params)["items"])
    assert found == [population[i] for i in reversed(expected)]


@pytest.mark.parametrize("params", [{"status": "done"}, {"score_min": 1.5}, {"score_max": -0.1},
                                    {"score_min": 0.8, "score_max": 0.2}, {"since": "yesterday"},
                                    {"since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
                                    {"limit": 0}, {"limit": 201}, {"sort": "learner"}, {"exercize": QUIZ}])
def test_bad_parameters_are_422(client, staff_key, params):
    response = client.get("/api/v1/admin/attempts", query_string=params, headers=bearer(staff_key))
    assert response.status_code == 422 and response.mimetype == "application/problem+json"
    assert response.json["errors"][0]["field"].startswith("query.")


def test_sorts(client, staff_key, population):
    rows = search(client, staff_key, limit=200)["items"]
    assert ids(search(client, staff_key, sort="created_at")["items"]) == population
    scored = [r for r in rows if r["score"] is not None]
    ungraded = [r for r in rows if r["score"] is None]
    by_score = sorted(scored, key=lambda r: (r["score"], uuid.UUID(r["id"])))
    by_id = sorted(ungraded, key=lambda r: uuid.UUID(r["id"]))
    # The ungraded rank lowest: last going down, first going up.
    assert ids(search(client, staff_key, sort="-score")["items"]) == ids(by_score[::-1] + by_id[::-1])
    assert ids(search(client, staff_key, sort="score")["items"]) == ids(by_id + by_score)
    top = search(client, staff_key, sort="-score", exercise=CODE)["items"]
    assert [r["score"] for r in top] == [0.6, 0.25, 0.0, None, None]


# --- keyset pages ------------------------------------------------------------------------------


@pytest.fixture
def crowd(app, client_key):
    """25 attempts, many sharing a created_at (the id breaks the tie), and many sharing a score."""
    rows = []
    for i in range(25):
        at = T0 + timedelta(seconds=i // 4)  # groups of four identical times
        if i % 6 == 5:
            rows.append(dict(learner=f"l{i}", created_at=at, status="queued"))
        else:
            rows.append(dict(learner=f"l{i}", created_at=at, score=[0.0, 0.5, 1.0][i % 3]))
    return [str(i) for i in add_attempts(app, *rows)]


def expected_order(client, key, sort):
    rows = search(client, key, limit=200)["items"]
    assert len(rows) == 25
    def key_of(row):
        return datetime.fromisoformat(row["created_at"]), uuid.UUID(row["id"])
    if sort.lstrip("-") == "created_at":
        ordered = sorted(rows, key=key_of)
        return ids(ordered[::-1] if sort.startswith("-") else ordered)
    scored = sorted((r for r in rows if r["score"] is not None), key=lambda r: (r["score"], uuid.UUID(r["id"])))
    ungraded = sorted((r for r in rows if r["score"] is None), key=lambda r: uuid.UUID(r["id"]))
    return ids(scored[::-1] + ungraded[::-1]) if sort.startswith("-") else ids(ungraded + scored)


@pytest.mark.parametrize("sort", admin_search.SORTS)
def test_pages_walk_every_row_exactly_once(client, staff_key, crowd, sort):
    walked = walk(client, staff_key, sort=sort, limit=7)
    assert len(walked) == 25 and len(set(ids(walked))) == 25
    assert ids(walked) == expected_order(client, staff_key, sort)


def test_pages_walk_with_a_filter(client, staff_key, crowd):
    walked = walk(client, staff_key, score_min=0.5, limit=3)
    matching = {r["id"] for r in search(client, staff_key, limit=200)["items"] if (r["score"] or 0) >= 0.5}
    assert len(matching) == 12
    assert ids(walked) == [i for i in expected_order(client, staff_key, "-created_at") if i in matching]


def test_a_page_exactly_full_has_no_next_page(client, staff_key, crowd):
    whole = search(client, staff_key, limit=25)
    assert len(whole["items"]) == 25 and whole["next_cursor"] is None
    first = search(client, staff_key, limit=24)
    assert first["items"] == whole["items"][:24] and first["next_cursor"]
    assert search(client, staff_key, limit=24, cursor=first["next_cursor"]) == {"items": whole["items"][24:],
                                                                                 "next_cursor": None}


def test_attempts_added_while_paging_do_not_shift_the_pages(app, client, staff_key, crowd):
    first = search(client, staff_key, limit=7)
    add_attempts(app, dict(learner="late", created_at=datetime.now(UTC), score=1.0))
    items, cursor = list(first["items"]), first["next_cursor"]
    while cursor:
        body = search(client, staff_key, limit=7, cursor=cursor)
        items += body["items"]
        cursor = body["next_cursor"]
    assert len(items) == len(set(ids(items))) == 25 and "late" not in [i["learner"] for i in items]


def encode(body) -> str:
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    "garbage!", "Zm9v", encode([1, 2]), encode({"v": 1, "s": "-created_at", "k": "yesterday", "i": str(uuid.uuid4())}),
    encode({"v": 1, "s": "-created_at", "k": "2026-03-01T09:00:00", "i": str(uuid.uuid4())}),  # no offset
    encode({"v": 1, "s": "-created_at", "k": "2026-03-01T09:00:00+00:00", "i": "not-a-uuid"}),
    encode({"v": 2, "s": "-created_at", "k": "2026-03-01T09:00:00+00:00", "i": str(uuid.uuid4())}),
])
def test_a_garbage_cursor_is_400(client, staff_key, crowd, cursor):
    response = client.get("/api/v1/admin/attempts", query_string={"cursor": cursor}, headers=bearer(staff_key))
    assert response.status_code == 400 and response.mimetype == "application/problem+json"
    assert response.json["errors"] == [{"field": "query.cursor", "message": "not a cursor returned by this API"}]


def test_a_cursor_made_for_another_sort_is_400(client, staff_key, crowd):
    cursor = search(client, staff_key, limit=7, sort="-score")["next_cursor"]
    for sort in ("-created_at", "score"):
        response = client.get("/api/v1/admin/attempts", query_string={"cursor": cursor, "sort": sort},
                              headers=bearer(staff_key))
        assert response.status_code == 400 and "sort" in response.json["detail"]
    bad_score = encode({"v": 1, "s": "-score", "k": "high", "i": str(uuid.uuid4())})
    response = client.get("/api/v1/admin/attempts", query_string={"cursor": bad_score, "sort": "-score"},
                          headers=bearer(staff_key))
    assert response.status_code == 400


# --- one attempt in full -----------------------------------------------------------------------


CODE_RESULT = {
    "score": 0.65, "status": "failed",
    "checks": [
        {"name": "parses", "weight": 0.05, "passed": True, "message": "The code parses."},
        {"name": "forward", "weight": 0.3, "passed": True, "message": "forward matches the reference."},
        {"name": "gradcheck", "weight": 0.35, "passed": False, "likely_cause": "wrong_sign",
         "message": "gradcheck failed on input x: element [2] numerical 1.0, analytical -1.0"},
    ],
    "diagnostics": [{"check": "gradcheck", "input": "x", "index": [2], "numerical": 1.0, "analytical": -1.0,
                     "likely_cause": "wrong_sign"}],
    "likely_causes": ["wrong_sign"],
    "feedback": ["The gradient has the wrong sign: check the sign of each term of backward."],
    "error": None,
    "output": {"stdout": "debug: forward called\n", "stderr": "warning: float32\n", "truncated": False},
    "timings": {"spare_ready": True, "child_ms": 21.5, "judge_ms": 3.25, "wait_slot_ms": 0.1, "total_ms": 25.0},
    "grader_version": "7",
}


def test_a_code_attempt_in_full(app, client, staff_key, client_key):
    created = T0
    [attempt_id] = add_attempts(app, dict(
        exercise=CODE, learner="ada", code="class ClampFn: ...\n", result=CODE_RESULT, score=0.65,
        verdict="failed", likely_cause="wrong_sign", created_at=created, started_at=created + timedelta(seconds=2),
        graded_at=created + timedelta(seconds=2, milliseconds=250), tries=1))
    body = client.get(f"/api/v1/admin/attempts/{attempt_id}", headers=bearer(staff_key)).json
    with app.app_context():
        exercise = db_session().scalar(select(Exercise).where(Exercise.slug == CODE))
        version, digest = exercise.version.number, exercise.version.digest
    assert body["id"] == str(attempt_id) and body["exercise"] == CODE and body["exercise_kind"] == "code"
    assert body["exercise_version"] == version and body["exercise_version_digest"] == digest and len(digest) == 64
    assert body["client"] == "lms-one" and body["learner"] == "ada"
    assert body["code"] == "class ClampFn: ...\n" and body["answer"] is None
    assert body["report_status"] == "failed" and body["verdict"] == "failed" and body["score"] == 0.65
    assert body["checks"] == CODE_RESULT["checks"]
    assert body["likely_causes"] == ["wrong_sign"] and body["diagnostics"] == CODE_RESULT["diagnostics"]
    assert body["feedback"] == CODE_RESULT["feedback"]
    assert body["output"] == CODE_RESULT["output"]
    assert body["timings"] == {
        "created_at": created.isoformat(), "started_at": (created + timedelta(seconds=2)).isoformat(),
        "graded_at": (created + timedelta(seconds=2, milliseconds=250)).isoformat(),
        "queued_ms": 2000.0, "grading_ms": 250.0, "report": CODE_RESULT["timings"]}
    assert body["grader_version"] == "7" and body["tries"] == 1
    assert body["events"] == body["webhook_deliveries"] == body["passbacks"] == body["overrides"] == []


def test_the_detail_shows_passbacks_webhook_deliveries_overrides_and_events(app, client, staff_key):
    [attempt_id, other_id] = add_attempts(
        app, dict(exercise=CODE, learner="ada", code="x", result=CODE_RESULT, score=0.65, created_at=T0),
        dict(exercise=CODE, learner="bob", code="x", result=CODE_RESULT, score=0.65, created_at=T0))
    at = T0 + timedelta(minutes=1)
    with app.app_context():
        session = db_session()
        owner = session.scalar(select(ApiClient).where(ApiClient.name == "lms-one"))
        exercise = session.scalar(select(Exercise).where(Exercise.slug == CODE))
        platform = LtiPlatform(name="Moodle", issuer="https://lms.example", client_id="tool", deployment_ids=["1"],
                               auth_login_url="https://lms.example/auth", auth_token_url="https://lms.example/token",
                               jwks_url="https://lms.example/jwks", api_client_id=owner.id)
        session.add(platform)
        session.flush()
        link = LtiResourceLink(platform_id=platform.id, deployment_id="1", resource_link_id="rl-1",
                               exercise_id=exercise.id, lineitem_url="https://lms.example/li/1")
        endpoint = WebhookEndpoint(client_id=owner.id, url="https://hooks.example/in", sealed_secret="sealed")
        session.add_all([link, endpoint])
        session.flush()
        graded = AttemptEvent(attempt_id=attempt_id, type="attempt.graded", created_at=at,
                              data={"status": "graded", "score": 0.65, "correct": False})
        elsewhere = AttemptEvent(attempt_id=other_id, type="attempt.graded", created_at=at, data={})
        session.add_all([graded, elsewhere])
        session.flush()
        session.add_all([
            WebhookDelivery(endpoint_id=endpoint.id, event_id=graded.id, status="failed", tries=3,
                            last_status_code=500, last_error="HTTP 500", created_at=at, next_attempt_at=at),
            WebhookDelivery(endpoint_id=endpoint.id, event_id=elsewhere.id, created_at=at, next_attempt_at=at),
            ScorePassback(attempt_id=attempt_id, event_id=graded.id, link_id=link.id, status="delivered", tries=1,
                          last_status_code=200, sent_score={"scoreGiven": 0.65, "scoreMaximum": 1},
                          delivered_at=at, created_at=at, next_attempt_at=at),
            GradeOverride(attempt_id=attempt_id, client_id=owner.id, actor="teacher", old_score=0.65, new_score=0.9,
                          reason="partial credit for the idea", created_at=at),
        ])
        session.commit()
        event_id, endpoint_id, link_id = graded.id, endpoint.id, link.id
    body = client.get(f"/api/v1/admin/attempts/{attempt_id}", headers=bearer(staff_key)).json
    assert body["events"] == [{"id": event_id, "type": "attempt.graded", "created_at": at.isoformat(),
                               "data": {"status": "graded", "score": 0.65, "correct": False}}]
    [delivery] = body["webhook_deliveries"]
    assert delivery | {"id": 0} == {
        "id": 0, "endpoint_id": endpoint_id, "event_id": event_id, "event_type": "attempt.graded", "status": "failed",
        "tries": 3, "last_status_code": 500, "last_error": "HTTP 500", "created_at": at.isoformat(),
        "last_attempt_at": None, "delivered_at": None}
    [passback] = body["passbacks"]
    assert passback | {"id": 0} == {
        "id": 0, "event_id": event_id, "link_id": link_id, "status": "delivered", "tries": 1, "last_status_code": 200,
        "last_error": None, "sent_score": {"scoreGiven": 0.65, "scoreMaximum": 1}, "created_at": at.isoformat(),
        "last_attempt_at": None, "delivered_at": at.isoformat()}
    [override] = body["overrides"]
    assert override | {"id": 0} == {"id": 0, "actor": "teacher", "old_score": 0.65, "new_score": 0.9,
                                    "reason": "partial credit for the idea", "learner_comment": None,
                                    "created_at": at.isoformat()}


def test_a_quiz_attempt_in_full(client, staff_key, client_key, quiz_catalog):
    answer = correct_answer(quiz_catalog[QUIZ])
    created = client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"learner": "ada", "answer": answer},
                          headers=bearer(client_key))
    assert created.status_code == 201
    body = client.get(f"/api/v1/admin/attempts/{created.json['id']}", headers=bearer(staff_key)).json
    assert body["answer"] == answer and body["code"] is None and body["exercise_kind"] == "single_choice"
    assert body["feedback"] == created.json["feedback"] and body["feedback"]
    assert body["checks"] == [] and body["output"] is None and body["report_status"] is None
    assert body["score"] == 1.0 and body["verdict"] == "passed" and body["client"] == "lms-one"
    assert [e["type"] for e in body["events"]] == ["attempt.graded"]


def test_an_unknown_attempt_is_404(client, staff_key):
    response = client.get(f"/api/v1/admin/attempts/{uuid.uuid4()}", headers=bearer(staff_key))
    assert response.status_code == 404 and response.mimetype == "application/problem+json"
    assert client.get("/api/v1/admin/attempts/not-a-uuid", headers=bearer(staff_key)).status_code == 404


def test_the_detail_is_built_with_the_fields_of_its_schemas():
    """Each part of an attempt in full is a dataclass with its schema's fields, no more, no fewer."""
    parts = [(admin_detail.AttemptDetail, AttemptDetailSchema), (admin_detail.Timings, TimingsSchema),
             (admin_detail.EventEntry, EventSchema), (admin_detail.DeliveryState, DeliveryStateSchema),
             (admin_detail.PassbackState, PassbackStateSchema), (admin_detail.OverrideEntry, OverrideEntrySchema)]
    for part, schema in parts:
        assert sorted(f.name for f in dataclasses.fields(part)) == sorted(schema().fields), part.__name__


# --- CSV exports -------------------------------------------------------------------------------


def test_the_attempts_csv_has_a_header_and_a_row_per_attempt(client, staff_key, population):
    response = client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key))
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"].startswith('attachment; filename="attempts-')
    rows = read_csv(response)
    assert tuple(rows[0]) == admin_export.ATTEMPT_CSV_COLUMNS
    assert [r[0] for r in rows[1:]] == population[::-1]
    newest = dict(zip(rows[0], rows[1]))
    assert newest == {
        "id": population[9], "exercise": QUIZ, "exercise_version": "1", "client": "lms-two", "learner": "ada",
        "learner_name": "", "learner_email": "", "learner_status": "",  # no course roster names her
        "status": "graded", "verdict": "failed", "likely_cause": "", "score": "0.75", "grader_score": "0.75",
        "overridden": "false", "correct": "false", "created_at": (T0 + timedelta(minutes=9)).isoformat(),
        "started_at": "", "graded_at": (T0 + timedelta(minutes=9, seconds=1)).isoformat()}
    queued = dict(zip(rows[0], rows[1 + population[::-1].index(population[7])]))
    assert queued["status"] == "queued" and queued["score"] == "" and queued["verdict"] == ""


def test_the_attempts_csv_applies_the_filters_and_the_sort(client, staff_key, population):
    rows = read_csv(client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key),
                               query_string={"exercise": CODE, "score_min": 0.1}))
    assert [r[0] for r in rows[1:]] == [population[6], population[4]]
    rows = read_csv(client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key),
                               query_string={"exercise": CODE, "sort": "-score"}))
    assert [dict(zip(rows[0], r))["score"] for r in rows[1:]] == ["0.6", "0.25", "0.0", "", ""]
    assert read_csv(client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key),
                               query_string={"client": "nobody"}))[1:] == []
    response = client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key), query_string={"limit": 5})
    assert response.status_code == 422  # no pages in an export: every matching row


def test_the_attempts_csv_is_not_taken_for_an_attempt_id(client, staff_key, population):
    assert client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key)).mimetype == "text/csv"
    assert client.get("/api/v1/admin/attempts.json", headers=bearer(staff_key)).status_code == 404


def test_csv_cells_that_look_like_formulas_are_neutralised(app, client, staff_key):
    hostile = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "plain", "a=b"]
    add_attempts(app, *(dict(learner=name, created_at=T0 + timedelta(seconds=i), score=1.0)
                        for i, name in enumerate(hostile)))
    rows = read_csv(client.get("/api/v1/admin/attempts.csv", headers=bearer(staff_key), query_string={"sort": "created_at"}))
    learners = [dict(zip(rows[0], r))["learner"] for r in rows[1:]]
    assert learners == ["'" + h for h in hostile[:5]] + ["plain", "a=b"]
    rows = read_csv(client.get("/api/v1/admin/gradebook.csv", headers=bearer(staff_key), query_string={"exercise": QUIZ}))
    assert sorted(r[1] for r in rows[1:]) == sorted(["'" + h for h in hostile[:5]] + ["plain", "a=b"])


def test_csv_exports_are_streamed_through_a_server_side_cursor(app, client, staff_key, monkeypatch):
    add_attempts(app, *(dict(learner=f"l{i % 7}", created_at=T0 + timedelta(seconds=i), score=(i % 5) / 4)
                        for i in range(60)))
    monkeypatch.setattr(admin_export, "CSV_CHUNK_ROWS", 10)
    streamed_options = []
    engine = app.extensions["gradquiz.db"].engine

    def record(conn, cursor, statement, parameters, context, executemany):
        if "FROM attempts" in statement:
            streamed_options.append(context.execution_options.get("yield_per"))
            if engine.dialect.name == "postgresql":  # a named (server-side) cursor: fetched in batches
                assert type(cursor).__name__ == "ServerCursor", type(cursor)

    event.listen(engine, "before_cursor_execute", record)
    try:
        for path, expected_rows in (("/api/v1/admin/attempts.csv", 60), ("/api/v1/admin/gradebook.csv", 7)):
            streamed_options.clear()
            response = client.get(path, headers=bearer(staff_key), buffered=False)
            assert response.is_streamed
            chunks = list(response.response)
            response.close()
            assert len(chunks) == 2 + (expected_rows - 1) // 10, path  # the header, then 10 rows a chunk
            text = "".join(c.decode() if isinstance(c, bytes) else c for c in chunks)
            assert len(list(csv.reader(io.StringIO(text)))) == 1 + expected_rows
            assert streamed_options == [admin_search.STREAM_BATCH], path
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_gradebook_best_and_latest(app, client, staff_key, other_client_key):
    at = [T0 + timedelta(minutes=i) for i in range(8)]
    add_attempts(
        app,
        dict(exercise=QUIZ, learner="ada", created_at=at[0], score=0.2),
        dict(exercise=QUIZ, learner="ada", created_at=at[1], score=0.9),
        dict(exercise=QUIZ, learner="ada", created_at=at[2], score=0.5),
        # Neither a failed grader nor a queued attempt is a grade.
        dict(exercise=QUIZ, learner="ada", created_at=at[3], status="error", verdict="internal_error"),
        dict(exercise=QUIZ, learner="ada", created_at=at[4], status="queued"),
        dict(exercise=OTHER_QUIZ, learner="ada", created_at=at[0], score=1.0),
        dict(exercise=QUIZ, learner="bob", created_at=at[5], score=0.3),
        dict(exercise=CODE, learner="bob", created_at=at[5], code="x", score=0.4),
        # The same learner id under another client is another learner.
        dict(exercise=QUIZ, learner="ada", client="lms-two", created_at=at[6], score=0.7),
    )

    def gradebook(**params):
        """The CSV without its name columns (learner_name, learner_email: empty, no course roster here)."""
        response = client.get("/api/v1/admin/gradebook.csv", headers=bearer(staff_key), query_string=params)
        assert response.status_code == 200 and response.mimetype == "text/csv", response.data
        assert response.headers["Content-Disposition"].startswith('attachment; filename="gradebook-')
        rows = read_csv(response)
        assert rows[0][2:4] == ["learner_name", "learner_email"] and all(r[2:4] == ["", ""] for r in rows[1:])
        return [r[:2] + r[4:] for r in rows]

    best = gradebook(exercise=[QUIZ, OTHER_QUIZ])
    assert best[0] == ["client", "learner", QUIZ, OTHER_QUIZ]
    assert sorted(best[1:]) == [["lms-one", "ada", "0.9", "1.0"], ["lms-one", "bob", "0.3", ""],
                                ["lms-two", "ada", "0.7", ""]]
    latest = gradebook(exercise=[QUIZ, OTHER_QUIZ], policy="latest")
    assert sorted(latest[1:]) == [["lms-one", "ada", "0.5", "1.0"], ["lms-one", "bob", "0.3", ""],
                                  ["lms-two", "ada", "0.7", ""]]
    assert gradebook(exercise=[OTHER_QUIZ, QUIZ], client="lms-one")[1:] == [["lms-one", "ada", "1.0", "0.9"],
                                                                          ["lms-one", "bob", "", "0.3"]]
    assert gradebook(exercise=CODE) == [["client", "learner", CODE], ["lms-one", "bob", "0.4"]]
    assert gradebook(exercise=QUIZ, client="nobody") == [["client", "learner", QUIZ]]
    everything = gradebook()
    with app.app_context():
        slugs = db_session().scalars(select(Exercise.slug).order_by(Exercise.difficulty, Exercise.slug)).all()
    assert everything[0] == ["client", "learner", *slugs]
    assert len(everything) == 4
    ada = dict(zip(everything[0], next(r for r in everything[1:] if r[:2] == ["lms-one", "ada"])))
    assert ada[QUIZ] == "0.9" and ada[OTHER_QUIZ] == "1.0" and ada[CODE] == ""


@pytest.mark.parametrize("params", [{"exercise": "no-such-exercise"}, {"policy": "average"}, {"sort": "learner"}])
def test_gradebook_refuses_unknown_exercises_and_policies(client, staff_key, params):
    response = client.get("/api/v1/admin/gradebook.csv", headers=bearer(staff_key), query_string=params)
    assert response.status_code == 422 and response.mimetype == "application/problem+json"
