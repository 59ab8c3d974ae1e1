"""The assessment rules as marshmallow schemas, built from service/rules.py's table: a layer as
written (exercise.toml's [rules] table and the admin API's body: the one definition of a valid
rule) and the rules in force as the API shows them.

Apart from service/schemas/ because the catalog checks exercise.toml with the layer schema, and
service/schemas/ reads the catalog's names (kinds, topics): the two packages would import each
other. service/rules.py itself stays free of marshmallow.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from .rules import CHOICE, COUNT, DATETIME, FRACTION, FRACTIONS, RULES, SWITCH, Rule

IN_ZERO_ONE = validate.Range(min=0, max=1)


def rule_field(rule: Rule, *, in_force: bool = False) -> fields.Field:
    """The field of `rule` in a layer (optional, its value checked), or (`in_force`) in the rules
    in force (always there, shown as they are)."""
    common: dict[str, Any] = {"allow_none": rule.nullable, "metadata": {"description": rule.help}}
    if in_force:
        common["required"] = True
    if rule.kind == COUNT:
        return fields.Integer(validate=None if in_force else validate.Range(min=rule.minimum, max=rule.maximum), **common)
    if rule.kind == FRACTION:
        return fields.Float(validate=None if in_force else IN_ZERO_ONE, **common)
    if rule.kind == FRACTIONS:
        if in_force:
            return fields.List(fields.Float(), **common)
        return fields.List(fields.Float(validate=IN_ZERO_ONE), validate=validate.Length(min=rule.minimum, max=rule.maximum),
                           **common)
    if rule.kind == DATETIME:
        return fields.DateTime(**common) if in_force else fields.AwareDateTime(**common)
    if rule.kind == CHOICE:
        return fields.String(validate=validate.OneOf([choice.value for choice in rule.choices]), **common)
    if rule.kind == SWITCH:
        return fields.Boolean(**common)
    raise ValueError(f"rule {rule.name}: no field for kind {rule.kind!r}")


class RulesLayerSchema(Schema):
    """What one layer of rules may set: a field for each rule of the table. Every key is
    optional: a layer sets only what it changes."""

    class Meta:
        include = {rule.name: rule_field(rule) for rule in RULES}

    @pre_load
    def _toml_datetimes(self, data: Any, **_kwargs: Any) -> Any:
        # exercise.toml writes dates as TOML datetimes: read them as the API's ISO strings.
        if isinstance(data, dict):
            return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in data.items()}
        return data

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if "attempt_maxima" in data and "attempt_penalty" in data:
            raise ValidationError("Give attempt_penalty or attempt_maxima, not both.", "attempt_maxima")
        opens, due = data.get("available_from"), data.get("due_at")
        if opens is not None and due is not None and opens >= due:
            raise ValidationError("Must be before due_at.", "available_from")


class RulesOutSchema(Schema):
    """Rules in force (every key), as the API shows them."""

    class Meta:
        include = {rule.name: rule_field(rule, in_force=True) for rule in RULES}
