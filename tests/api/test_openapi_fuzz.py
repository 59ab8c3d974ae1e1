"""Schemathesis against the app's own OpenAPI document: every operation, valid and invalid data.

Each operation gets generated requests (schemathesis' "positive" and "negative" modes) sent to the
WSGI app in process, as an admin key so they get past authentication. Path parameters are drawn
some of the time from rows seeded first (an exercise, attempts, a run, a webhook endpoint with a
delivery, a failed job, a regrade, an LTI platform and passback), so requests reach the code
behind the lookups and not only its 404s.

Every check schemathesis has is on (`--checks all`), and one of ours: no 5xx; the status code,
content type, headers and body documented; a request the document allows is accepted
(positive_data_acceptance) and one it forbids is refused (negative_data_rejection), so the
document says what the server enforces; a missing required header refused; an undocumented method
answered 405 with an Allow header that names the documented ones; authentication enforced (a
probe without the key, and one with a wrong key, must be refused); and every 4xx/5xx an RFC 9457
problem. use_after_free, ensure_resource_availability and object_level_authorization judge
sequences of calls and run in schemathesis' stateful phase only: here they are on and find nothing
to judge. A schema-valid request may still be refused for what no JSON Schema can say (the stored
data, the credential, a rule between two query parameters): STORED_DATA_RULES lists each such
refusal, with why, and any other refusal of valid data fails.

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
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import RejectedPositiveData, positive_data_acceptance
from sqlalchemy import select

from service import create_app
from service.auth import create_client
from service.catalog import load_catalog, sync_catalog
from service.errors import INVALID_ANSWER, PROBLEM_MIMETYPE, VALIDATION_ERROR
from service.extensions import db_session
from service.grading.spec import MAX_ELEMENTS
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


# Refusals of schema-valid requests for what a JSON Schema cannot say, by operation. A refusal passes
# positive_data_acceptance only when each error it names (its field, and its message where one is
# given) is one of its operation's rules. Generated valid data keeps each field's own schema, so
# such an error can only come from the rule named.
@dataclass(frozen=True)
class Rule:
    status: int
    type: str
    field: str  # a regular expression, matched in full
    why: str
    message: str = ".*"  # likewise

    def covers(self, status: int, problem_type: str | None, error: dict) -> bool:
        return (status, problem_type) == (self.status, self.type) \
            and re.fullmatch(self.field, error.get("field") or "") is not None \
            and re.fullmatch(self.message, error.get("message") or "", re.DOTALL) is not None


BETWEEN_PARAMETERS = "OpenAPI has no rule between two parameters"
BETWEEN_FIELDS = "JSON Schema compares no two values"
# The rules' two forms of attempt penalty exclude each other: a "not" in the component (tried) makes
# schemathesis take a nested body of any type as valid.
ONE_PENALTY_FORM = "attempt_penalty or attempt_maxima, not both: a rule between two fields"
# What an attempt's body and a learner's query take depends on the exercise and the credential.
SUBMISSION_RULES = [
    Rule(422, INVALID_ANSWER, r"json\.answer", "whether an answer fits depends on the exercise the slug "
         "names: its kind (quiz or code) and its choices are rows, not schema"),
    Rule(422, VALIDATION_ERROR, r"json\.learner", "learner is required with an API key and implied by a "
         "learner token: a body's schema cannot depend on the credential"),
]
LEARNER_QUERY_RULES = [
    Rule(422, VALIDATION_ERROR, r"query\.learner", "learner is required with an API key and implied by a "
         "learner token: a query's schema cannot depend on the credential"),
]
STORED_DATA_RULES: dict[str, list[Rule]] = {
    "POST /api/v1/exercises/{slug}/attempts": SUBMISSION_RULES,
    "GET /api/v1/exercises/{slug}/standing": LEARNER_QUERY_RULES,
    # A course's URLs (issue 34) take what the catalog's take.
    "POST /api/v1/courses/{course_id}/exercises/{slug}/attempts": SUBMISSION_RULES,
    "GET /api/v1/courses/{course_id}/exercises/{slug}/attempts": LEARNER_QUERY_RULES,
    "GET /api/v1/courses/{course_id}/exercises/{slug}/standing": LEARNER_QUERY_RULES,
    "GET /api/v1/admin/attempts": [
        Rule(400, VALIDATION_ERROR, r"query\.cursor", "a cursor is opaque: only a next_cursor this search "
             "returned, for the same sort, is taken"),
        Rule(422, VALIDATION_ERROR, r"query\.score_min", f"score_min <= score_max: {BETWEEN_PARAMETERS}"),
        Rule(422, VALIDATION_ERROR, r"query\.since", f"since <= until: {BETWEEN_PARAMETERS}"),
    ],
    "GET /api/v1/admin/attempts.csv": [
        Rule(422, VALIDATION_ERROR, r"query\.score_min", f"score_min <= score_max: {BETWEEN_PARAMETERS}"),
        Rule(422, VALIDATION_ERROR, r"query\.since", f"since <= until: {BETWEEN_PARAMETERS}"),
    ],
    "POST /api/v1/learner-tokens": [
        Rule(422, VALIDATION_ERROR, r"json\.exercises\[\d+\]", "a token's exercises must be published ones: "
             "stored data", message=r"no published exercise .*"),
        Rule(422, VALIDATION_ERROR, r"json\.course", "a token's course must be one of the caller's: stored data",
             message=r"no such course of this client"),
        Rule(422, VALIDATION_ERROR, r"json\.client", "an admin key names the client of a token, another key may "
             "not, and the client named must be a stored client of learners: a body's schema cannot depend on the "
             "credential", message=r"required with an admin key|not with this key|no such client of learners"),
    ],
    "POST /api/v1/webhooks": [
        Rule(422, VALIDATION_ERROR, r"json\.url", "whether a URL's host resolves, and only to addresses the outbound "
             "policy allows, is the network's answer (DNS), not the document's"),
    ],
    "GET /api/v1/admin/gradebook.csv": [
        Rule(422, VALIDATION_ERROR, r"query\.exercise", "a column must name an exercise that exists: stored data"),
    ],
    # The input specs are checked by service/grading/spec.py (the rules of an exercise file's
    # [[code.inputs]]); the document states each type's fields and bounds, not these.
    "POST /api/v1/runs": [
        Rule(422, VALIDATION_ERROR, r"json\.exercise", "only a code exercise runs: its kind is stored data",
             message=r"not a code exercise"),
        Rule(422, VALIDATION_ERROR, r"json\.inputs\[\d+\]\.range", "low < high: JSON Schema compares no two values",
             message=r"must be \[low, high\] with low < high"),
        Rule(422, VALIDATION_ERROR, r"json\.inputs\[\d+\]\.value", "a rectangular nested list: no schema "
             "compares the lengths of sibling lists", message=r"must be a number or a rectangular nested list.*"),
        Rule(422, VALIDATION_ERROR, r"json\.inputs\[\d+\]\.shape", "the shape a value has, and the count of "
             "elements a shape makes (a product), are computed", message=r"does not match the value's shape.*"
             rf"|at most {MAX_ELEMENTS} elements"),
        Rule(422, VALIDATION_ERROR, r"json\.inputs\[\d+\]\.avoid_margin", "the avoided zones against the "
             "range's width: arithmetic", message=r"the avoided zones cover too much of the range"),
        Rule(422, VALIDATION_ERROR, r"json\.inputs\[\d+\]\.cover", "each interval's low < high, inside the "
             "range, wider than the avoided zones, and no more of them than the shape's elements (a product): "
             f"{BETWEEN_FIELDS}", message=r"must be a list of \[low, high\] pairs with low < high|each interval "
             r"must lie inside the range.*|an interval is too narrow for the avoided zones|more intervals than .*"),
        Rule(422, VALIDATION_ERROR, r"json\.inputs\[\d+\]\.(shape|value|range)", "an integer as written: "
             "spec.py refuses 7.0 where it takes an integer (as in an exercise's TOML); JSON Schema's integer "
             "includes 7.0, and no schema can tell the two apart",
             message=r"must be a list of positive integers.*|must be a list of at most \d+ integers|must be an "
                     r"integer|integer inputs take an integer range|an int\d+ tensor takes integers"),
    ],
}


def _rules_layer_refusals(field: str) -> list[Rule]:
    """A rules layer's two-field refusals, its fields under `field` (json or json.rules)."""
    return [Rule(422, VALIDATION_ERROR, rf"{field}\.available_from", f"available_from < due_at: {BETWEEN_FIELDS}"),
            Rule(422, VALIDATION_ERROR, rf"{field}\.attempt_maxima", ONE_PENALTY_FORM)]


