"""Work every request would repeat, done once per process instead (service/__init__.py `App`,
service/resources/blueprint.py, service/database.py's read-only sessions)."""

from __future__ import annotations

import json

import pytest
from marshmallow import Schema
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from service.database import engine_for
from service.extensions import close_db_session, db_session
from tests.helpers import bearer


@pytest.fixture()
def schemas_built(monkeypatch):
    """The names of the marshmallow schemas built from now on."""
    built: list[str] = []
    original = Schema.__init__

    def counting_init(self, *args, **kwargs):
        built.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Schema, "__init__", counting_init)
    return built


def test_a_request_builds_no_argument_schema(client, schemas_built):
    # the exercise detail's query arguments (?learner=) are read through ExerciseDetailQuerySchema
    response = client.get("/api/v1/exercises/call-through-apply?learner=")
    assert response.status_code in (200, 401, 422)
    assert "ExerciseDetailQuerySchema" not in schemas_built


def test_a_paginated_request_builds_no_schema(client, client_key, schemas_built):
    # flask-smorest gives its page parameters as a schema class and builds the X-Pagination header's
    # schema each time; the arguments, the response and the header are all read or written here.
    for answer in ("omit", "none-each"):
        assert client.post("/api/v1/exercises/backward-none-for-bounds/attempts", headers=bearer(client_key),
                           json={"learner": "ada", "answer": answer}).status_code == 201
    path = "/api/v1/learners/ada/attempts?exercise=backward-none-for-bounds&page=2&page_size=1"
    first = client.get(path, headers=bearer(client_key))
    assert first.status_code == 200 and first.headers["X-Pagination"]
    schemas_built.clear()  # the first request may build what is built once per process
    again = client.get(path, headers=bearer(client_key))
    assert again.status_code == 200 and again.json == first.json and len(again.json["attempts"]) == 1
    assert json.loads(again.headers["X-Pagination"]) == {"total": 2, "total_pages": 2, "first_page": 1, "last_page": 2,
                                                          "page": 2, "previous_page": 1}
    assert schemas_built == []


def test_the_history_reuses_its_statements_and_makes_no_orm_object_per_attempt(app, client, client_key,
                                                                               database_url):
    # Building the history's statements (and SQLAlchemy's cache key of each) at every request, and
    # an ORM object per attempt, were about a third of its CPU (issue 37): every API key's request
    # of a shape runs the same statement objects, and the page is read as rows.
    from service.models import Attempt

    for learner in ("ada", "bob"):
        for answer in ("omit", "none-each"):
            assert client.post("/api/v1/exercises/backward-none-for-bounds/attempts", headers=bearer(client_key),
                               json={"learner": learner, "answer": answer}).status_code == 201
    executed: dict[str, list[object]] = {}
    loaded = []
    engine = engine_for(database_url)

    def record(_conn, clause, *_rest):
        if str(clause).lstrip().startswith("SELECT"):
            executed.setdefault(current, []).append(clause)  # kept: an id() of a freed one is reused

    event.listen(engine, "before_execute", record)

    def load(target, _context):
        loaded.append(target)

    event.listen(Attempt, "load", load)
    try:
        for current in ("ada", "bob"):
            history = client.get(f"/api/v1/learners/{current}/attempts", headers=bearer(client_key))
            assert history.status_code == 200 and len(history.json["attempts"]) == 2
            assert {attempt["learner"] for attempt in history.json["attempts"]} == {current}
    finally:
        event.remove(engine, "before_execute", record)
        event.remove(Attempt, "load", load)
    assert loaded == []
    ada, bob = executed["ada"], executed["bob"]
    assert sum(any(a is b for b in bob) for a in ada) >= 2, (ada, bob)  # the best scores and the page


def test_a_request_asks_inspect_nothing_about_its_views_and_hooks(client, monkeypatch):
    import flask.app

    asked = []
    original = flask.app.iscoroutinefunction
    monkeypatch.setattr(flask.app, "iscoroutinefunction", lambda func: asked.append(func) or original(func))
    assert client.get("/api/v1/exercises/call-through-apply").status_code == 200
    assert asked == []  # Flask alone asks it of the view and each of the request's hooks


