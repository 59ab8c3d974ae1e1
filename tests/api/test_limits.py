"""Limits on what one request or one caller may ask: JSON depth, code size, page size, rate.

(The body-size limit, 413, is in test_bad_input.py; the runs rate limit in test_code_attempts.py.)
"""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from sqlalchemy import select

from service import MAX_JSON_DEPTH
from service.catalog import load_catalog, sync_catalog
from service.extensions import db_session
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient, Attempt
from service.schemas.attempts import MAX_CODE_CHARS
from tests.conftest import EXERCISES_DIR
from tests.helpers import bearer, count_rows

QUIZ = "backward-none-for-bounds"
NUMERIC = "clampfn-gradient-vector"
CODE = "clamp-function"
REDIS_URL = "redis://127.0.0.1:6379/0"


def nested_answer(depth: int) -> str:
    """A body whose `answer` is `depth` - 1 nested lists (the body itself is one level)."""
    return '{"learner": "ada", "answer": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def post_raw(client, key: str, slug: str, body: str):
    return client.post(f"/api/v1/exercises/{slug}/attempts", data=body,
                       headers={**bearer(key), "Content-Type": "application/json"})


def with_catalog(app):
    """`app` with the repository's exercises (the `app` fixture's, for apps with their own settings)."""
    with app.app_context():
        sync_catalog(db_session(), load_catalog(EXERCISES_DIR)[0])
        db_session().commit()
    return app


def quiz_attempt(client, key: str, learner: str = "ada"):
    return client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"learner": learner, "answer": "none-each"},
                       headers=bearer(key))


class TestJsonDepth:
    def test_at_the_limit_the_body_reaches_the_exercise(self, client, client_key):
        response = post_raw(client, client_key, NUMERIC, nested_answer(MAX_JSON_DEPTH))
        # Parsed and judged by the exercise (a wrong shape), not refused for its depth.
        assert response.status_code == 422, response.json
        assert response.json["type"] == "/problems/invalid-answer"

    @pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 100_000])
    def test_deeper_bodies_are_refused_before_parsing_recurses(self, app, client, client_key, depth):
        response = post_raw(client, client_key, NUMERIC, nested_answer(depth))
        assert response.status_code == 400
        assert response.content_type == "application/problem+json"
        assert response.json["title"] == "Request body nested too deeply"
        assert count_rows(app, Attempt) == 0

    def test_deep_objects_count_too(self, client, client_key):
        body = {"learner": "ada", "answer": "none-each"}
        for _ in range(MAX_JSON_DEPTH):
            body = {"x": body}
        response = client.post(f"/api/v1/exercises/{QUIZ}/attempts", json=body, headers=bearer(client_key))
        assert response.status_code == 400


class TestCodeSize:
    def test_code_at_the_limit_is_queued(self, app, client, client_key):
        code = "#" * (MAX_CODE_CHARS - 1) + "\n"
        response = client.post(f"/api/v1/exercises/{CODE}/attempts", json={"learner": "ada", "code": code},
                               headers=bearer(client_key))
        assert response.status_code == 202, response.json

    @pytest.mark.parametrize("url", [f"/api/v1/exercises/{CODE}/attempts", "/api/v1/runs"])
    def test_longer_code_is_refused_naming_the_field(self, app, client, client_key, url):
        response = client.post(url, json={"learner": "ada", "code": "#" * (MAX_CODE_CHARS + 1)},
                               headers=bearer(client_key))
        assert response.status_code == 422
        assert response.content_type == "application/problem+json"
        assert "json.code" in [e["field"] for e in response.json["errors"]]
        assert count_rows(app, Attempt) == 0


def paginated_operations(client) -> list[tuple[str, int]]:
    """(path, documented maximum) of every operation the OpenAPI document gives a page_size."""
    spec = client.get("/api/v1/openapi.json").json
    found = []
    for path, operations in spec["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("name") == "page_size":
                    found.append((path, parameter["schema"]["maximum"]))
    return found


def test_every_page_size_has_a_documented_maximum_that_is_enforced(app, client, admin_key):
    operations = paginated_operations(client)
    assert len(operations) >= 5, operations  # the public lists and the admin ones
    for path, maximum in operations:
        url = (path.replace("{slug}", QUIZ).replace("{learner}", "ada").replace("{course_id}", "1")
               .replace("{endpoint_id}", "1").replace("{regrade_id}", str(uuid.uuid4())))
        too_big = client.get(f"{url}?page_size={maximum + 1}", headers=bearer(admin_key))
        assert too_big.status_code == 422, (path, too_big.status_code)
        assert too_big.content_type == "application/problem+json"
        assert any(e["field"] == "query.page_size" for e in too_big.json["errors"]), (path, too_big.json)


class TestAttemptRateLimit:
    def test_a_client_over_its_limit_gets_429_with_retry_after_and_nothing_stored(self, make_app, client_key_for):
        app = with_catalog(make_app(attempts_rate_limit="3/minute"))
        key, other = client_key_for(app, "one"), client_key_for(app, "two")
        client = app.test_client()
        assert [quiz_attempt(client, key).status_code for _ in range(3)] == [201, 201, 201]
        limited = quiz_attempt(client, key)
        assert limited.status_code == 429
        assert limited.content_type == "application/problem+json"
        assert 1 <= int(limited.headers["Retry-After"]) <= 61
        assert "3 per 1 minute" in limited.json["detail"]
        assert count_rows(app, Attempt) == 3
        # Per client: another client of the same service is not slowed down by the first.
        assert quiz_attempt(client, other).status_code == 201

    def test_unauthenticated_requests_do_not_use_up_a_limit(self, make_app, client_key_for):
        app = make_app(attempts_rate_limit="1/minute")
        key = client_key_for(app)
        client = app.test_client()
        for _ in range(3):
            assert quiz_attempt(client, "gq_wrong").status_code == 401
        assert quiz_attempt(client, key).status_code == 404  # counted: past the limiter, no such exercise yet
        assert quiz_attempt(client, key).status_code == 429

    def test_learner_tokens_are_limited_per_learner(self, app, make_app, client_key_for):
        limited_app = make_app(attempts_rate_limit="2/minute")
        client_key_for(limited_app, "platform")
        with limited_app.app_context():
            client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "platform"))

        def token(learner: str) -> str:
            scope = LearnerScope(client_id=client_id, learner=learner, exercise=QUIZ, role=LEARNER, link_id=None)
            return issue_learner_token(limited_app.config["SETTINGS"].secret_key, scope, 600)

        client = limited_app.test_client()
        ada, bob = token("ada"), token("bob")

        def post(learner_token: str):
            return client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"answer": "none-each"},
                               headers=bearer(learner_token))

        assert [post(ada).status_code for _ in range(3)] == [201, 201, 429]
        # The platform's other learners share its client but not ada's count.
        assert post(bob).status_code == 201


