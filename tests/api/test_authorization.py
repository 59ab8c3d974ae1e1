"""The authorization matrix: every endpoint of the app against every kind of caller.

MATRIX has a row per endpoint (a method, and a path filled with seeded ids) naming the policy
that says which callers get in; an endpoint that reads or changes a course's data has a row more for
another course's (issue 18: an LMS's courses share its API client, and a launch of one course must
reach nothing of another's, through any endpoint). The policies spell out, caller by caller, the status the
service must answer, as the README describes the roles: they are written by hand, never
derived from the code under test. An endpoint of `app.url_map` with no row fails the test.

Rows run in order, each row's refused callers first: a refused request must change no row of
the database. All the while every log record (root logger, DEBUG) is captured, and no key,
learner token or metrics token may appear in any of them, in whatever format the logs are.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import select, update

from service.config import Settings
from service.extensions import db_session
from service.jobs.worker import Worker
from service.learner_tokens import (
    INSTRUCTOR,
    LEARNER,
    LearnerScope,
    issue_learner_token,
)
from service.models import (
    ApiClient,
    AttemptStatus,
    Base,
    Course,
    Exercise,
    LtiPlatform,
    LtiResourceLink,
    Role,
    Run,
    ScorePassback,
    WebhookDelivery,
)
from service.models.base import utcnow
from service.services.courses import make_key
from service.staff_sessions import mint_staff_session
from tests.helpers import bearer

QUIZ = "backward-none-for-bounds"  # single choice; "none-each" is right
RIGHT = "none-each"
TOGGLED = "squarefn-forward-value"
C2_QUIZ = "c2-own-quiz"  # course c2's own exercise (issue 34), a copy of QUIZ (seed: _course_exercise)  # the exercise the matrix unpublishes and publishes again
METRICS_TOKEN = "metrics-" + secrets.token_urlsafe(24)
LAUNCH_URL = "http://localhost/lti/launch"
GIT_HOST = "git.example.edu"  # a host courses may sync from (GIT_ALLOWED_HOSTS); never fetched here

# --- callers ----------------------------------------------------------------------------------
# Client A ("lms-one") owns every seeded attempt, run and webhook; B ("lms-two") owns none of them.
CALLERS = (
    "none",           # no Authorization header
    "wrong_key",      # gq_… of the right shape that no client has
    "revoked_key",    # an admin's key, revoked
    "revoked_token",  # learner token of ada at an LMS platform since disabled (which revokes its client)
    "metrics_token",  # METRICS_TOKEN: Prometheus's bearer, for /metrics only
    "other_client",   # B's key
    "bob_token",      # learner token of A's learner bob at QUIZ
    "b_ada_token",    # learner token of B's learner ada at QUIZ: not A's ada (learner ids belong to a client)
    "ada_token",      # learner token of A's learner ada at QUIZ: the seeded attempt is hers
    "teacher_token",  # an LTI instructor's learner token in A at QUIZ: reads every learner's attempts there
    "client",         # A's key (Role.CLIENT)
    "instructor",     # an instructor's key (Role.INSTRUCTOR)
    "admin",          # an admin's key (Role.ADMIN)
    # Course-scoped: LTI launches' tokens at the test LMS, whose courses c1 and c2 share its API client.
    # c2's learner bea made a seeded attempt and a run; bea is in c1 too (a platform's sub is the same
    # in all its courses).
    "c1_teacher",     # an instructor's launch in course c1
    "c1_bea",         # bea's launch in course c1
    "c2_teacher",     # an instructor's launch in course c2, through another link of c2 than bea's
    "c2_bea",         # bea's launch in course c2: the seeded course-c2 attempt and run are hers
    # A course's staff: the dashboard session an instructor's launch opens (course c1, c2), and a course key of c1.
    "c1_staff",
    "c2_staff",
    "c1_key",
    # Issue 33: A's ada, by a token a key of A's own course issued (it reads and spends nothing of hers made
    # outside that course: not the seeded attempt nor run, made in none), and by a token of an admin's client
    # (issued before an admin key had to name the client; it read every client's data, and is refused now).
    "course_ada",
    "admin_ada",
)
# Callers with no right to A's learners' attempts, A's runs or A's webhooks: a 2xx they get
# must not show any of them.
STRANGERS = ("none", "wrong_key", "revoked_key", "revoked_token", "metrics_token", "other_client", "bob_token",
             "b_ada_token", "c1_teacher", "c1_bea", "c2_teacher", "c2_bea", "c1_staff", "c2_staff", "c1_key",
             "course_ada", "admin_ada")
# Callers with no right to course c2's attempts: every one but c2's own launches and the staff keys
# (an instructor's or admin's key has no course: it reads every course, as before). A 2xx they get
# must not show any of them.
C2_STRANGERS = ("none", "wrong_key", "revoked_key", "revoked_token", "metrics_token", "other_client", "bob_token",
                "b_ada_token", "ada_token", "teacher_token", "client", "c1_teacher", "c1_bea", "c1_staff", "c1_key",
                "course_ada", "admin_ada")

OK = 0  # the row's own success status


def policy(*statuses: int) -> dict[str, int]:
    assert len(statuses) == len(CALLERS)
    return dict(zip(CALLERS, statuses))


# --- policies: the status each caller gets ------------------------------------------------------
#                           none wrng rvk  rtok metr othr bob  bada ada  tch  clnt inst admn c1t  c1b  c2t  c2b  c1s  c2s  c1k  crs  adt
PUBLIC             = policy(OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK)
# Prometheus's token and nothing else: no API key, not even an admin's, reads the metrics.
METRICS_ONLY       = policy(401, 401, 401, 401, OK,  401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401)
# An LMS's signed request (id_token, or the picker's token) is the credential: no key stands in for it.
PLATFORM_ONLY      = policy(401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 401)
# Any API key; learner tokens are for a learner's attempts only.
ANY_KEY            = policy(401, 401, 401, 401, 401, OK,  403, 403, 403, 403, OK,  OK,  OK,  403, 403, 403, 403, 403, 403, 403, 403, 401)
# A learner token, for itself (renewing it); a key has nothing to renew.
LEARNER_TOKENS     = policy(401, 401, 401, 401, 401, 403, OK,  OK,  OK,  OK,  403, 403, 403, OK,  OK,  OK,  OK,  403, 403, 403, OK,  401)
# A's runs and webhooks: A and admins; another client (an instructor's key too) is told it does not exist.
OWNER_OR_ADMIN     = policy(401, 401, 401, 401, 401, 404, 403, 403, 403, 403, OK,  404, OK,  403, 403, 403, 403, 403, 403, 403, 403, 401)
# Any valid key, learner token or course staff (a learner's runs are their own; a course's staff's, for nobody).
ANY_CALLER         = policy(401, 401, 401, 401, 401, OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  401)
# Ada's run (made with her token): she, A and admins; any other learner or client is told it does not exist.
ADAS_RUN           = policy(401, 401, 401, 401, 401, 404, 404, 404, OK,  404, OK,  404, OK,  404, 404, 404, 404, 404, 404, 404, 404, 401)
# Submitting for A's ada: any key (for its own learner ada), her token, B's ada's token (B's ada).
SUBMIT_FOR_ADA     = policy(401, 401, 401, 401, 401, OK,  403, OK,  OK,  403, OK,  OK,  OK,  403, 403, 403, 403, 403, 403, 403, OK,  401)
# A's ada's attempt: A, admins, her token and the token of an instructor of her exercise.
ADAS_ATTEMPT       = policy(401, 401, 401, 401, 401, 404, 404, 404, OK,  OK,  OK,  404, OK,  404, 404, 404, 404, 403, 403, 403, 404, 401)
# Learner ids belong to a client: every key reads its own learner ada's history (B's ada has none of A's).
ADAS_HISTORY       = policy(401, 401, 401, 401, 401, OK,  403, OK,  OK,  OK,  OK,  OK,  OK,  OK,  403, OK,  403, 403, 403, 403, OK,  401)
# The assignment an LMS launch's token was issued for (issue 18): the tokens of a launch (c1, c2); a token
# from POST /learner-tokens belongs to none (404); a key is no learner (403).
LAUNCHED_TOKENS    = policy(401, 401, 401, 401, 401, 403, 404, 404, 404, 404, 403, 403, 403, OK,  OK,  OK,  OK,  403, 403, 403, 404, 401)
# The grading dashboard's API: instructors' and admins' keys, and a course's staff, who see their course alone
# (a list or export answers 200 with none of another course's rows: C2_STRANGERS, STRANGERS).
STAFF              = policy(401, 401, 401, 401, 401, 403, 403, 403, 403, 403, 403, OK,  OK,  403, 403, 403, 403, OK,  OK,  OK,  403, 401)
# Data of no course (A's ada's attempt, through the REST API; a regrade of it): staff keys; a course's staff are
# told it does not exist.
NO_COURSE_STAFF    = policy(401, 401, 401, 401, 401, 403, 403, 403, 403, 403, 403, OK,  OK,  403, 403, 403, 403, 404, 404, 404, 403, 401)
# Course c2's data in the staff API: staff keys and c2's staff; c1's staff are told it does not exist.
C2_STAFF           = policy(401, 401, 401, 401, 401, 403, 403, 403, 403, 403, 403, OK,  OK,  403, 403, 403, 403, 404, OK,  404, 403, 401)
# Beyond one course (the catalog, a client's rules): staff keys only.
EVERY_COURSE_STAFF = policy(401, 401, 401, 401, 401, 403, 403, 403, 403, 403, 403, OK,  OK,  403, 403, 403, 403, 403, 403, 403, 403, 401)
# Course c2's keys: staff keys and c2's staff session; another client's key is told the course does not exist; a
# course key never makes keys.
C2_KEYS            = policy(401, 401, 401, 401, 401, 404, 403, 403, 403, 403, 404, OK,  OK,  403, 403, 403, 403, 404, OK,  403, 403, 401)
# Course c2's own exercise (issue 34) read at the course's URL: its staff (the staff view); its learners' tokens
# read the learner's detail once published (c2's launches here are for QUIZ and C2_QUIZ); another course's
# callers, and learner tokens of no course, are told it does not exist; a key that is not staff's is refused.
C2_EXERCISE        = policy(401, 401, 401, 401, 401, 403, 404, 404, 404, 404, 403, OK,  OK,  404, 404, OK,  OK,  404, OK,  404, 404, 401)
# The service's own setup (LTI platforms and keys, failed jobs): admins only.
ADMIN              = policy(401, 401, 401, 401, 401, 403, 403, 403, 403, 403, 403, 403, OK,  403, 403, 403, 403, 403, 403, 403, 403, 401)
# Course c2's data (issue 18): a launch of course c1 reads none of it, bea's own launch from c1 included.
# bea's attempt in c2: her launch in c2, c2's instructor (through any link of c2) and admins.
C2_ATTEMPT         = policy(401, 401, 401, 401, 401, 404, 404, 404, 404, 404, 404, 404, OK,  404, 404, OK,  OK,  403, 403, 403, 404, 401)
# bea's history: every key its own bea's (none of the platform's), a token of bea or an instructor's; from
# course c1 it shows none of c2's attempts (C2_STRANGERS), with or without ?exercise=.
BEAS_HISTORY       = policy(401, 401, 401, 401, 401, OK,  403, 403, 403, OK,  OK,  OK,  OK,  OK,  OK,  OK,  OK,  403, 403, 403, 403, 401)
# Submitting for bea with the Idempotency-Key her c2 launch used: a key for its own bea, a token of bea. Only
# her c2 launch gets its stored answer back; from c1 she makes a new attempt (the key is a course's).
SUBMIT_FOR_BEA     = policy(401, 401, 401, 401, 401, OK,  403, 403, 403, 403, OK,  OK,  OK,  403, OK,  403, OK,  403, 403, 403, 403, 401)
# bea's run, made with her c2 launch's token: a run belongs to its learner in the course of the token that made
# it, as an attempt does (issue 33: its runs count against that course's max_runs), so her c1 launch reads it no
# more than an instructor's launch does.
BEAS_RUN           = policy(401, 401, 401, 401, 401, 404, 404, 404, 404, 404, 404, 404, OK,  404, 404, 404, OK,  404, 404, 404, 404, 401)
# A run of c2's staff (issue 34: it counts for nobody): c2's staff and admins; anyone else is told it does not exist.
C2_STAFF_RUN       = policy(401, 401, 401, 401, 401, 404, 404, 404, 404, 404, 404, 404, OK,  404, 404, 404, 404, 404, OK,  404, 404, 401)
# Course c2's own exercise at its course URL (issue 34), for bea: her c2 launch and staff keys (naming her); from c1
# the exercise does not exist; a token for another learner, or not naming it, and course staff are refused; A's
# and B's keys, whose client c2 is not, are told it does not exist.
C2_EXERCISE_FOR_BEA = policy(401, 401, 401, 401, 401, 404, 403, 403, 403, 403, 404, OK,  OK,  403, 404, 403, OK,  403, 403, 403, 403, 401)
# bea's attempts at it: an instructor's c2 launch too.
C2_EXERCISE_HISTORY = policy(401, 401, 401, 401, 401, 404, 403, 403, 403, 403, 404, OK,  OK,  404, 404, OK,  OK,  403, 403, 403, 403, 401)
# Issuing a learner token: any key for its own client's learners; an admin key names the client (issue 33: its
# own client reads every client's data), so without `client` it is told to (422).
ISSUE_TOKEN        = policy(401, 401, 401, 401, 401, OK,  403, 403, 403, 403, OK,  OK,  422, 403, 403, 403, 403, 403, 403, 403, 403, 401)
# Issuing a token for A's learners, naming A: A's key and an admin's; another key may not name a client (422).
ISSUE_FOR_A        = policy(401, 401, 401, 401, 401, 422, 403, 403, 403, 403, OK,  422, OK,  403, 403, 403, 403, 403, 403, 403, 403, 401)


@dataclass(frozen=True)
class Id:
    """A seeded row's id as a JSON number (a path or string names it "{name}")."""

    name: str


