"""The rule table (service/rules.py RULES) is the one list of the assessment rules: the schemas
are built from it, the manual lists each rule with its default, the layers apply in `layers()`'s
order, and the learner's words come from it."""

from __future__ import annotations

import re

import pytest
from marshmallow import ValidationError

from service.config import PROJECT_ROOT
from service.rule_schemas import RulesLayerSchema, RulesOutSchema
from service.rules import COUNT, DEFAULT_RULES, FRACTION, RULES, layers, resolve


def test_the_schemas_have_a_field_for_each_rule():
    names = [rule.name for rule in RULES]
    assert list(RulesLayerSchema().fields) == names
    assert list(RulesOutSchema().fields) == names
    assert RulesOutSchema().dump(DEFAULT_RULES) == DEFAULT_RULES.as_json()


@pytest.mark.parametrize("rule", [rule for rule in RULES if rule.kind in (COUNT, FRACTION)], ids=lambda rule: rule.name)
def test_a_layer_is_checked_within_the_table_bounds(rule):
    low, high = (rule.minimum, rule.maximum) if rule.kind == COUNT else (0, 1)
    schema = RulesLayerSchema()
    assert schema.load({rule.name: low}) == {rule.name: low}
    assert schema.load({rule.name: high}) == {rule.name: high}
    for outside in (low - 1, high + 1):
        with pytest.raises(ValidationError) as refused:
            schema.load({rule.name: outside})
        assert rule.name in refused.value.messages


@pytest.mark.parametrize("rule", [rule for rule in RULES if rule.choices and isinstance(rule.default, str)],
                         ids=lambda rule: rule.name)
def test_a_choice_takes_only_the_table_values(rule):
    for choice in rule.choices:
        assert RulesLayerSchema().load({rule.name: choice.value}) == {rule.name: choice.value}
    with pytest.raises(ValidationError):
        RulesLayerSchema().load({rule.name: "sometimes"})


def test_the_manual_lists_each_rule_with_its_default():
    manual = (PROJECT_ROOT / "docs" / "rules.md").read_text()
    section = manual.split("\n## The rules\n", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+?) \|", section, re.M))
    assert list(listed) == [rule.name for rule in RULES]
    for rule in RULES:
        default = rule.none if rule.default is None else f"`{str(rule.default).lower()}`".replace("`0.0`", "`0`")
        assert listed[rule.name] == default, rule.name


def test_later_layers_win_in_the_order_layers_gives():
    names = ("exercise", "staff", "lms", "lms_learner", "extension")
    for index in range(len(names)):
        # Each layer sets max_attempts to its position: the last layer present wins.
        present = {n: {"max_attempts": i + 1} for i, n in enumerate(names) if i <= index}
        assert resolve(layers(**{n: present.get(n) for n in names})).max_attempts == index + 1


def test_the_learner_reads_the_table_words_for_the_explanation():
    show = next(rule for rule in RULES if rule.name == "show_explanation")
    for choice in show.choices:
        notes = resolve([{"show_explanation": choice.value}]).learner_notes
        assert [(note.term, note.text) for note in notes] == [("Explanation", choice.learner)]
