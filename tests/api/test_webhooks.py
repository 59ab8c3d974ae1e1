"""Webhooks: registering endpoints, signed attempt events sent by the outbound runner, retries,
deduplication, the delivery log and resending, and who may see what."""

from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
from dataclasses import replace
from datetime import timedelta
from email.utils import format_datetime

import pytest
from sqlalchemy import select, update

from service.extensions import db_session
from service.jobs import db_lease
from service.models import ApiClient, Attempt, WebhookDelivery, WebhookEndpoint
from service.models.base import utcnow
from service.outbound.runner import OutboundRunner
from service.outbound.webhooks import WebhookDeliveries, new_secret, retry_after_seconds, signature_headers
from service.sealing import open_sealed
from tests.api.support import register_webhook
from tests.helpers import bearer, correct_answer
from tests.webhook_receiver import WebhookReceiver, hmac_verified, library_verified

SLUG = "backward-none-for-bounds"
ATTEMPT_FIELDS = ("id", "exercise", "exercise_version", "learner", "status", "score", "correct", "graded_at")


@pytest.fixture
def receiver():
    with WebhookReceiver() as receiver:
        yield receiver


def run_outbound(app, **overrides) -> int:
    """One pass of the outbound runner over webhook deliveries, as `flask worker` runs it."""
    settings = replace(app.config["SETTINGS"], **overrides)
    runner = OutboundRunner(settings, kinds=[WebhookDeliveries(settings)])
    try:
        return runner.run_once()
    finally:
        runner.pool.shutdown()


def make_due(app) -> None:
    """Let every pending delivery's wait (a backoff, or a dead runner's lease) run out."""
    with app.app_context():
        db_session().execute(update(WebhookDelivery).where(WebhookDelivery.status == "pending")
                             .values(next_attempt_at=utcnow() - timedelta(seconds=1)))
        db_session().commit()




def submit(client, key, quiz_catalog, learner="ada") -> dict:
    """A quiz attempt (graded at once), as the API shows it afterwards."""
    created = client.post(f"/api/v1/exercises/{SLUG}/attempts", headers=bearer(key),
                          json={"learner": learner, "answer": correct_answer(quiz_catalog[SLUG])})
    assert created.status_code == 201
    return client.get(created.headers["Location"], headers=bearer(key)).json


def deliveries(client, key, endpoint_id, **params) -> list[dict]:
    response = client.get(f"/api/v1/webhooks/{endpoint_id}/deliveries", headers=bearer(key), query_string=params)
    assert response.status_code == 200, response.json
    return response.json


def test_registering_shows_the_secret_once_and_stores_it_sealed(app, client, client_key, receiver):
    endpoint = register_webhook(client, client_key, receiver, description="grade book sync")
    secret = endpoint["secret"]
    assert secret.startswith("whsec_") and len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert (endpoint["url"], endpoint["description"], endpoint["disabled_at"]) == (receiver.url, "grade book sync", None)

    location = f"/api/v1/webhooks/{endpoint['id']}"
    shown = client.get(location, headers=bearer(client_key))
    assert shown.status_code == 200 and "secret" not in shown.json
    assert shown.json == {k: v for k, v in endpoint.items() if k != "secret"}
    listed = client.get("/api/v1/webhooks", headers=bearer(client_key)).json
    assert listed == [shown.json]
    assert secret not in json.dumps(client.get("/api/v1/openapi.json").json)

    with app.app_context():
        row = db_session().get(WebhookEndpoint, endpoint["id"])
        assert secret not in row.sealed_secret and secret.removeprefix("whsec_") not in row.sealed_secret
        assert open_sealed(app.config["SECRET_KEY"], row.sealed_secret).decode() == secret
    assert register_webhook(client, client_key, receiver)["secret"] != secret


def test_endpoints_are_listed_newest_first_in_pages(client, client_key, receiver):
    ids = [register_webhook(client, client_key, receiver, description=str(n))["id"] for n in range(3)]
    response = client.get("/api/v1/webhooks?page_size=2", headers=bearer(client_key))
    assert [e["id"] for e in response.json] == ids[::-1][:2]
    assert json.loads(response.headers["X-Pagination"])["total"] == 3