@dataclass(frozen=True)
class Row:
    method: str
    path: str  # {name}: a seeded id (Seeded.ids)
    who: dict[str, int]
    ok: int
    json: Any = None
    form: dict[str, Any] | None = None
    query: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # The one caller whose request repeats the seeded one with its Idempotency-Key (it alone may be replayed).
    replayed_for: str = "client"


# A's seeded attempt was sent with this key: a caller other than A sending it again must get an
# attempt of its own, never A's stored answer.
IDEMPOTENCY = {"Idempotency-Key": "matrix-submission"}
# bea's seeded attempt in course c2 was sent with this key, by her c2 launch.
C2_IDEMPOTENCY = {"Idempotency-Key": "matrix-course-c2"}
LOGIN = {"iss": "{lms_issuer}", "client_id": "{lms_client_id}", "login_hint": "user-1", "target_link_uri": LAUNCH_URL}
NEW_PLATFORM = {"name": "Another LMS", "issuer": "https://another-lms.example", "client_id": "tool",
                "deployment_ids": ["d1"], "auth_login_url": "https://another-lms.example/auth",
                "auth_token_url": "https://another-lms.example/token", "jwks_url": "https://another-lms.example/jwks"}

MATRIX = [
    # Probes, docs (the page and its built files) and the dashboard's static files (the pages hold no data:
    # the dashboard calls the admin API with a key).
    Row("GET",    "/healthz",                                                PUBLIC,         200),
    Row("GET",    "/readyz",                                                 PUBLIC,         200),
    Row("GET",    "/api/v1/openapi.json",                                    PUBLIC,         200),
    Row("GET",    "/api/docs",                                               PUBLIC,         200),
    Row("GET",    "/vendor/api-docs.js",                                     PUBLIC,         200),
    Row("GET",    "/admin",                                                  PUBLIC,         200),
    Row("GET",    "/admin/",                                                 PUBLIC,         200),
    Row("GET",    "/admin/app.js",                                           PUBLIC,         200),
    Row("GET",    "/admin/vocabulary.js",                                    PUBLIC,         200),
    # The learner's pages: the lesson and an exercise (public, as the catalog is; the page acts with a
    # learner token it holds in the browser, never with a cookie).
    Row("GET",    "/learn",                                                  PUBLIC,         200),
    Row("GET",    "/learn/{quiz}",                                           PUBLIC,         200),
    Row("GET",    "/learn/assignment",                                       PUBLIC,         200),
    # A preview's page (issue 34): a shell holding nothing; its script reads the version with the staff session.
    Row("GET",    "/learn/preview/{c2_course}/{c2_quiz}/1",                  PUBLIC,         200),
    # With METRICS_TOKEN set, as production needs it (without it: open in development, 404 in
    # production; tests/api/test_metrics.py).
    Row("GET",    "/metrics",                                                METRICS_ONLY,   200),
    # LTI: the LMS's side. Login initiation needs a registered issuer, no key; a launch needs the
    # platform's id_token and a deep-link return the picker's signed token (with them, no key:
    # tests/lti/test_lti.py), so here, without them, every caller is refused.
    Row("GET",    "/lti/jwks",                                               PUBLIC,         200),
    Row("GET",    "/lti/storage.js",                                         PUBLIC,         200),
    Row("GET",    "/lti/picker.css",                                         PUBLIC,         200),
    Row("GET",    "/lti/login",                                              PUBLIC,         302, query=LOGIN),
    Row("POST",   "/lti/login",                                              PUBLIC,         302, form=LOGIN),
    Row("POST",   "/lti/launch",                                             PLATFORM_ONLY,  401, form={"state": "x"}),
    Row("POST",   "/lti/deep-link",                                          PLATFORM_ONLY,  401, form={"exercise": QUIZ}),
    # Dynamic registration: the code of an admin's registration link is the credential, no key stands in for
    # it (with one, against the test LMS: tests/lti/test_dynamic_registration.py).
    Row("GET",    "/lti/register",                                           PUBLIC,         403,
        query={"code": "not-a-code", "openid_configuration": "http://127.0.0.1:9/.well-known/openid-configuration"}),
    # The catalog, attempts and learners.
    Row("GET",    "/api/v1/exercises",                                       PUBLIC,         200),
    Row("GET",    "/api/v1/exercises/{quiz}",                                PUBLIC,         200),
    Row("GET",    "/api/v1/rules",                                           PUBLIC,         200),
    Row("GET",    "/api/v1/terms",                                           PUBLIC,         200),
    Row("POST",   "/api/v1/exercises/{quiz}/attempts",                       SUBMIT_FOR_ADA, 201,
        json={"learner": "ada", "answer": RIGHT}, headers=IDEMPOTENCY),
    Row("GET",    "/api/v1/exercises/{quiz}/standing",                       SUBMIT_FOR_ADA, 200,
        query={"learner": "ada"}),
    Row("GET",    "/api/v1/attempts/{ada_attempt}",                          ADAS_ATTEMPT,   200),
    Row("GET",    "/api/v1/learners/ada/attempts",                           ADAS_HISTORY,   200),
    # Course c2's data, against a launch of course c1 (a platform's courses share its API client).
    Row("POST",   "/api/v1/exercises/{quiz}/attempts",                       SUBMIT_FOR_BEA, 201,
        json={"learner": "bea", "answer": RIGHT}, headers=C2_IDEMPOTENCY, replayed_for="c2_bea"),
    Row("GET",    "/api/v1/attempts/{c2_attempt}",                           C2_ATTEMPT,     200),
    Row("GET",    "/api/v1/attempts/{c2_attempt}",                           C2_ATTEMPT,     200, query={"wait": 1}),
    Row("GET",    "/api/v1/learners/bea/attempts",                           BEAS_HISTORY,   200),
    Row("GET",    "/api/v1/learners/bea/attempts",                           BEAS_HISTORY,   200,
        query={"exercise": "{quiz}"}),
    # Learner tokens for frontends without an LMS: a key issues them, a token renews itself.
    Row("POST",   "/api/v1/learner-tokens",                                  ISSUE_TOKEN,    200,
        json={"learner": "ada", "exercises": ["{quiz}"]}),
    Row("POST",   "/api/v1/learner-tokens",                                  ISSUE_FOR_A,    200,
        json={"learner": "ada", "exercises": ["{quiz}"], "client": Id("a_client")}),
    Row("POST",   "/api/v1/learner-tokens/refresh",                          LEARNER_TOKENS, 200),
    Row("GET",    "/api/v1/assignment",                                      LAUNCHED_TOKENS, 200),
    # The token's own learner's progress at every exercise it may see (issue 35): a key names no learner here.
    Row("GET",    "/api/v1/progress",                                        LEARNER_TOKENS, 200),
    # Try it yourself.
    Row("POST",   "/api/v1/runs",                                            ANY_CALLER,     202,
        json={"code": "print(1)", "wait": 0}),
    Row("GET",    "/api/v1/runs/{run}",                                      ADAS_RUN,       200),
    Row("GET",    "/api/v1/runs/{c2_run}",                                   BEAS_RUN,       200),
    Row("GET",    "/api/v1/runs/{c2_staff_run}",                             C2_STAFF_RUN,   200),
    # A course's own exercise (issue 34), at its course's URLs; its previews, for its staff.
    Row("POST",   "/api/v1/courses/{c2_course}/exercises/{c2_quiz}/attempts", C2_EXERCISE_FOR_BEA, 201,
        json={"learner": "bea", "answer": RIGHT}),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_quiz}/attempts", C2_EXERCISE_HISTORY, 200,
        query={"learner": "bea"}),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_quiz}/standing", C2_EXERCISE_FOR_BEA, 200,
        query={"learner": "bea"}),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_quiz}/versions/1/preview", C2_STAFF, 200),
    Row("POST",   "/api/v1/courses/{c2_course}/exercises/{c2_quiz}/versions/1/preview/attempts", C2_STAFF, 201,
        json={"answer": RIGHT}),
    Row("GET",    "/api/v1/preview-attempts/{c2_preview}",                   C2_STAFF,       200),
    # Webhooks.
    Row("GET",    "/api/v1/webhooks",                                        ANY_KEY,        200),
    Row("POST",   "/api/v1/webhooks",                                        ANY_KEY,        201,
        json={"url": "http://127.0.0.1:9/another-hook"}),
    Row("GET",    "/api/v1/webhooks/{hook}",                                 OWNER_OR_ADMIN, 200),
    Row("DELETE", "/api/v1/webhooks/{doomed_hook}",                          OWNER_OR_ADMIN, 204),
    Row("GET",    "/api/v1/webhooks/{hook}/deliveries",                      OWNER_OR_ADMIN, 200),
    Row("POST",   "/api/v1/webhooks/{hook}/deliveries/{delivery}/resend",    OWNER_OR_ADMIN, 202),
    # The grading dashboard's API.
    Row("GET",    "/api/v1/admin/attempts",                                  STAFF,          200),
    Row("GET",    "/api/v1/admin/attempts.csv",                              STAFF,          200),
    Row("GET",    "/api/v1/admin/gradebook.csv",                             STAFF,          200),
    Row("GET",    "/api/v1/admin/attempts/{ada_attempt}",                    NO_COURSE_STAFF, 200),
    Row("GET",    "/api/v1/admin/attempts/{c2_attempt}",                     C2_STAFF,       200),
    Row("POST",   "/api/v1/admin/attempts/{ada_attempt}/override",           NO_COURSE_STAFF, 201,
        json={"score": 0.5, "reason": "authorization matrix"}),
    Row("POST",   "/api/v1/admin/attempts/{c2_attempt}/override",            C2_STAFF,       201,
        json={"score": 0.5, "reason": "authorization matrix, course c2"}),
    Row("GET",    "/api/v1/admin/overrides",                                 STAFF,          200),
    Row("GET",    "/api/v1/admin/regrades",                                  STAFF,          200),
    Row("POST",   "/api/v1/admin/regrades",                                  NO_COURSE_STAFF, 202,
        json={"attempt": "{ada_attempt}"}),
    Row("POST",   "/api/v1/admin/regrades",                                  C2_STAFF,       202,
        json={"attempt": "{c2_attempt}"}),
    Row("GET",    "/api/v1/admin/regrades/{regrade}",                        NO_COURSE_STAFF, 200),
    Row("POST",   "/api/v1/admin/regrades/{regrade}/apply",                  NO_COURSE_STAFF, 200),
    # A regrade of course c2's attempt is c2's; ?course= and "course" name a course, which c1's staff cannot see.
    Row("GET",    "/api/v1/admin/regrades/{c2_regrade}",                     C2_STAFF,       200),
    Row("POST",   "/api/v1/admin/regrades/{c2_regrade}/apply",               C2_STAFF,       200),
    Row("GET",    "/api/v1/admin/regrades",                                  C2_STAFF,       200,
        query={"course": "{c2_course}"}),
    Row("POST",   "/api/v1/admin/regrades",                                  C2_STAFF,       202,
        json={"exercise": "{quiz}", "course": "{c2_course}"}),
    Row("GET",    "/api/v1/admin/exercises",                                 STAFF,          200),
    Row("GET",    "/api/v1/exercise-templates",                              STAFF,          200),
    Row("GET",    "/api/v1/admin/exercises/{quiz}/versions",                 STAFF,          200),
    Row("GET",    "/api/v1/admin/exercises/{quiz}/stats",                    STAFF,          200),
    Row("POST",   "/api/v1/admin/exercises/{toggled}/unpublish",             EVERY_COURSE_STAFF, 200),
    Row("POST",   "/api/v1/admin/exercises/{toggled}/publish",               EVERY_COURSE_STAFF, 200),
    Row("GET",    "/api/v1/admin/stats",                                     STAFF,          200),
    Row("GET",    "/api/v1/admin/learners/ada/progress",                     STAFF,          200),
    Row("GET",    "/api/v1/admin/learners/bea/progress",                     STAFF,          200),
    # One course's statistics (counted from its attempts): c2's, which c1's staff cannot ask for.
    Row("GET",    "/api/v1/admin/stats",                                     C2_STAFF,       200,
        query={"course": "{c2_course}"}),
    Row("GET",    "/api/v1/admin/exercises/{quiz}/stats",                    C2_STAFF,       200,
        query={"course": "{c2_course}"}),
    Row("GET",    "/api/v1/admin/learners/bea/progress",                     C2_STAFF,       200,
        query={"course": "{c2_course}"}),
    # Assessment rules (issue 17): an LTI assignment's, a client's use of an exercise, extensions.
    Row("GET",    "/api/v1/admin/links",                                     STAFF,          200),
    Row("GET",    "/api/v1/admin/links/{c2_link}/rules",                     C2_STAFF,       200),
    Row("PUT",    "/api/v1/admin/links/{c2_link}/rules",                     C2_STAFF,       200,
        json={"max_attempts": 50}),
    Row("PUT",    "/api/v1/admin/links/{c2_link}/extensions/bea",            C2_STAFF,       200,
        json={"rules": {"max_attempts": 60}, "note": "authorization matrix"}),
    Row("DELETE", "/api/v1/admin/links/{c2_link}/extensions/bea",            C2_STAFF,       204),
    Row("DELETE", "/api/v1/admin/links/{c2_link}/rules",                     C2_STAFF,       204),
    # One exercise of a link (a link of several has rules per exercise; c2's link has one).
    Row("GET",    "/api/v1/admin/links/{c2_link}/exercises/{quiz}/rules",    C2_STAFF,       200),
    Row("PUT",    "/api/v1/admin/links/{c2_link}/exercises/{quiz}/rules",    C2_STAFF,       200,
        json={"max_attempts": 50}),
    Row("PUT",    "/api/v1/admin/links/{c2_link}/exercises/{quiz}/extensions/bea", C2_STAFF, 200,
        json={"rules": {"max_attempts": 60}, "note": "authorization matrix"}),
    Row("DELETE", "/api/v1/admin/links/{c2_link}/exercises/{quiz}/extensions/bea", C2_STAFF, 204),
    Row("DELETE", "/api/v1/admin/links/{c2_link}/exercises/{quiz}/rules",    C2_STAFF,       204),
    Row("GET",    "/api/v1/admin/exercises/{quiz}/clients/{a_client}/rules", EVERY_COURSE_STAFF, 200),
    Row("PUT",    "/api/v1/admin/exercises/{quiz}/clients/{a_client}/rules", EVERY_COURSE_STAFF, 200,
        json={"max_attempts": 50}),
    Row("PUT",    "/api/v1/admin/exercises/{quiz}/clients/{a_client}/extensions/ada", EVERY_COURSE_STAFF, 200,
        json={"rules": {"max_attempts": 60}}),
    Row("DELETE", "/api/v1/admin/exercises/{quiz}/clients/{a_client}/extensions/ada", EVERY_COURSE_STAFF, 204),
    Row("DELETE", "/api/v1/admin/exercises/{quiz}/clients/{a_client}/rules", EVERY_COURSE_STAFF, 204),
    # Courses (issue 18): the staff caller, the courses staff see, a client's own courses, course keys.
    Row("GET",    "/api/v1/admin/whoami",                                    STAFF,          200),
    Row("GET",    "/api/v1/admin/courses",                                   STAFF,          200),
    Row("GET",    "/api/v1/admin/courses/{c2_course}",                       C2_STAFF,       200),
    Row("GET",    "/api/v1/admin/courses/{c2_course}/members",               C2_STAFF,       200),
    # Course c2 has no roster service (no launch brought one): the allowed callers are told so (409).
    Row("POST",   "/api/v1/admin/courses/{c2_course}/roster/sync",           C2_STAFF,       409),
    # A course's git repository (issue 34): c2's, named, read, synced (queued: no worker runs here), forgotten.
    Row("PUT",    "/api/v1/courses/{c2_course}/git",                         C2_STAFF,       200,
        json={"url": f"https://{GIT_HOST}/course.git", "branch": "main"}),
    Row("GET",    "/api/v1/courses/{c2_course}/git",                         C2_STAFF,       200),
    Row("POST",   "/api/v1/courses/{c2_course}/git/sync",                    C2_STAFF,       202),
    Row("GET",    "/api/v1/courses/{c2_course}/git/syncs",                   C2_STAFF,       200),
    Row("POST",   "/api/v1/courses/{c2_course}/git/rotate-secret",           C2_STAFF,       200),
    # The git host's push: its signature with the course's secret is the credential, no key stands in for it.
    Row("POST",   "/api/v1/git-webhooks/{c2_course}",                        PLATFORM_ONLY,  202,
        json={"ref": "refs/heads/main"}),
    Row("DELETE", "/api/v1/courses/{c2_course}/git",                         C2_STAFF,       204),
    Row("GET",    "/api/v1/courses",                                         ANY_KEY,        200),
    Row("POST",   "/api/v1/courses",                                         ANY_KEY,        201,
        json={"external_id": "matrix-course", "title": "Matrix course"}),
    Row("GET",    "/api/v1/courses/{c2_course}/keys",                        C2_KEYS,        200),
    Row("POST",   "/api/v1/courses/{c2_course}/keys",                        C2_KEYS,        201,
        json={"name": "matrix script"}),
    Row("DELETE", "/api/v1/courses/{c2_course}/keys/{c2_key}",               C2_KEYS,        204),
    # Course exercises (issue 34): course c2's staff write its own exercises. Every allowed caller sends the same
    # request: a POST of a slug already taken, a PUT of the current files (the same version), a DELETE of an
    # exercise an LTI link places are refused (409) or change nothing, for each of them alike.
    Row("GET",    "/api/v1/courses/{c2_course}/exercises",                   C2_STAFF,       200),
    Row("POST",   "/api/v1/courses/{c2_course}/exercises",                   C2_STAFF,       409,
        json={"slug": "{c2_exercise}", "files": {"exercise.toml": "{c2_toml}"}}),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_exercise}",     C2_EXERCISE,    200),
    Row("PUT",    "/api/v1/courses/{c2_course}/exercises/{c2_exercise}",     C2_STAFF,       200,
        json={"files": {"exercise.toml": "{c2_toml}"}}),
    Row("DELETE", "/api/v1/courses/{c2_course}/exercises/{c2_exercise}",     C2_STAFF,       409),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_exercise}/versions", C2_STAFF,  200),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_exercise}/versions/1", C2_STAFF, 200),
    Row("GET",    "/api/v1/courses/{c2_course}/exercises/{c2_exercise}/diff", C2_STAFF,      200,
        query={"from": 1, "to": 2}),
    Row("POST",   "/api/v1/courses/{c2_course}/exercises/{c2_exercise}/versions/2/prove", C2_STAFF, 202),
    Row("POST",   "/api/v1/courses/{c2_course}/exercises/{c2_exercise}/unpublish", C2_STAFF, 200),
    Row("POST",   "/api/v1/courses/{c2_course}/exercises/{c2_exercise}/publish", C2_STAFF,   200,
        json={"version": 2}),
    # The service's setup: admins only.
    Row("GET",    "/api/v1/admin/failed-jobs",                               ADMIN,          200),
    Row("POST",   "/api/v1/admin/failed-jobs/{failed_run}/retry",            ADMIN,          202),
    Row("GET",    "/api/v1/admin/lti/tool",                                  ADMIN,          200),
    Row("GET",    "/api/v1/admin/lti/platforms",                             ADMIN,          200),
    Row("POST",   "/api/v1/admin/lti/platforms",                             ADMIN,          201, json=NEW_PLATFORM),
    Row("GET",    "/api/v1/admin/lti/platforms/{doomed_platform}",           ADMIN,          200),
    Row("PATCH",  "/api/v1/admin/lti/platforms/{doomed_platform}",           ADMIN,          200,
        json={"name": "Renamed LMS"}),
    Row("POST",   "/api/v1/admin/lti/platforms/{doomed_platform}/approve",   ADMIN,          200),
    Row("DELETE", "/api/v1/admin/lti/platforms/{doomed_platform}",           ADMIN,          204),
    Row("GET",    "/api/v1/admin/lti/registration-links",                    ADMIN,          200),
    Row("POST",   "/api/v1/admin/lti/registration-links",                    ADMIN,          201,
        json={"label": "Moodle of the matrix"}),
    Row("DELETE", "/api/v1/admin/lti/registration-links/{registration_link}", ADMIN,         204),
    Row("GET",    "/api/v1/admin/lti/keys",                                  ADMIN,          200),
    Row("POST",   "/api/v1/admin/lti/keys/rotate",                           ADMIN,          201),
    Row("GET",    "/api/v1/admin/lti/passbacks",                             ADMIN,          200),
    Row("POST",   "/api/v1/admin/lti/passbacks/{passback}/resend",           ADMIN,          202),
]