def test_plain_views_and_hooks_are_used_as_they_are_and_coroutines_still_go_to_flask(app):
    def view():
        return "ok"

    class Hooks:
        def after(self, response):
            return response

    hooks = Hooks()
    assert app.ensure_sync(view) is view
    assert app.ensure_sync(hooks.after) == hooks.after

    async def asynchronous():
        return "ok"

    try:
        wrapped = app.ensure_sync(asynchronous)
    except RuntimeError as exc:  # Flask's own answer when its async extra is not installed
        assert "async" in str(exc)
    else:
        assert wrapped is not asynchronous and wrapped() == "ok"


def test_documented_responses_add_no_layer_around_a_view(app, client):
    import flask_smorest

    # The code of the function flask-smorest's alt_response puts around a view, which only calls it.
    alt_layer = flask_smorest.Blueprint("probe", __name__).alt_response(418)(lambda: None).__code__
    endpoint, _ = app.url_map.bind("localhost").match("/api/v1/exercises/clamp-function/attempts", method="POST")
    view = app.view_functions[endpoint].view_class.post
    layers = []
    while view is not None:
        layers.append(view.__code__)
        view = getattr(view, "__wrapped__", None)
    assert alt_layer not in layers
    # ... and the responses are documented all the same: the 202 and the problems (docs.problems).
    responses = client.get("/api/v1/openapi.json").json["paths"]["/api/v1/exercises/{slug}/attempts"]["post"]["responses"]
    assert {"202", "401", "409", "415", "422"} <= responses.keys()
    assert "problem+json" in next(iter(responses["415"]["content"]))


@pytest.mark.backends("postgresql")
def test_a_get_reads_in_a_read_only_transaction_that_ends_in_commit(app, client, client_key, database_url):
    # psycopg forgets every prepared statement of a connection at a ROLLBACK: GETs ending in one
    # had each pooled connection plan every statement again (service/database.py ReadOnlySession).
    engine = engine_for(database_url)
    ends: list[str] = []
    on_commit, on_rollback = (lambda _conn: ends.append("commit")), (lambda _conn: ends.append("rollback"))
    event.listen(engine, "commit", on_commit)
    event.listen(engine, "rollback", on_rollback)
    try:
        assert client.get("/api/v1/learners/ada/attempts", headers=bearer(client_key)).status_code == 200
    finally:
        event.remove(engine, "commit", on_commit)
        event.remove(engine, "rollback", on_rollback)
    assert ends == ["commit"]

    with app.test_request_context("/api/v1/exercises", method="GET"):
        session = db_session()
        assert session.execute(text("SHOW transaction_read_only")).scalar() == "on"
        with pytest.raises(DBAPIError, match="read-only transaction"):  # a GET cannot write
            session.execute(text("CREATE TEMPORARY TABLE written_by_a_get (id integer)"))
        close_db_session()
    with app.test_request_context("/api/v1/exercises", method="POST"):
        assert db_session().execute(text("SHOW transaction_read_only")).scalar() == "off"
        close_db_session()


@pytest.mark.backends("postgresql")
def test_a_get_marked_as_writing_writes(app, client):
    # GET /lti/jwks makes the tool's first signing key (extensions.writes_on_get)
    keys = client.get("/lti/jwks")
    assert keys.status_code == 200 and len(keys.json["keys"]) == 1
    # The mark belongs to the route, not to the view's call: a session opened before the view runs
    # (by a hook) is a writer's too.
    with app.test_request_context("/lti/jwks", method="GET"):
        assert db_session().execute(text("SHOW transaction_read_only")).scalar() == "off"
        close_db_session()


@pytest.mark.backends("postgresql")
def test_a_method_view_marked_as_writing_writes(app):
    from flask.views import MethodView

    from service.extensions import writes_on_get

    class Marked(MethodView):
        @writes_on_get
        def get(self) -> str:
            return ""

    class Unmarked(MethodView):
        def get(self) -> str:
            return ""

    app.add_url_rule("/marked-writer", view_func=Marked.as_view("marked_writer"))
    app.add_url_rule("/unmarked-reader", view_func=Unmarked.as_view("unmarked_reader"))
    for path, method, read_only in (("/marked-writer", "GET", "off"), ("/marked-writer", "HEAD", "off"),
                                    ("/unmarked-reader", "GET", "on")):
        with app.test_request_context(path, method=method):
            assert db_session().execute(text("SHOW transaction_read_only")).scalar() == read_only, (path, method)
            close_db_session()
