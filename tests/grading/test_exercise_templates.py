"""Every exercise template is a sound exercise: it passes the format's checks and the proof
(the reference in the sandbox, each wrong file failing as it declares, the starter running), so
that an author who starts from one starts from an exercise that can be published."""

from __future__ import annotations

import pytest

from service.catalog.exercise_templates import KINDS, exercise_templates
from service.catalog.loader import exercise_from_files
from service.catalog.proof import prove

TEMPLATES = {t.kind: t for t in exercise_templates()}


def test_one_template_per_kind():
    assert tuple(TEMPLATES) == KINDS
    assert {"reference.py", "starter.py", "wrong/forgot_grad_output.py"} <= set(TEMPLATES["code"].files)


@pytest.mark.parametrize("kind", KINDS)
def test_template_is_proven(kind, judge):
    template = TEMPLATES[kind]
    exercise, problems = exercise_from_files(template.slug, {p: t.encode() for p, t in template.files.items()})
    assert problems == [] and exercise is not None
    assert exercise.spec["kind"] == kind
    report = prove(judge if kind == "code" else None, {"slug": template.slug, "spec": exercise.spec, "files": exercise.files})
    assert report.passed, [str(p) for p in report.problems]
    if kind == "code":  # proven in the sandbox: the reference, the wrong file and the starter each ran
        assert len(report.steps) >= 3
