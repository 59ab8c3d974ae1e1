"""The HTTP layer: one thin blueprint per resource."""

from __future__ import annotations

from flask_smorest import Api

from . import attempts, exercises, health, learners, runs


def register_blueprints(api: Api) -> None:
    for module in (exercises, attempts, learners, runs, health):
        api.register_blueprint(module.blp)
