"""What each web process keeps a bounded time (service/ttl_cache.py): API keys' clients
(API_KEY_CACHE_SECONDS), so a revoked key stops working within it and never later; exercises'
current versions (EXERCISE_CACHE_SECONDS), so an unpublish or a new version shows within it."""

from __future__ import annotations

import time

from sqlalchemy import event, update

from service.auth import create_client, hash_key
from service.database import engine_for
from service.extensions import db_session
from service.learner_tokens import LearnerScope, issue_learner_token
from service.models import ApiClient, Role
from service.models.base import utcnow
from tests.helpers import bearer


def test_a_revoked_key_works_until_its_cached_lookup_expires_then_never(make_app, database_url):
    app = make_app(api_key_cache_seconds=5)
    with app.app_context():
        _client, key = create_client(db_session(), "lms", Role.CLIENT)
        db_session().commit()
    client = app.test_client()
    learners = "/api/v1/learners/ada/attempts"
    assert client.get(learners, headers=bearer(key)).status_code == 200

    statements = []
    engine = engine_for(database_url)
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        assert client.get(learners, headers=bearer(key)).status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert not any("api_clients" in sql for sql in statements)  # answered from the cache

    with app.app_context():  # revoked by another process (the CLI, another web process)
        db_session().execute(update(ApiClient).where(ApiClient.name == "lms").values(revoked_at=utcnow()))
        db_session().commit()
    cache = app.extensions["gradquiz.clients"]
    assert client.get(learners, headers=bearer(key)).status_code == 200  # within the 5 s
    cache.clock = lambda: time.monotonic() + 5.01
    refused = client.get(learners, headers=bearer(key))
    assert refused.status_code == 401 and refused.content_type == "application/problem+json"
    # The cache is keyed by the key's hash: the key itself is kept nowhere.
    assert list(cache.entries) == [hash_key(key)]


def test_unknown_keys_are_never_kept_and_learner_tokens_share_the_cache(make_app):
    app = make_app(api_key_cache_seconds=60)
    with app.app_context():
        lms, _key = create_client(db_session(), "lms", Role.CLIENT)
        db_session().commit()
        token = issue_learner_token(app.config["SECRET_KEY"], LearnerScope(client_id=lms.id, learner="ada", exercises=None), 600)
    client = app.test_client()
    for _ in range(3):
        assert client.get("/api/v1/learners/ada/attempts", headers=bearer("gq_not-a-key")).status_code == 401
    assert client.get("/api/v1/learners/ada/attempts", headers=bearer(token)).status_code == 200
    assert list(app.extensions["gradquiz.clients"].entries) == [f"id:{lms.id}"]


def test_the_cache_is_off_in_tests_and_five_seconds_otherwise():
    from service.config import Settings

    assert Settings.from_env({}, env="testing").api_key_cache_ttl == 0
    assert Settings.from_env({}).api_key_cache_ttl == 5
    assert Settings.from_env({"API_KEY_CACHE_SECONDS": "0"}).api_key_cache_ttl == 0


def test_an_exercises_current_version_is_kept_until_its_entry_expires(make_app, database_url, client_key_for):
    from service.catalog import load_catalog, sync_catalog
    from service.models import Exercise
    from tests.conftest import EXERCISES_DIR

    app = make_app(exercise_cache_seconds=5)
    with app.app_context():
        sync_catalog(db_session(), load_catalog(EXERCISES_DIR)[0])
        db_session().commit()
    key = client_key_for(app)
    client = app.test_client()
    path = "/api/v1/exercises/backward-none-for-bounds/attempts"

    def answer(learner):
        return client.post(path, json={"learner": learner, "answer": "none-each"}, headers=bearer(key))

    first = answer("ada")
    assert first.status_code == 201 and first.json["exercise"] == "backward-none-for-bounds"
    statements = []
    engine = engine_for(database_url)
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        second = answer("bob")
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert second.status_code == 201 and second.json["exercise_version"] == first.json["exercise_version"]
    assert second.json["correct"] is True
    assert not any("FROM exercises" in sql for sql in statements)  # graded against the kept version

    with app.app_context():  # unpublished by another process (the dashboard of another web process)
        db_session().execute(update(Exercise).where(Exercise.slug == "backward-none-for-bounds")
                             .values(published=False))
        db_session().commit()
    assert answer("chen").status_code == 201  # within the 5 s
    app.extensions["gradquiz.current_versions"].clock = lambda: time.monotonic() + 5.01
    gone = answer("dana")
    assert gone.status_code == 404 and gone.content_type == "application/problem+json"
