"""GET /api/v1/exercises and /api/v1/exercises/{slug}: public, paginated, never a correct answer."""

import json
import time

import pytest
from sqlalchemy import update

from tests.helpers import correct_answer

SECRET_KEYS = {"correct", "feedback", "accepted", "wrong", "value", "tolerance", "explanation", "reference"}


def test_list_is_public_paginated_and_ordered(client, quiz_catalog):
    response = client.get("/api/v1/exercises?page_size=5")
    assert response.status_code == 200
    page = json.loads(response.headers["X-Pagination"])
    assert page["total"] >= len(quiz_catalog)
    assert page["page"] == 1 and page["next_page"] == 2
    items = response.json
    assert len(items) == 5
    assert [(i["difficulty"], i["slug"]) for i in items] == sorted((i["difficulty"], i["slug"]) for i in items)
    assert set(items[0]) == {"slug", "title", "kind", "topics", "difficulty", "version"}


def test_every_page_together_lists_each_exercise_once(client):
    seen, page = [], 1
    while True:
        response = client.get(f"/api/v1/exercises?page={page}&page_size=7")
        seen += [i["slug"] for i in response.json]
        meta = json.loads(response.headers["X-Pagination"])
        if "next_page" not in meta:
            break
        page = meta["next_page"]
    assert len(seen) == len(set(seen)) == meta["total"]


def test_filter_by_kind_and_topic(client, quiz_catalog):
    response = client.get("/api/v1/exercises?kind=numeric&page_size=100")
    expected = {slug for slug, spec in quiz_catalog.items() if spec["kind"] == "numeric"}
    assert {i["slug"] for i in response.json} == expected
    topic = quiz_catalog["backward-none-for-bounds"]["topics"][0]
    response = client.get(f"/api/v1/exercises?topic={topic}&page_size=100")
    assert response.json and all(topic in i["topics"] for i in response.json)
    assert "backward-none-for-bounds" in {i["slug"] for i in response.json}


@pytest.mark.parametrize("query", ["page_size=101", "page_size=0", "page=0", "kind=essay", "topic=Not%20A%20Tag"])
def test_bad_list_parameters_are_problems(client, query):
    response = client.get(f"/api/v1/exercises?{query}")
    assert response.status_code == 422
    assert response.content_type == "application/problem+json"
    assert response.json["errors"][0]["field"].startswith("query.")


def _walk_keys(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from _walk_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk_keys(inner)


def test_detail_never_gives_the_answer_away(client, quiz_catalog):
    for slug, spec in quiz_catalog.items():
        response = client.get(f"/api/v1/exercises/{slug}")
        assert response.status_code == 200, slug
        body = response.json
        assert body["prompt"] == spec["prompt"] and body["kind"] == spec["kind"]
        assert not SECRET_KEYS & set(_walk_keys(body)), slug
        assert spec["explanation"] not in response.get_data(as_text=True)
        if spec["kind"] == "short_answer":
            for accepted in spec["answer"]["accepted"]:
                assert json.dumps(accepted) not in response.get_data(as_text=True), slug


def test_detail_shows_what_is_needed_to_answer(client, quiz_catalog):
    slug, spec = next((s, e) for s, e in quiz_catalog.items() if e["kind"] == "multiple_choice")
    body = client.get(f"/api/v1/exercises/{slug}").json
    assert [c["id"] for c in body["choices"]] == [c["id"] for c in spec["choices"]]
    assert body["hints"] == spec.get("hints", [])
    assert body["version"] == 1
    slug, spec = next((s, e) for s, e in quiz_catalog.items()
                      if e["kind"] == "numeric" and isinstance(e["answer"]["value"], list))
    assert client.get(f"/api/v1/exercises/{slug}").json["answer_length"] == len(correct_answer(spec))


def test_unknown_exercise_is_a_problem(client):
    response = client.get("/api/v1/exercises/no-such-exercise")
    assert response.status_code == 404
    assert response.content_type == "application/problem+json"
    assert response.json["status"] == 404 and "no-such-exercise" in response.json["detail"]


def test_each_process_keeps_an_exercise_detail_for_exercise_cache_seconds(make_app):
    from service.catalog import load_catalog, sync_catalog
    from service.extensions import db_session
    from service.models import Exercise
    from tests.conftest import EXERCISES_DIR

    app = make_app(exercise_cache_seconds=60)
    with app.app_context():
        sync_catalog(db_session(), load_catalog(EXERCISES_DIR)[0])
        db_session().commit()
    client, url = app.test_client(), "/api/v1/exercises/backward-none-for-bounds"
    title = client.get(url).json["title"]
    with app.app_context():
        db_session().execute(update(Exercise).where(Exercise.slug == "backward-none-for-bounds")
                             .values(title="Renamed"))
        db_session().commit()
    assert client.get(url).json["title"] == title  # kept: no query within the 60 s
    cache = app.extensions["gradquiz.exercise_details"]
    cache.clock = lambda: time.monotonic() + 61
    assert client.get(url).json["title"] == "Renamed"
    assert client.get("/api/v1/exercises/no-such-exercise").status_code == 404
    assert set(cache.entries) == {"backward-none-for-bounds"}


def test_the_detail_cache_is_off_in_tests_and_five_seconds_otherwise():
    from service.config import Settings

    assert Settings.from_env({}, env="testing").exercise_cache_ttl == 0
    assert Settings.from_env({}).exercise_cache_ttl == 5
    assert Settings.from_env({"EXERCISE_CACHE_SECONDS": "0"}).exercise_cache_ttl == 0
