"""The HTTP layer: one thin blueprint per resource."""

from __future__ import annotations

from flask_smorest import Api

from ..schemas.attempts import AttemptCreateSchema
from . import (admin, admin_attempts, admin_grades, admin_stats, attempts, exercises, health, learner_tokens, learners,
               lti_admin, runs, webhooks)


def register_blueprints(api: Api) -> None:
    for module in (exercises, attempts, learners, learner_tokens, runs, webhooks, admin, admin_attempts, admin_stats,
                   admin_grades, lti_admin, health):
        api.register_blueprint(module.blp)
    # marshmallow cannot say "one of these two fields"; the spec can.
    api.spec.components.schemas["AttemptCreate"]["oneOf"] = AttemptCreateSchema.ONE_OF