# --- the world the matrix runs in -----------------------------------------------------------------


@dataclass
class Seeded:
    credentials: dict[str, str | None]  # caller -> bearer value
    ids: dict[str, str]  # placeholder -> seeded id
    a_private: list[str] = field(default_factory=list)  # what only A, its learners and staff may see
    c2_private: list[str] = field(default_factory=list)  # what no C2_STRANGERS caller may see: course c2's


@pytest.fixture
def guarded_app(app, make_app):
    """The app with /metrics behind METRICS_TOKEN, as in production (the catalog: `app`'s, same database)."""
    return make_app(metrics_token=METRICS_TOKEN, git_allowed_hosts=(GIT_HOST,))


def _ok(response, status: int) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json(silent=True)


def _token(app, client_id: int, learner: str, role: str = LEARNER, link_id: int | None = None,
           course_id: int | None = None, *also: str) -> str:
    scope = LearnerScope(client_id=client_id, learner=learner, exercises=(QUIZ, *also), role=role, link_id=link_id,
                         course_id=course_id)
    return issue_learner_token(app.config["SECRET_KEY"], scope, 600)


def _client_id(app, name: str) -> int:
    with app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == name))


def _platform_client_id(app, platform_id: int) -> int:
    """The API client a platform's learner tokens speak in."""
    with app.app_context():
        return db_session().scalar(select(LtiPlatform.api_client_id).where(LtiPlatform.id == platform_id))


