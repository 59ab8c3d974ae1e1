"""Schemathesis against the app's own OpenAPI document: every operation, valid and invalid data.

Each operation gets generated requests (schemathesis' "positive" and "negative" modes) sent to the
WSGI app in process, as an admin key so they get past authentication. Path parameters are drawn
some of the time from rows seeded first (an exercise, attempts, a run, a webhook endpoint with a
delivery, a failed job, a regrade, an LTI platform and passback), so requests reach the code
behind the lookups and not only its 404s. Each response must be no 5xx, documented (status code,
content type, body schema), and every 4xx/5xx must be an RFC 9457 problem.

The published document answers every operation with a `default` problem response (any error is
a problem+json); the copy fuzzed here drops it, so a status code the service returns must be
documented on the operation itself for status_code_conformance to pass.

The schema is loaded at import (one pytest item per operation and database) rather than through
schemathesis.pytest.from_fixture, whose test wrapper sets Function._nodeid, gone in pytest 9.2.

On PostgreSQL only, the production database: the rest of the suite runs every endpoint on both.
Bounded for CI: few examples per operation, derandomized (a failure reproduces run after run),
and waits (`?wait=`, a run's `wait`) elapse on a fake clock instead of the wall clock.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig
from sqlalchemy import select

from service import create_app
from service.auth import create_client
from service.catalog import load_catalog, sync_catalog
from service.errors import PROBLEM_MIMETYPE
from service.extensions import db_session
from service.models import (
    Attempt,
    AttemptEvent,
    Exercise,
    LtiResourceLink,
    Role,
    ScorePassback,
)
from service.services import attempts as attempt_service
from tests.conftest import EXERCISES_DIR, _clear
from tests.helpers import bearer

pytestmark = pytest.mark.backends("postgresql")

QUIZ = "backward-none-for-bounds"  # single_choice; "none-each" is right
CODE = "clamp-function"
LEARNER = "ada"
ADMIN_NAME = "admin"
HOOK_URL = "http://127.0.0.1:9/hook"  # testing allows private addresses; nothing is sent in the test
# Far above what the fuzzer sends: the limits themselves are tested in test_limits.py.
NO_RATE_LIMITS = {"attempts_rate_limit": "100000/minute", "runs_rate_limit": "100000/minute"}
EXAMPLES_PER_OPERATION = 25
# How often a path parameter is a seeded row's instead of a generated value.
REAL_ROW_PROBABILITY = 0.5


class FakeClock:
    """`time` for service.services.attempts: sleeping advances the clock at once, so a request
    that waits for a job no worker will grade answers without the wall-clock wait."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def sleep(self, seconds: float) -> None:
        self.offset += seconds