def test_a_graded_quiz_attempt_is_delivered_signed(app, client, client_key, receiver, quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)
    attempt = submit(client, client_key, quiz_catalog)
    # Nothing is sent on the request's path: the delivery waits for the runner.
    assert receiver.requests == []
    [queued] = deliveries(client, client_key, endpoint["id"])
    assert (queued["status"], queued["tries"], queued["attempt_id"]) == ("pending", 0, attempt["id"])

    assert run_outbound(app) == 1
    [request] = receiver.requests
    assert request.answered == 200 and not request.duplicate
    assert request.headers["content-type"] == "application/json"
    assert library_verified(receiver.secret, request.headers, request.body)
    assert hmac_verified(receiver.secret, request.headers, request.body)
    assert abs(int(request.headers["webhook-timestamp"]) - utcnow().timestamp()) < 30

    event = json.loads(request.body)
    assert event["id"] == request.headers["webhook-id"] == queued["event_id"]
    assert event["id"].startswith("evt_")
    assert (event["type"], event["created_at"]) == ("attempt.graded", attempt["graded_at"])
    assert event["data"]["attempt"] == {**{k: attempt[k] for k in ATTEMPT_FIELDS},
                                        "url": f"/api/v1/attempts/{attempt['id']}"}
    assert attempt["score"] == 1.0 and attempt["correct"] is True

    [logged] = deliveries(client, client_key, endpoint["id"])
    assert (logged["status"], logged["tries"], logged["last_status_code"], logged["last_error"]) == \
        ("delivered", 1, 200, None)
    assert (logged["event_type"], logged["next_attempt_at"]) == ("attempt.graded", None)
    assert logged["delivered_at"] and logged["last_attempt_at"]
    assert run_outbound(app) == 0  # delivered once, not again

    second = submit(client, client_key, quiz_catalog, learner="bob")
    assert [d["attempt_id"] for d in deliveries(client, client_key, endpoint["id"])] == [second["id"], attempt["id"]]


def test_an_attempt_graded_by_a_worker_is_delivered(app, client, client_key, receiver):
    endpoint = register_webhook(client, client_key, receiver)
    created = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                          json={"learner": "ada", "code": "class ClampFn: pass"})
    assert created.status_code == 202
    with app.app_context():
        job = db_lease.claim(db_session(), Attempt, "test-worker", timedelta(seconds=60), max_tries=3)
        assert db_lease.complete(db_session(), Attempt, job.id, "test-worker",
                                 {"score": 0.25, "correct": False, "result": {"status": "failed", "checks": []}})
    assert run_outbound(app) == 1
    attempt = client.get(created.headers["Location"], headers=bearer(client_key)).json
    [request] = receiver.accepted
    assert json.loads(request.body)["data"]["attempt"] == {**{k: attempt[k] for k in ATTEMPT_FIELDS},
                                                           "url": f"/api/v1/attempts/{attempt['id']}"}
    assert (attempt["score"], attempt["correct"]) == (0.25, False)
    assert deliveries(client, client_key, endpoint["id"])[0]["status"] == "delivered"


