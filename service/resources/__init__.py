"""The HTTP layer: one thin blueprint per resource."""

from __future__ import annotations

from flask_smorest import Api

from ..schemas.request import document_requests
from . import (
    admin,
    admin_attempts,
    admin_grades,
    admin_rules,
    admin_stats,
    assignment,
    attempts,
    course_exercises,
    course_learners,
    courses,
    exercise_templates,
    exercises,
    git,
    health,
    learner_tokens,
    learners,
    lti_admin,
    preview,
    progress,
    rosters,
    rules,
    runs,
    terms,
    webhooks,
)
from .paths import register_converters


def register_blueprints(api: Api) -> None:
    document_requests(api.ma_plugin.converter)
    register_converters(api)
    for module in (exercises, attempts, assignment, progress, learners, learner_tokens, runs, rules, terms, webhooks, admin,
                   admin_attempts, admin_stats, admin_grades, admin_rules, courses, course_exercises, course_learners, preview,
                   rosters, git, lti_admin, exercise_templates, health):
        api.register_blueprint(module.blp)
    _document_rules_between_fields(api)


def _document_rules_between_fields(api: Api) -> None:
    """marshmallow checks a rule between fields in code (validates_schema: "both or neither"); a
    schema class states the same rule for the document in JSON_SCHEMA (dependentRequired, not...),
    merged here into its component; its "properties" add to the fields' own (what apispec cannot
    say of a field: the names a dict's keys follow, propertyNames). ("One of these two" is a body of
    two shapes: ONE_OF, in blueprint.Blueprint.)"""
    components = api.spec.components.schemas
    for key, name in api.ma_plugin.converter.refs.items():
        extra = dict(getattr(key[0], "JSON_SCHEMA", None) or {})
        if extra and name in components:
            for field, more in extra.pop("properties", {}).items():
                components[name]["properties"][field].update(more)
            components[name].update(extra)