def _seed(app, key: str) -> dict[str, object]:
    """Rows for the path parameters to hit, made through the API where it can make them."""
    client = app.test_client()
    auth = bearer(key)

    def ok(response, *statuses):
        assert response.status_code in statuses, (response.status_code, response.get_data(as_text=True))
        return response.json

    # The endpoint first, so the graded quiz attempt's event makes a delivery to it.
    endpoint = ok(client.post("/api/v1/webhooks", headers=auth,
                              json={"url": HOOK_URL, "description": "fuzz"}), 201)
    quiz = ok(client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=auth,
                          json={"learner": LEARNER, "answer": "none-each"}), 201)
    code = ok(client.post(f"/api/v1/exercises/{CODE}/attempts", headers=auth,
                          json={"learner": LEARNER, "code": "class ClampFn: pass"}), 202)
    failed = ok(client.post(f"/api/v1/exercises/{CODE}/attempts", headers=auth,
                            json={"learner": LEARNER, "code": "raise SystemExit"}), 202)
    run = ok(client.post("/api/v1/runs", headers=auth, json={"code": "print(1)", "wait": 0}), 202)
    regrade = ok(client.post("/api/v1/admin/regrades", headers=auth, json={"attempt": quiz["id"]}), 202)
    platform = ok(client.post("/api/v1/admin/lti/platforms", headers=auth, json={
        "name": "Moodle", "issuer": "https://lms.example", "client_id": "tool", "deployment_ids": ["1"],
        "auth_login_url": "https://lms.example/auth", "auth_token_url": "https://lms.example/token",
        "jwks_url": "https://lms.example/jwks"}), 201)
    deliveries = ok(client.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries", headers=auth), 200)
    with app.app_context():
        session = db_session()
        # What the grader stores when it gives up: a failed job for the admin retry to find.
        session.get(Attempt, uuid.UUID(failed["id"])).status = "error"
        graded = session.scalar(select(AttemptEvent).where(AttemptEvent.attempt_id == uuid.UUID(quiz["id"])))
        exercise = session.scalar(select(Exercise).where(Exercise.slug == QUIZ))
        link = LtiResourceLink(platform_id=platform["id"], deployment_id="1", resource_link_id="rl-1",
                               exercise_id=exercise.id, lineitem_url="https://lms.example/li/1")
        session.add(link)
        session.flush()
        passback = ScorePassback(attempt_id=graded.attempt_id, event_id=graded.id, link_id=link.id,
                                 created_at=graded.created_at, next_attempt_at=graded.created_at)
        session.add(passback)
        session.commit()
        passback_id = passback.id
    [delivery] = deliveries
    return {"quiz_attempt": quiz["id"], "code_attempt": code["id"], "failed_attempt": failed["id"], "run": run["id"],
            "regrade": regrade["id"], "endpoint": endpoint["id"], "delivery": delivery["id"],
            "platform": platform["id"], "passback": passback_id}


def _without_default_responses(document: dict) -> dict:
    document = copy.deepcopy(document)
    for operations in document["paths"].values():
        for operation in operations.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("default", None)
    return document


# Rows the seed makes, by the parameters that name them. Their ids are only known once seeded, so
# the generator draws a stand-in (a valid value of the parameter's type) that the test swaps for
# the row's real id before sending.
SEEDED_ROWS = {
    "attempt_id": ("quiz_attempt", "code_attempt", "failed_attempt"),
    "attempt": ("quiz_attempt", "code_attempt"),
    "job_id": ("failed_attempt",),
    "run_id": ("run",),
    "regrade_id": ("regrade",),
    "endpoint_id": ("endpoint",),
    "delivery_id": ("delivery",),
    "platform_id": ("platform",),
    "passback_id": ("passback",),
}
INTEGER_IDS = {"endpoint", "delivery", "platform", "passback"}
ROW_NAMES = sorted({row for rows in SEEDED_ROWS.values() for row in rows})
STAND_INS = {row: 900_000 + i if row in INTEGER_IDS else str(uuid.UUID(int=i + 1, version=4))
             for i, row in enumerate(ROW_NAMES)}
# Values that exist as they are: a slug, a learner, a client name.
KNOWN_VALUES = {"slug": [QUIZ, CODE], "exercise": [QUIZ, CODE], "learner": [LEARNER], "client": [ADMIN_NAME]}
# Body fields a random string rarely gets right, so that creations succeed some of the time too.
BODY_VALUES = {"answer": ["none-each"], "url": [HOOK_URL], "auth_login_url": [HOOK_URL],
               "auth_token_url": [HOOK_URL], "jwks_url": [HOOK_URL]}
BODY_FIELDS = ("learner", "exercise", "attempt", *BODY_VALUES)


def _fuzz_config() -> SchemathesisConfig:
    values = {name: [STAND_INS[row] for row in rows] for name, rows in SEEDED_ROWS.items()} | KNOWN_VALUES | BODY_VALUES
    bound = {f"{location}.{name}": {"dictionary": name, "probability": REAL_ROW_PROBABILITY}
             for name in values for location in ("path", "query")}
    bound |= {f"body.{name}": {"dictionary": name, "probability": REAL_ROW_PROBABILITY} for name in BODY_FIELDS}
    return SchemathesisConfig.from_dict({
        "generation": {"mode": "all", "max-examples": EXAMPLES_PER_OPERATION, "deterministic": True,
                       # Authentication is the authorization matrix's subject; here every request is an admin's.
                       "with-security-parameters": False},
        "dictionaries": {name: {"values": entries} for name, entries in values.items()},
        "parameters": bound,
    })


def _load_schema():
    # The document does not depend on the database: an app on an unused in-memory one serves it.
    app = create_app({"database_url": "sqlite://", "env": "testing"})
    document = app.test_client().get("/api/v1/openapi.json").json
    return schemathesis.openapi.from_dict(_without_default_responses(document), config=_fuzz_config())


class SeededApi:
    def __init__(self, app, key: str, rows: dict[str, object]) -> None:
        self.app = app
        self.headers = bearer(key)
        self.real_ids = {STAND_INS[name]: value for name, value in rows.items()}

    def use_real_ids(self, case) -> None:
        body = case.body if isinstance(case.body, dict) else None
        for container in (case.path_parameters, case.query, body):
            for name, value in (container or {}).items():
                if isinstance(value, (str, int)) and value in self.real_ids:
                    container[name] = self.real_ids[value]


@pytest.fixture(scope="module")
def seeded_api(database_url: str) -> Iterator[SeededApi]:
    """One seeded app per database for the whole module: seeding costs a second or two, too much
    to repeat for each of the 44 operations. Operations run in document order on it, so a later
    one sees what earlier ones did (a deleted webhook endpoint, an unpublished exercise), the
    same way each run."""
    app = create_app({"database_url": database_url, "env": "testing", **NO_RATE_LIMITS})
    exercises, problems = load_catalog(EXERCISES_DIR)
    assert not problems, problems
    with app.app_context():
        sync_catalog(db_session(), exercises)
        _client, key = create_client(db_session(), ADMIN_NAME, Role.ADMIN)
        db_session().commit()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(attempt_service, "time", FakeClock())
        try:
            yield SeededApi(app, key, _seed(app, key))
        finally:
            _clear(app)


def problem_details(ctx, response, case):
    """Every 4xx and 5xx is an RFC 9457 problem: application/problem+json with type, title, status."""
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.split(";")[0].strip() == PROBLEM_MIMETYPE, f"{response.status_code} sent as {content_type!r}"
    body = response.json()
    assert isinstance(body, dict), body
    missing = {"type", "title", "status"} - body.keys()
    assert not missing, f"problem without {sorted(missing)}: {body}"
    assert body["status"] == response.status_code, body


schema = _load_schema()


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 # one seeded database per operation, shared by its examples (see seeded_api)
                                 HealthCheck.function_scoped_fixture])
def test_every_operation_answers_as_documented(case, seeded_api):
    seeded_api.use_real_ids(case)
    case.call_and_validate(app=seeded_api.app, headers=seeded_api.headers,
                           checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                                   response_schema_conformance, problem_details])