def _platform(http, admin_key: str, name: str, issuer: str) -> dict:
    body = {"name": name, "issuer": issuer, "client_id": "gradquiz-tool", "deployment_ids": ["d1"],
            "auth_login_url": f"{issuer}/auth", "auth_token_url": f"{issuer}/token", "jwks_url": f"{issuer}/jwks"}
    return _ok(http.post("/api/v1/admin/lti/platforms", headers=bearer(admin_key), json=body), 201)


def _course_links(app, platform_id: int, contexts: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """Resource links of the platform at QUIZ, each in its course (context id), as launches record
    them; the links' ids and the courses' (by context id)."""
    with app.app_context():
        session = db_session()
        quiz = session.scalar(select(Exercise.id).where(Exercise.slug == QUIZ))
        client_id = session.scalar(select(LtiPlatform.api_client_id).where(LtiPlatform.id == platform_id))
        courses = {context: Course(client_id=client_id, platform_id=platform_id, external_id=context,
                                   title=f"Course {context}") for context in sorted(set(contexts.values()))}
        links = {name: LtiResourceLink(platform_id=platform_id, deployment_id="d1", resource_link_id=name,
                                       context_id=context, exercise_id=quiz, course=courses[context])
                 for name, context in contexts.items()}
        session.add_all([*courses.values(), *links.values()])
        session.commit()
        return {name: link.id for name, link in links.items()}, {c: course.id for c, course in courses.items()}


def _course_key(app, course_id: int, name: str) -> tuple[str, int]:
    with app.app_context():
        session = db_session()
        row, key = make_key(session, session.get(Course, course_id), name, "authorization matrix")
        session.commit()
        return key, row.id


def _course_exercise(http, instructor_key: str, course_id: int, link_id: int, platform_id: int) -> tuple[str, str]:
    """Course c2's own quiz (a copy of QUIZ's files), two versions proven, the second published, placed
    by an LTI link of c2 (so it may not be deleted); its slug and its current exercise.toml."""
    from service.config import PROJECT_ROOT

    slug, url = "c2-own-quiz", f"/api/v1/courses/{course_id}/exercises"
    toml = (PROJECT_ROOT / "exercises" / QUIZ / "exercise.toml").read_text()
    _ok(http.post(url, headers=bearer(instructor_key), json={"slug": slug, "files": {"exercise.toml": toml}}), 201)
    toml = toml.replace('title = "', 'title = "Course c2: ', 1)
    _ok(http.put(f"{url}/{slug}", headers=bearer(instructor_key), json={"files": {"exercise.toml": toml}}), 201)
    _ok(http.post(f"{url}/{slug}/publish", headers=bearer(instructor_key), json={}), 200)
    app = http.application
    with app.app_context():
        session = db_session()
        session.add(LtiResourceLink(platform_id=platform_id, deployment_id="d1", resource_link_id="c2-own-quiz",
                                    context_id="c2", course_id=course_id,
                                    exercise_id=session.scalar(select(Exercise.id).where(Exercise.slug == slug))))
        session.commit()
    return slug, toml


def seed(app, database_url: str, client_key: str, other_client_key: str, admin_key: str, client_key_for) -> Seeded:
    """Real rows for each endpoint to reach its decision on: A's attempt for ada (with a webhook
    delivery), a ready regrade of it, ada's run (made with her token) and A's failed run, an LTI
    platform whose learner's attempt left a passback, a platform to delete, and one disabled after
    handing out a token."""
    http = app.test_client()
    instructor_key = client_key_for(app, "prof", Role.INSTRUCTOR)
    revoked_key = client_key_for(app, "retired-admin", Role.ADMIN)
    with app.app_context():
        db_session().execute(update(ApiClient).where(ApiClient.name == "retired-admin").values(revoked_at=utcnow()))
        db_session().commit()
    a_id, b_id = _client_id(app, "lms-one"), _client_id(app, "lms-two")

    hook_url = "http://127.0.0.1:9/hook-of-a"
    hook = _ok(http.post("/api/v1/webhooks", headers=bearer(client_key), json={"url": hook_url}), 201)["id"]
    doomed_hook = _ok(http.post("/api/v1/webhooks", headers=bearer(client_key),
                                json={"url": "http://127.0.0.1:9/doomed-hook-of-a"}), 201)["id"]
    ada_attempt = _ok(http.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(client_key) | IDEMPOTENCY,
                                json={"learner": "ada", "answer": RIGHT}), 201)["id"]

    regrade = _ok(http.post("/api/v1/admin/regrades", headers=bearer(instructor_key),
                            json={"attempt": ada_attempt}), 202)["id"]
    # Quiz items need no judge; no code job is queued yet for this worker to take.
    worker = Worker(Settings.from_env({}, database_url=database_url, env="testing"), None, "matrix-regrader")
    while worker.run_once():
        pass
    assert _ok(http.get(f"/api/v1/admin/regrades/{regrade}", headers=bearer(instructor_key)), 200)["status"] == "ready"

    run = _ok(http.post("/api/v1/runs", headers=bearer(_token(app, a_id, "ada")),
                        json={"code": "print(1)", "wait": 0}), 202)["id"]
    failed_run = _ok(http.post("/api/v1/runs", headers=bearer(client_key),
                               json={"code": "print(2)", "wait": 0}), 202)["id"]

    lms = _platform(http, admin_key, "Test LMS", "https://lms.example")
    doomed_platform = _platform(http, admin_key, "Doomed LMS", "https://doomed-lms.example")["id"]
    registration_link = _ok(http.post("/api/v1/admin/lti/registration-links", headers=bearer(admin_key),
                                      json={"label": "Doomed link"}), 201)["id"]
    closed = _platform(http, admin_key, "Closed LMS", "https://closed-lms.example")["id"]
    revoked_token = _token(app, _platform_client_id(app, closed), "ada")
    _ok(http.delete(f"/api/v1/admin/lti/platforms/{closed}", headers=bearer(admin_key)), 204)
    _ok(http.get("/lti/jwks"), 200)  # makes the tool's first key: reading the JWKS later writes nothing
    with app.app_context():
        session = db_session()
        # As the worker leaves a job it gave up on.
        session.execute(update(Run).where(Run.id == uuid.UUID(failed_run)).values(
            status=AttemptStatus.ERROR.value, tries=3, graded_at=utcnow(), result={"message": "grader failed"}))
        # As a launch from the LMS records its resource link.
        link = LtiResourceLink(platform_id=lms["id"], deployment_id="d1", resource_link_id="link-1",
                               exercise_id=session.scalar(select(Exercise.id).where(Exercise.slug == QUIZ)),
                               lineitem_url="https://lms.example/lineitems/1")
        session.add(link)
        session.commit()
        link_id = link.id
        delivery = session.scalar(select(WebhookDelivery.id).where(WebhookDelivery.endpoint_id == hook))
    lms_client = _platform_client_id(app, lms["id"])
    launched = _token(app, lms_client, "grace", link_id=link_id)
    _ok(http.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(launched), json={"answer": RIGHT}), 201)
    with app.app_context():
        passback = db_session().scalar(select(ScorePassback.id).order_by(ScorePassback.id))
    # Two courses of the LMS (launches' contexts c1 and c2), c2 through two links; bea's attempt and run in c2.
    courses, course_ids = _course_links(app, lms["id"], {"c1-link": "c1", "c2-link": "c2", "c2-week-2": "c2"})
    c1, c2 = course_ids["c1"], course_ids["c2"]
    course_tokens = {"c1_teacher": _token(app, lms_client, "prof-1", INSTRUCTOR, courses["c1-link"], c1, C2_QUIZ),
                     "c1_bea": _token(app, lms_client, "bea", LEARNER, courses["c1-link"], c1, C2_QUIZ),
                     "c2_teacher": _token(app, lms_client, "prof-2", INSTRUCTOR, courses["c2-week-2"], c2, C2_QUIZ),
                     "c2_bea": _token(app, lms_client, "bea", LEARNER, courses["c2-link"], c2, C2_QUIZ)}
    secret = app.config["SECRET_KEY"]
    course_staff = {"c1_staff": mint_staff_session(secret, lms_client, c1, "prof-1", "Prof One", 600)[0],
                    "c2_staff": mint_staff_session(secret, lms_client, c2, "prof-2", "Prof Two", 600)[0],
                    "c1_key": _course_key(app, c1, "c1 script")[0]}
    _unused, c2_key = _course_key(app, c2, "doomed c2 script")
    c2_attempt = _ok(http.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(course_tokens["c2_bea"])
                               | C2_IDEMPOTENCY, json={"learner": "bea", "answer": RIGHT}), 201)["id"]
    c2_run = _ok(http.post("/api/v1/runs", headers=bearer(course_tokens["c2_bea"]),
                           json={"code": "print(3)", "wait": 0}), 202)["id"]
    c2_staff_run = _ok(http.post("/api/v1/runs", headers=bearer(course_staff["c2_staff"]),
                                 json={"code": "print(4)", "wait": 0}), 202)["id"]
    # A regrade of bea's c2 attempt, asked for by a staff key: it is course c2's (the attempt's), ready to apply.
    c2_regrade = _ok(http.post("/api/v1/admin/regrades", headers=bearer(instructor_key),
                               json={"attempt": c2_attempt}), 202)["id"]
    while worker.run_once():
        pass
    # A's own course and its key, which issues ada's token there.
    a_course = _ok(http.post("/api/v1/courses", headers=bearer(client_key),
                             json={"external_id": "a-course", "title": "A's course"}), 201)["id"]
    a_course_key = _course_key(app, a_course, "a-course script")[0]
    course_ada = _ok(http.post("/api/v1/learner-tokens", headers=bearer(a_course_key),
                               json={"learner": "ada", "exercises": [QUIZ]}), 200)["token"]

    c2_exercise, c2_toml = _course_exercise(http, instructor_key, c2, courses["c2-link"], lms["id"])
    assert c2_exercise == C2_QUIZ  # the exercise the courses' launch tokens name beside QUIZ
    c2_preview = _ok(http.post(f"/api/v1/courses/{c2}/exercises/{C2_QUIZ}/versions/1/preview/attempts",
                               headers=bearer(course_staff["c2_staff"]), json={"answer": RIGHT}), 201)["id"]

    credentials = {
        "none": None,
        "wrong_key": "gq_" + secrets.token_urlsafe(32),
        "revoked_key": revoked_key,
        "revoked_token": revoked_token,
        "metrics_token": METRICS_TOKEN,
        "other_client": other_client_key,
        "bob_token": _token(app, a_id, "bob"),
        "b_ada_token": _token(app, b_id, "ada"),
        "ada_token": _token(app, a_id, "ada"),
        "teacher_token": _token(app, a_id, "teacher-1", role=INSTRUCTOR),
        "client": client_key,
        "instructor": instructor_key,
        "admin": admin_key,
    } | course_tokens | course_staff | {"course_ada": course_ada,
                                        "admin_ada": _token(app, _client_id(app, "admin"), "ada")}
    assert set(credentials) == set(CALLERS)
    ids = {"quiz": QUIZ, "toggled": TOGGLED, "ada_attempt": ada_attempt, "run": run, "failed_run": failed_run,
           "hook": str(hook), "doomed_hook": str(doomed_hook), "delivery": str(delivery), "regrade": regrade,
           "doomed_platform": str(doomed_platform), "passback": str(passback), "registration_link": str(registration_link),
           "lms_issuer": lms["issuer"], "lms_client_id": lms["client_id"], "c2_attempt": c2_attempt, "c2_run": c2_run,
           "c2_link": str(courses["c2-link"]), "a_client": str(a_id), "c2_course": str(c2), "c2_key": str(c2_key),
           "c2_regrade": c2_regrade, "c2_exercise": c2_exercise, "c2_toml": c2_toml, "c2_quiz": c2_exercise,
           "c2_staff_run": c2_staff_run, "c2_preview": c2_preview}
    return Seeded(credentials | {"grace_token": launched}, ids,
                  a_private=[ada_attempt, run, failed_run, hook_url], c2_private=[c2_attempt])