@pytest.fixture
def redis_storage():
    """Rate-limit counts in the local Redis, under a prefix of this test's own."""
    server = redis.Redis.from_url(REDIS_URL)
    try:
        server.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"Redis at {REDIS_URL} is not running ({exc}); start it (see .ci/run)", pytrace=False)
    yield REDIS_URL
    for stale in server.scan_iter("LIMITS:*gradquiz*"):
        server.delete(stale)


def test_redis_storage_shares_counts_between_web_processes(make_app, client_key_for, redis_storage):
    # Two apps on one database and one Redis stand for two web processes behind a load balancer.
    first = with_catalog(make_app(attempts_rate_limit="2/minute", rate_limit_storage=redis_storage))
    key = client_key_for(first)
    assert [quiz_attempt(first.test_client(), key).status_code for _ in range(2)] == [201, 201]
    second = make_app(attempts_rate_limit="2/minute", rate_limit_storage=redis_storage)
    limited = quiz_attempt(second.test_client(), key)
    assert limited.status_code == 429 and limited.headers["Retry-After"]
    assert any(True for _ in redis.Redis.from_url(redis_storage).scan_iter("LIMITS:*gradquiz*"))


def test_an_unreachable_redis_does_not_stop_submissions(make_app, client_key_for):
    # Nothing listens on port 1: each process counts in memory until Redis is back.
    app = with_catalog(make_app(attempts_rate_limit="2/minute", rate_limit_storage="redis://127.0.0.1:1/0"))
    key = client_key_for(app)
    client = app.test_client()
    assert [quiz_attempt(client, key).status_code for _ in range(3)] == [201, 201, 429]


def test_the_limits_are_documented(client):
    spec = client.get("/api/v1/openapi.json").json
    for path in ("/api/v1/exercises/{slug}/attempts", "/api/v1/runs"):
        responses = spec["paths"][path]["post"]["responses"]
        assert "429" in responses and "413" in responses, (path, sorted(responses))
    assert json.dumps(spec).count("Retry-After") >= 2


class TestMemoryWindows:
    """The in-process moving window (service/ratelimit.py), on a clock the test moves."""

    def windows(self):
        from service.ratelimit import MemoryWindows

        now = [1000.0]
        return MemoryWindows(clock=lambda: now[0]), now

    def test_a_call_counts_if_fewer_than_the_limit_were_counted_in_the_window_before_it(self):
        from service.ratelimit import parsed_limits

        windows, now = self.windows()
        (limit,) = parsed_limits("3/minute")
        for _ in range(3):
            assert windows.hit(limit, "ada") is None
            now[0] += 10
        # 3 counted at 1000, 1010, 1020; at 1030 the first leaves the window in 30 s
        assert windows.hit(limit, "ada") == pytest.approx(30)
        assert windows.hit(limit, "bob") is None  # another caller's own window
        now[0] = 1060.0  # the first call is out of the window (a minute before 1060 is 1000)
        assert windows.hit(limit, "ada") is None
        assert windows.hit(limit, "ada") == pytest.approx(10)  # the refused call was not counted

    def test_idle_callers_are_swept_and_no_thread_is_started(self):
        import threading

        from service.ratelimit import MemoryWindows, parsed_limits

        windows, now = self.windows()
        (limit,) = parsed_limits("600/minute")
        threads = threading.active_count()
        for learner in range(100):
            assert windows.hit(limit, f"learner-{learner}") is None
        assert threading.active_count() == threads
        now[0] += MemoryWindows.SWEEP_SECONDS + 1  # past the sweep and every caller's window
        assert windows.hit(limit, "ada") is None
        assert list(windows._windows) == ["ada"]


def test_an_unreachable_redis_is_tried_again_after_a_while(caplog):
    from service.ratelimit import SHARED_RETRY_SECONDS, RateLimits, parsed_limits

    limits = RateLimits("redis://127.0.0.1:1/0")
    (limit,) = parsed_limits("2/minute")
    assert limits.exceeded((limit,), "attempts", "client:1") is None  # counted in memory
    assert "rate-limit storage unreachable" in caplog.text
    assert limits.shared_down_until > 0
    limits.shared_down_until -= SHARED_RETRY_SECONDS  # the retry is due: Redis is tried (and fails) again
    caplog.clear()
    assert limits.exceeded((limit,), "attempts", "client:1") is None
    assert "rate-limit storage unreachable" in caplog.text
    assert limits.exceeded((limit,), "attempts", "client:1").retry_after_seconds == 60  # still counted in memory