for _scope in ("/api/v1/admin/links/{link_id}", "/api/v1/admin/links/{link_id}/exercises/{slug}",
               "/api/v1/admin/exercises/{slug}/clients/{client_id}"):
    STORED_DATA_RULES[f"PUT {_scope}/rules"] = _rules_layer_refusals(r"json")
    STORED_DATA_RULES[f"PUT {_scope}/extensions/{{learner}}"] = _rules_layer_refusals(r"json\.rules")


def _refused_for_stored_data(case, response) -> bool:
    rules = STORED_DATA_RULES.get(case.operation.label, [])
    if not rules or response.headers.get("content-type", [""])[0].split(";")[0].strip() != PROBLEM_MIMETYPE:
        return False
    body = response.json()
    errors = body.get("errors") or [{}]
    return all(any(rule.covers(response.status_code, body.get("type"), error) for rule in rules) for error in errors)


def positive_data_acceptance_beside_stored_data(ctx, response, case):
    """schemathesis' positive_data_acceptance, but for the refusals STORED_DATA_RULES names."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if not _refused_for_stored_data(case, response):
            raise
        return None


load_all_checks()
ALL_CHECKS = [positive_data_acceptance_beside_stored_data if check is positive_data_acceptance else check
              for check in CHECKS.get_all()] + [problem_details]
schema = _load_schema()


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 # one seeded database per operation, shared by its examples (see seeded_api)
                                 HealthCheck.function_scoped_fixture])
def test_every_operation_answers_as_documented(case, seeded_api):
    seeded_api.use_real_ids(case)
    # The checks that send requests of their own (ignored_auth's probes without the key) send them
    # through the schema's transport: the app's, not an HTTP client with no server to reach.
    case.operation.schema.app = seeded_api.app
    case.call_and_validate(app=seeded_api.app, headers=seeded_api.headers, checks=ALL_CHECKS)