# --- running the matrix -------------------------------------------------------------------------


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, Id):
        return int(ids[value.name])
    if isinstance(value, str):
        return value.format_map(ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


def _uncovered_endpoints(app, ids: dict[str, str]) -> list[str]:
    """What is wrong between MATRIX and the app's routes: an endpoint without a row, or a row twice.
    An endpoint may have several rows when they name different data (another course's attempt)."""
    adapter = app.url_map.bind("localhost")
    covered: set[tuple[str, str]] = set()
    seen: dict[str, int] = {}
    problems = []
    for row in MATRIX:
        rule, _args = adapter.match(_fill(row.path, ids), row.method, return_rule=True)
        covered.add((rule.rule, row.method))
        request = repr((row.method, row.path, row.json, row.form, row.query, row.headers))
        seen[request] = seen.get(request, 0) + 1
    routes = {(rule.rule, method) for rule in app.url_map.iter_rules()
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    for rule, method in sorted(routes - covered):
        problems.append(f"{method} {rule} has no row in MATRIX: add one saying which callers may call it")
    problems += [f"{request} has {n} rows in MATRIX; keep one" for request, n in seen.items() if n > 1]
    return problems


def _table_digests(app) -> dict[str, str]:
    with app.app_context():
        session = db_session()
        digests = {}
        for table in Base.metadata.sorted_tables:
            rows = session.execute(select(table).order_by(*table.primary_key.columns)).all()
            digests[table.name] = hashlib.sha256(repr(rows).encode()).hexdigest()
        return digests


def _request(http, row: Row, ids: dict[str, str], credential: str | None):
    headers = row.headers | (bearer(credential) if credential is not None else {})
    return http.open(_fill(row.path, ids), method=row.method, headers=headers, json=_fill(row.json, ids),
                     data=_fill(row.form, ids), query_string=_fill(row.query, ids))


def _answer_problems(row: Row, caller: str, response, world: Seeded) -> list[str]:
    expected = row.ok if row.who[caller] == OK else row.who[caller]
    body = response.get_data(as_text=True)
    response.close()
    status = response.status_code
    what = f"{row.method} {row.path} as {caller}"
    problems = []
    if status != expected:
        problems.append(f"{what}: expected {expected}, got {status}: {body[:300]}")
    if status >= 400 and response.mimetype != "application/problem+json":
        problems.append(f"{what}: the {status} is {response.content_type}, not application/problem+json")
    if status == 401 and row.who is not PLATFORM_ONLY and "WWW-Authenticate" not in response.headers:
        problems.append(f"{what}: the 401 does not say how to authenticate (WWW-Authenticate)")
    if "Idempotent-Replayed" in response.headers and caller != row.replayed_for:
        problems.append(f"{what}: got the response stored for {row.replayed_for}'s Idempotency-Key")
    if caller == row.replayed_for and row.headers.get("Idempotency-Key") and status < 300 \
            and "Idempotent-Replayed" not in response.headers:
        problems.append(f"{what}: the same request with the same Idempotency-Key was not replayed")
    credential = world.credentials[caller]
    if credential is not None and (credential in body or credential in str(response.headers)):
        problems.append(f"{what}: the response echoes the caller's credential")
    if caller in STRANGERS and 200 <= status < 300:
        problems += [f"{what}: the {status} shows {secret!r}, which belongs to client A" for secret in world.a_private
                     if secret in body]
    if caller in C2_STRANGERS and 200 <= status < 300:
        problems += [f"{what}: the {status} shows {secret!r}, which belongs to course c2" for secret in world.c2_private
                     if secret in body]
    return problems


def _secret_parts(credential: str) -> list[str]:
    """The parts of a credential that must never be written down: a key without its public
    prefix, a learner token or staff session and its signature."""
    for prefix in ("gq_", "gqc_"):
        if credential.startswith(prefix):
            return [credential.removeprefix(prefix)]
    if credential.count(".") == 2 or credential.startswith("gqs."):
        return [credential, credential.rsplit(".", 1)[1]]
    return [credential]


def _leaks_in_logs(records: list[logging.LogRecord], credentials: dict[str, str | None]) -> list[str]:
    """One line per (credential, logger) that leaked, with an example record, the secret cut out
    (a failing run must not print the keys either)."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    leaks: dict[tuple[str, str], tuple[int, str]] = {}
    for record in records:
        # The formatted line (with any traceback), and every attribute: msg, args and extras.
        text = formatter.format(record) + repr(vars(record))
        for caller, credential in credentials.items():
            parts = _secret_parts(credential) if credential is not None else []
            if any(part in text for part in parts):
                example = record.getMessage()
                for part in parts:
                    example = example.replace(part, "<secret>")
                count, first = leaks.get((caller, record.name), (0, example))
                leaks[(caller, record.name)] = (count + 1, first)
    return [f"{caller}'s credential in {count} log records of {logger}, e.g. {example[:200]!r}"
            for (caller, logger), (count, example) in leaks.items()]


def test_every_endpoint_answers_every_caller_as_the_matrix_says(guarded_app, database_url, client_key,
                                                               other_client_key, admin_key, client_key_for, caplog):
    caplog.set_level(logging.DEBUG)
    world = seed(guarded_app, database_url, client_key, other_client_key, admin_key, client_key_for)
    uncovered = _uncovered_endpoints(guarded_app, world.ids)
    assert not uncovered, "\n".join(uncovered)

    http = guarded_app.test_client()
    failures = []
    for row in MATRIX:
        refused = [caller for caller in CALLERS if row.who[caller] != OK]
        allowed = [caller for caller in CALLERS if row.who[caller] == OK]
        before = _table_digests(guarded_app) if refused else None
        for caller in refused:
            response = _request(http, row, world.ids, world.credentials[caller])
            failures += _answer_problems(row, caller, response, world)
        if refused:
            after = _table_digests(guarded_app)
            changed = [name for name in before if before[name] != after[name]]
            if changed:
                failures.append(f"{row.method} {row.path}: a refused request changed {', '.join(changed)}")
        for caller in allowed:
            response = _request(http, row, world.ids, world.credentials[caller])
            failures += _answer_problems(row, caller, response, world)

    assert caplog.records, "no log record was captured: the check below would prove nothing"
    failures += _leaks_in_logs(caplog.records, world.credentials)
    assert not failures, f"{len(failures)} problems:\n" + "\n".join(failures)
