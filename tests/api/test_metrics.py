"""GET /metrics: request latency by route, attempts and queue depth from the database, access."""

import logging
import uuid

from prometheus_client.parser import text_string_to_metric_families

from service import create_app
from tests.helpers import bearer, correct_answer

LATENCY = "gradquiz_http_request_duration_seconds"
QUIZ = "backward-none-for-bounds"
CODE = "clamp-function"


def scrape(client, headers=None) -> dict[tuple[str, frozenset], float]:
    """The page's samples as {(name, labels): value}."""
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type.startswith("text/plain; version=")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.get_data(as_text=True)) for s in family.samples}


def requests_seen(samples, route: str, status: str, method: str = "GET") -> float:
    labels = frozenset({"route": route, "method": method, "status": status}.items())
    return samples.get((f"{LATENCY}_count", labels), 0.0)


def test_latency_is_labelled_with_the_route_template_not_the_path(client, client_key):
    before = scrape(client)
    attempt_id = uuid.uuid4()
    for _ in range(2):
        assert client.get(f"/api/v1/attempts/{attempt_id}", headers=bearer(client_key)).status_code == 404
    assert client.get(f"/no/such/{attempt_id}").status_code == 404
    after = scrape(client)

    route = "/api/v1/attempts/<uuid:attempt_id>"
    assert requests_seen(after, route, "404") - requests_seen(before, route, "404") == 2
    assert requests_seen(after, "unmatched", "404") - requests_seen(before, "unmatched", "404") == 1
    assert not [key for key in after if str(attempt_id) in str(key)]
    # The scrapes themselves are not requests the API served.
    assert not [key for key in after if ("route", "/metrics") in key[1]]


def test_attempts_by_status_and_queue_depth_come_from_the_database(client, client_key, quiz_catalog):
    graded = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(client_key),
                         json={"learner": "ada", "answer": correct_answer(quiz_catalog[QUIZ])})
    assert graded.status_code == 201
    # No worker runs in these tests: the code attempt and the run stay queued.
    for _ in range(2):
        queued = client.post(f"/api/v1/exercises/{CODE}/attempts", headers=bearer(client_key),
                             json={"learner": "ada", "code": "pass"})
        assert queued.status_code == 202
    assert client.post("/api/v1/runs", headers=bearer(client_key), json={"code": "pass", "wait": 0}).status_code == 202

    samples = scrape(client)
    assert {status: samples[("gradquiz_attempts", frozenset({("status", status)}))]
            for status in ("queued", "running", "graded", "error")} == {"queued": 2, "running": 0, "graded": 1, "error": 0}
    assert samples[("gradquiz_queue_depth", frozenset({("kind", "attempt")}))] == 2
    assert samples[("gradquiz_queue_depth", frozenset({("kind", "run")}))] == 1


def test_with_a_token_only_its_bearer_scrapes(make_app):
    client = make_app(metrics_token="metrics-token-0123456789").test_client()
    # Non-ASCII too: compared as bytes, it is refused like any wrong token (not a 500).
    for headers in ({}, bearer("wrong-token"), {"Authorization": "Basic bWV0cmljczp0b2tlbg=="}, bearer("métrique")):
        response = client.get("/metrics", headers=headers)
        assert response.status_code == 401, headers
        assert response.content_type == "application/problem+json"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert LATENCY in client.get("/metrics", headers=bearer("metrics-token-0123456789")).get_data(as_text=True)


def test_production_without_a_token_has_no_metrics(make_app):
    production = {"env": "production", "secret_key": "s" * 32}
    response = make_app(**production, metrics_token="").test_client().get("/metrics")
    assert response.status_code == 404 and response.content_type == "application/problem+json"
    with_token = make_app(**production, metrics_token="metrics-token-0123456789").test_client()
    assert with_token.get("/metrics", headers=bearer("metrics-token-0123456789")).status_code == 200


def test_open_in_testing_and_not_in_the_openapi_document(client):
    assert client.get("/metrics").status_code == 200
    assert "/metrics" not in client.get("/api/v1/openapi.json").json["paths"]


def test_scrape_answers_when_the_database_is_down(caplog):
    client = create_app({"database_url": "postgresql://nobody@127.0.0.1:1/none", "env": "testing"}).test_client()
    client.get("/healthz")
    with caplog.at_level(logging.WARNING, logger="service.metrics"):
        samples = scrape(client)
    assert requests_seen(samples, "/healthz", "200") >= 1
    assert not [key for key in samples if key[0] in ("gradquiz_attempts", "gradquiz_queue_depth")]
    assert "database unavailable" in caplog.text
