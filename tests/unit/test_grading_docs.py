"""docs/grading.md's tables say what the registry and the terms say: every check a grade can make,
in report order, and every likely cause."""

from __future__ import annotations

import re

from service.config import PROJECT_ROOT
from service.grading import registry, terms

MANUAL = (PROJECT_ROOT / "docs" / "grading.md").read_text()


def _first_column(heading: str, first: str) -> list[str]:
    section = MANUAL.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    names = [re.match(r"\| `([a-z0-9_]+)`", line).group(1) for line in rows]  # type: ignore[union-attr]
    assert names and names[0] == first, names[:3]
    return names


def test_the_checks_table_lists_every_grade_check_in_report_order():
    assert _first_column("The checks", "parses") == [c.name for c in registry.GRADE_CHECKS]


def test_the_causes_table_lists_every_likely_cause_in_the_terms_words():
    assert _first_column("Likely causes", "forgot_grad_output") == list(terms.CAUSES)
    for cause in terms.CAUSES.values():
        assert f"| `{cause.name}` | {cause.title} | {cause.advice} |" in MANUAL, cause.name
