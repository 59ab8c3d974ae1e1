"""Work every request would repeat, done once per process instead (service/__init__.py `App`,
service/resources/blueprint.py)."""

from __future__ import annotations

from marshmallow import Schema


def test_a_request_builds_no_argument_schema(client, monkeypatch):
    built = []
    original = Schema.__init__

    def counting_init(self, *args, **kwargs):
        built.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Schema, "__init__", counting_init)
    # the exercise detail's query arguments (?learner=) are read through ExerciseDetailQuerySchema
    response = client.get("/api/v1/exercises/call-through-apply?learner=")
    assert response.status_code in (200, 401, 422)
    assert "ExerciseDetailQuerySchema" not in built


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
