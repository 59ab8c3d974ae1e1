"""Rules every request follows, found by the OpenAPI fuzz test with every check on: no NUL in any
string (PostgreSQL cannot store one; it was a 500), a path no slug or learner id could be is a
404, and the staff filters' blank values and times as the document says."""

from __future__ import annotations

import re

import pytest

from service.models import LtiPlatform, WebhookEndpoint
from tests.helpers import bearer, count_rows

NUL_QUERIES = [
    "/api/v1/admin/attempts?likely_cause=a%00b",
    "/api/v1/admin/attempts?learner=a%00b",
    "/api/v1/admin/overrides?exercise=a%00b",
    "/api/v1/admin/regrades?exercise=a%00b",
    "/api/v1/learners/ada/attempts?exercise=a%00b",
    "/api/v1/admin/learners/ada/progress?client=a%00b",
    "/api/v1/admin/gradebook.csv?client=a%00b",
    "/api/v1/admin/gradebook.csv?exercise=a%00b",
]


@pytest.mark.parametrize("url", NUL_QUERIES)
def test_a_nul_in_a_query_parameter_is_a_422_naming_it(client, admin_key, url):
    response = client.get(url, headers=bearer(admin_key))
    name = url.split("?")[1].split("=")[0]
    assert response.status_code == 422 and response.mimetype == "application/problem+json", response.json
    # A repeated parameter (the gradebook's exercise) names the value: query.exercise.0
    assert [e["message"] for e in response.json["errors"]
            if re.fullmatch(rf"query\.{name}(\.\d+)?", e["field"])] == ["must not contain U+0000 (NUL)"]


PLATFORM = {"name": "Moodle", "issuer": "https://lms.example", "client_id": "tool", "deployment_ids": ["1"],
            "auth_login_url": "https://lms.example/auth", "auth_token_url": "https://lms.example/token",
            "jwks_url": "https://lms.example/jwks"}


@pytest.mark.parametrize(("url", "body", "field"), [
    ("/api/v1/webhooks", {"url": "http://127.0.0.1:9/x", "description": "a\x00b"}, "json.description"),
    ("/api/v1/admin/lti/platforms", {**PLATFORM, "deployment_ids": ["1", "\x00"]}, "json.deployment_ids.1"),
    ("/api/v1/exercises/clamp-function/attempts", {"learner": "ada", "code": "a\x00"}, "json.code"),
    ("/api/v1/exercises/backward-none-for-bounds/attempts", {"learner": "ada", "answer": ["a\x00"]}, "json.answer.0"),
    ("/api/v1/runs", {"code": "print(1)\x00", "wait": 0}, "json.code"),
    ("/api/v1/runs", {"code": "print(1)", "entry_point": "F", "inputs": [{"type": "none", "description": "\x00"}]},
     "json.inputs.0.description"),
    ("/api/v1/admin/regrades", {"exercise": "a\x00"}, "json.exercise"),
])
def test_a_nul_in_a_body_is_a_422_naming_it_and_nothing_is_written(app, client, admin_key, url, body, field):
    before = count_rows(app, WebhookEndpoint), count_rows(app, LtiPlatform)
    response = client.post(url, json=body, headers=bearer(admin_key))
    assert response.status_code == 422 and response.mimetype == "application/problem+json", response.json
    assert {"field": field, "message": "must not contain U+0000 (NUL)"} in response.json["errors"]
    assert (count_rows(app, WebhookEndpoint), count_rows(app, LtiPlatform)) == before


@pytest.mark.parametrize("url", [
    "/api/v1/exercises/a%00b", "/api/v1/exercises/Clamp-Function", "/api/v1/exercises/ab",
    "/api/v1/admin/exercises/a%00b/stats", "/api/v1/admin/exercises/a%00b/versions",
    "/api/v1/learners/a%00b/attempts", "/api/v1/learners/ada%0A/attempts",
])
def test_a_path_no_slug_or_learner_could_be_is_a_404(client, admin_key, url):
    response = client.get(url, headers=bearer(admin_key))
    assert response.status_code == 404 and response.mimetype == "application/problem+json"


def test_a_learner_id_ends_where_the_pattern_does(client, admin_key):
    response = client.post("/api/v1/exercises/backward-none-for-bounds/attempts", headers=bearer(admin_key),
                           json={"learner": "ada\n", "answer": "none-each"})
    assert response.status_code == 422 and response.json["errors"][0]["field"] == "json.learner"


@pytest.mark.parametrize("query", [
    {"verdict": "", "status": "", "since": "", "until": "", "score_min": "", "cursor": "", "limit": ""},
    {"since": "2026-03-01T09:00", "until": "2026-03-02T09:00:00+02:00"},
    {"since": "9999-12-31T23:59:59-23:59"},  # past year 9999 in UTC: the latest time there is
])
def test_the_staff_search_takes_what_the_document_allows(client, admin_key, query):
    response = client.get("/api/v1/admin/attempts", query_string=query, headers=bearer(admin_key))
    assert response.status_code == 200, response.json


@pytest.mark.parametrize(("query", "field"), [
    ({"since": "2026-03-01"}, "query.since"),
    ({"until": "2026-02-30T00:00:00Z"}, "query.until"),
    ({"since": "2026-03-01 09:00:00Z"}, "query.since"),
])
def test_a_time_outside_the_pattern_is_a_422(client, admin_key, query, field):
    response = client.get("/api/v1/admin/attempts", query_string=query, headers=bearer(admin_key))
    assert response.status_code == 422 and response.json["errors"][0]["field"] == field


def test_a_cursor_outside_base64url_is_a_400_even_around_a_real_one(client, admin_key):
    for i in range(3):
        assert client.post("/api/v1/exercises/backward-none-for-bounds/attempts", headers=bearer(admin_key),
                           json={"learner": f"l{i}", "answer": "none-each"}).status_code == 201
    cursor = client.get("/api/v1/admin/attempts?limit=1", headers=bearer(admin_key)).json["next_cursor"]
    assert client.get("/api/v1/admin/attempts", query_string={"limit": 1, "cursor": cursor},
                      headers=bearer(admin_key)).status_code == 200
    response = client.get("/api/v1/admin/attempts", query_string={"limit": 1, "cursor": cursor + "!"},
                          headers=bearer(admin_key))
    assert response.status_code == 400
    assert response.json["errors"] == [{"field": "query.cursor", "message": "not a cursor returned by this API"}]


@pytest.mark.parametrize("url", ["http://a/<x>", "http://bücher.example/hook", "https://example.com/a b"])
def test_a_webhook_url_outside_rfc3986_is_a_422(client, admin_key, url):
    response = client.post("/api/v1/webhooks", json={"url": url}, headers=bearer(admin_key))
    assert response.status_code == 422 and response.json["errors"] == [{"field": "json.url",
                                                                        "message": "Not a valid URL."}]


def test_gradgradcheck_is_a_json_boolean(client, admin_key):
    response = client.post("/api/v1/runs", json={"code": "print(1)", "gradgradcheck": 0, "wait": 0},
                           headers=bearer(admin_key))
    assert response.status_code == 422 and response.json["errors"][0]["field"] == "json.gradgradcheck"