def test_a_failed_try_is_retried_after_its_backoff(app, client, client_key, receiver, quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    receiver.fail_next(1)
    assert run_outbound(app) == 1
    [waiting] = deliveries(client, client_key, endpoint["id"])
    assert (waiting["status"], waiting["tries"], waiting["last_status_code"]) == ("pending", 1, 500)
    assert "500" in waiting["last_error"] and waiting["next_attempt_at"] > waiting["last_attempt_at"]
    assert run_outbound(app) == 0  # not due before its backoff (OUTBOUND_RETRY_SECONDS) ran out

    make_due(app)
    assert run_outbound(app) == 1
    [logged] = deliveries(client, client_key, endpoint["id"])
    assert (logged["status"], logged["tries"], logged["last_status_code"], logged["last_error"]) == \
        ("delivered", 2, 200, None)
    failed_try, retry = receiver.requests
    assert (failed_try.answered, retry.answered) == (500, 200)
    # The same event: the same id and body; only the timestamp and signature belong to the try.
    assert failed_try.headers["webhook-id"] == retry.headers["webhook-id"] == logged["event_id"]
    assert failed_try.body == retry.body


def test_retry_after_is_honoured_on_429_and_503(app, client, client_key, receiver, quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    receiver.fail_next(1, 429, {"Retry-After": "120"})
    run_outbound(app, outbound_retry_seconds=0.01)
    with app.app_context():
        row = db_session().scalar(select(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint["id"]))
        assert timedelta(seconds=119) < row.next_attempt_at - row.last_attempt_at < timedelta(seconds=125)

    in_a_minute = format_datetime(utcnow() + timedelta(seconds=60), usegmt=True)
    assert 55 < retry_after_seconds({"retry-after": in_a_minute}) <= 60
    assert retry_after_seconds({"Retry-After": "inf"}) is None
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({"Retry-After": str(10**9)}) == 6 * 3600


def test_an_event_sent_twice_carries_one_id_so_the_receiver_deduplicates(app, client, client_key, receiver,
                                                                          quiz_catalog, monkeypatch):
    endpoint = register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)

    def die(*args, **kwargs):
        raise SystemError("the runner died after sending")

    monkeypatch.setattr("service.outbound.runner.record_outcome", die)
    with pytest.raises(SystemError):
        run_outbound(app)
    monkeypatch.undo()
    [unrecorded] = deliveries(client, client_key, endpoint["id"])
    assert (unrecorded["status"], unrecorded["tries"]) == ("pending", 1)

    make_due(app)  # the dead runner's lease ran out
    assert run_outbound(app) == 1
    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] and first.body == second.body
    assert (first.duplicate, second.duplicate) == (False, True)
    assert len(receiver.accepted) == 1 and len(receiver.seen_ids) == 1
    [logged] = deliveries(client, client_key, endpoint["id"])
    assert (logged["status"], logged["tries"]) == ("delivered", 2)


def test_a_tampered_body_or_an_old_timestamp_fails_verification(app, client, client_key, receiver, quiz_catalog):
    register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    run_outbound(app)
    [genuine] = receiver.accepted
    secret, headers, body = receiver.secret, genuine.headers, genuine.body

    tampered = body.replace(b'"learner":"ada"', b'"learner":"eve"')
    assert tampered != body
    assert not library_verified(secret, headers, tampered) and not hmac_verified(secret, headers, tampered)
    stale = int(headers["webhook-timestamp"]) - 600
    for replayed in ({**headers, "webhook-timestamp": str(stale)},
                     {**headers, **signature_headers(secret, headers["webhook-id"], body.decode(),
                                                     utcnow() - timedelta(minutes=10))}):
        assert not library_verified(secret, replayed, body) and not hmac_verified(secret, replayed, body)
    # The genuine request itself, replayed later than the 5-minute tolerance.
    sent_at = int(headers["webhook-timestamp"])
    assert hmac_verified(secret, headers, body, now=sent_at + 60)
    assert not hmac_verified(secret, headers, body, now=sent_at + 301)
    assert not hmac_verified(new_secret(), headers, body)

    forged = urllib.request.Request(receiver.url, data=tampered, method="POST", headers=headers)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(forged, timeout=5)
    assert refused.value.code == 400 and receiver.accepted == [genuine]


