"""The server's verdict names (service/models/attempt.py VERDICTS), which the dashboard reads from
/admin/vocabulary.js, are the verdicts the manual lists (docs/grading.md#verdicts)."""

from __future__ import annotations

import re

from service.config import PROJECT_ROOT
from service.models.attempt import VERDICTS


def test_the_verdicts_are_those_the_manual_lists():
    manual = (PROJECT_ROOT / "docs" / "grading.md").read_text()
    section = manual.split("\n## Verdicts\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)` \|", section, re.M)
    assert listed, "no table of verdicts in docs/grading.md"
    # passed and failed are in the paragraph above the table; the table has the others.
    assert "`passed`" in section and "`failed`" in section
    assert sorted(VERDICTS) == sorted({"passed", "failed", *listed})
    assert len(VERDICTS) == len(set(VERDICTS))