def test_max_tries_then_failed_then_resend_delivers(app, client, client_key, receiver, quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    receiver.fail_next(2, 503)
    run_outbound(app, outbound_max_tries=2)
    make_due(app)
    run_outbound(app, outbound_max_tries=2)
    [failed] = deliveries(client, client_key, endpoint["id"], status="failed")
    assert (failed["tries"], failed["last_status_code"], failed["next_attempt_at"]) == (2, 503, None)
    assert deliveries(client, client_key, endpoint["id"], status="pending") == []
    make_due(app)
    assert run_outbound(app, outbound_max_tries=2) == 0  # given up: no more tries

    resent = client.post(f"/api/v1/webhooks/{endpoint['id']}/deliveries/{failed['id']}/resend",
                         headers=bearer(client_key))
    assert resent.status_code == 202
    assert (resent.json["status"], resent.json["tries"], resent.json["event_id"]) == ("pending", 0, failed["event_id"])
    assert run_outbound(app, outbound_max_tries=2) == 1
    [delivered] = deliveries(client, client_key, endpoint["id"], status="delivered")
    assert (delivered["id"], delivered["tries"]) == (failed["id"], 1)
    assert [r.answered for r in receiver.requests] == [503, 503, 200]

    bad_filter = client.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries?status=lost", headers=bearer(client_key))
    assert bad_filter.status_code == 422 and bad_filter.content_type == "application/problem+json"
    unknown = client.post(f"/api/v1/webhooks/{endpoint['id']}/deliveries/{failed['id'] + 1}/resend",
                          headers=bearer(client_key))
    assert unknown.status_code == 404


def test_a_deleted_endpoint_gets_nothing_more(app, client, client_key, receiver, quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)
    location = f"/api/v1/webhooks/{endpoint['id']}"
    submit(client, client_key, quiz_catalog)  # queued, not sent yet

    assert client.delete(location, headers=bearer(client_key)).status_code == 204
    submit(client, client_key, quiz_catalog, learner="bob")
    assert run_outbound(app) == 0
    assert receiver.requests == []
    # Its log stays readable; what was waiting failed, and later events were not queued for it.
    [waiting] = deliveries(client, client_key, endpoint["id"])
    assert (waiting["status"], waiting["last_error"]) == ("failed", "the endpoint was deleted")
    shown = client.get(location, headers=bearer(client_key)).json
    assert shown["disabled_at"] is not None
    resend = client.post(f"{location}/deliveries/{waiting['id']}/resend", headers=bearer(client_key))
    assert resend.status_code == 409 and resend.content_type == "application/problem+json"
    assert client.delete(location, headers=bearer(client_key)).status_code == 204
    assert client.get(location, headers=bearer(client_key)).json["disabled_at"] == shown["disabled_at"]


def test_a_delivery_claimed_before_its_endpoint_was_deleted_is_not_sent(app, client, client_key, receiver,
                                                                         quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    with app.app_context():  # deleted between the runner's claim and its send
        db_session().get(WebhookEndpoint, endpoint["id"]).disabled_at = utcnow()
        db_session().commit()
    assert run_outbound(app) == 1
    assert receiver.requests == []
    [logged] = deliveries(client, client_key, endpoint["id"])
    assert (logged["status"], logged["tries"], logged["last_error"]) == ("failed", 1, "the endpoint was deleted")


def test_endpoints_belong_to_their_client_and_admins_see_all(client, client_key, other_client_key, admin_key,
                                                             receiver, quiz_catalog, app):
    endpoint = register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    run_outbound(app)
    [delivery] = deliveries(client, client_key, endpoint["id"])
    paths = [("get", f"/api/v1/webhooks/{endpoint['id']}"),
             ("get", f"/api/v1/webhooks/{endpoint['id']}/deliveries"),
             ("post", f"/api/v1/webhooks/{endpoint['id']}/deliveries/{delivery['id']}/resend"),
             ("delete", f"/api/v1/webhooks/{endpoint['id']}")]
    for method, path in paths:
        response = getattr(client, method)(path, headers=bearer(other_client_key))
        assert response.status_code == 404 and response.content_type == "application/problem+json", path
    assert client.get("/api/v1/webhooks", headers=bearer(other_client_key)).json == []

    for method, path in [("get", "/api/v1/webhooks"), ("post", "/api/v1/webhooks"), *paths]:
        anonymous = getattr(client, method)(path)
        assert anonymous.status_code == 401 and anonymous.content_type == "application/problem+json", path

    assert [e["id"] for e in client.get("/api/v1/webhooks", headers=bearer(admin_key)).json] == [endpoint["id"]]
    assert deliveries(client, admin_key, endpoint["id"]) == [delivery]
    assert client.delete(paths[-1][1], headers=bearer(admin_key)).status_code == 204
    assert client.get(paths[0][1], headers=bearer(client_key)).json["disabled_at"] is not None


@pytest.mark.parametrize("url", ["ftp://example.com/hook", "not a url", "http://", "https://exa mple.com/",
                                 "https://example.com/" + "a" * 2048])
def test_registration_rejects_malformed_urls(client, client_key, url):
    response = client.post("/api/v1/webhooks", headers=bearer(client_key), json={"url": url})
    assert response.status_code == 422 and response.content_type == "application/problem+json"
    assert [e["field"] for e in response.json["errors"]] == ["json.url"]


def test_production_refuses_private_addresses_and_plain_http(make_app, client_key_for):
    app = make_app(outbound_allowed_networks=())
    client, key = app.test_client(), client_key_for(app)
    for url in ("http://93.184.215.14/hook", "https://127.0.0.1/hook", "https://localhost/hook",
                "https://10.1.2.3/hook", "https://[::1]/hook", "https://169.254.169.254/latest"):
        response = client.post("/api/v1/webhooks", headers=bearer(key), json={"url": url})
        assert response.status_code == 422 and response.content_type == "application/problem+json", url
        assert [e["field"] for e in response.json["errors"]] == ["json.url"], url
    assert client.get("/api/v1/webhooks", headers=bearer(key)).json == []
    public = client.post("/api/v1/webhooks", headers=bearer(key), json={"url": "https://93.184.215.14/hook"})
    assert public.status_code == 201


def test_the_runner_refuses_private_addresses_in_production(app, client, client_key, receiver, quiz_catalog):
    endpoint = register_webhook(client, client_key, receiver)  # allowed when it was registered
    submit(client, client_key, quiz_catalog)
    assert run_outbound(app, outbound_allowed_networks=()) == 1
    assert receiver.requests == []
    [logged] = deliveries(client, client_key, endpoint["id"])
    assert (logged["status"], logged["last_status_code"]) == ("pending", None)
    assert "https" in logged["last_error"]


def test_the_secret_and_signatures_never_reach_the_logs(app, client, client_key, receiver, quiz_catalog, caplog):
    caplog.set_level(logging.DEBUG)
    register_webhook(client, client_key, receiver)
    submit(client, client_key, quiz_catalog)
    receiver.fail_next(1)
    run_outbound(app)
    make_due(app)
    run_outbound(app)
    assert [r.answered for r in receiver.requests] == [500, 200]
    assert "webhook_deliveries" in caplog.text  # the runner did log each try
    secrets = [receiver.secret, receiver.secret.removeprefix("whsec_")]
    signatures = [r.headers["webhook-signature"].removeprefix("v1,") for r in receiver.requests]
    for secret in secrets + signatures:
        assert secret not in caplog.text


def test_a_client_has_at_most_ten_active_endpoints(client, client_key, receiver):
    from service.resources.webhooks import MAX_ACTIVE_ENDPOINTS

    endpoints = [register_webhook(client, client_key, receiver) for _ in range(MAX_ACTIVE_ENDPOINTS)]
    refused = client.post("/api/v1/webhooks", headers=bearer(client_key), json={"url": receiver.url})
    assert refused.status_code == 409 and refused.content_type == "application/problem+json"
    assert client.delete(f"/api/v1/webhooks/{endpoints[0]['id']}", headers=bearer(client_key)).status_code == 204
    assert register_webhook(client, client_key, receiver)["id"]


def test_a_revoked_clients_endpoints_get_no_new_events(app, client, client_key, receiver):
    register_webhook(client, client_key, receiver)
    created = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                          json={"learner": "ada", "code": "class ClampFn: pass"})
    assert created.status_code == 202
    with app.app_context():
        session = db_session()
        session.execute(ApiClient.__table__.update().values(revoked_at=utcnow()))  # the key leaked: revoked
        session.commit()
        job = db_lease.claim(session, Attempt, "test-worker", timedelta(seconds=60), max_tries=3)
        assert db_lease.complete(session, Attempt, job.id, "test-worker",
                                 {"score": 0.25, "correct": False, "result": {"status": "failed", "checks": []}})
    assert run_outbound(app) == 0 and receiver.requests == []
