"""The `diagnosis` of a code attempt and of a run (service/grading/diagnosis.py): what a result
opens with, made from the stored report when it is read."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from ..grading.diagnosis import diagnose_grade, diagnose_run
from ..models import AttemptStatus
from .terms import CauseTermSchema


class DiagnosisSchema(Schema):
    """One verdict line, the likely cause and one failing case, in the learner's terms."""

    passed = fields.Boolean(required=True, metadata={"description": "Every check passed (for a run: on its inputs)"})
    headline = fields.String(required=True, metadata={
        "description": "The one verdict line a result opens with (no score), e.g. \"Not yet: your backward's "
                       "gradients are wrong.\""})
    cause = fields.Nested(CauseTermSchema, allow_none=True, required=True, metadata={
        "description": "The likely cause, with what to do (null: none named)"})
    example = fields.String(allow_none=True, required=True, metadata={
        "description": "The one failing case that shows the cause, in the learner's terms, e.g. \"At x = 0.77 your "
                       "backward gives 1; the derivative there is 0.\" (null: none)"})
    failed_checks = fields.List(fields.String(), required=True, metadata={
        "description": "The names of the checks that failed, in order (their titles: GET /api/v1/terms)"})


def attempt_diagnosis(attempt: Any, report: Any) -> dict[str, Any] | None:
    """A code attempt's diagnosis: null for a quiz and until graded; the grader's failure in words."""
    if attempt.code is None or attempt.status not in (AttemptStatus.GRADED.value, AttemptStatus.ERROR.value):
        return None
    if attempt.status == AttemptStatus.ERROR.value:
        return diagnose_grade({"status": "internal_error"})
    return diagnose_grade(report)


def run_diagnosis(run: Any) -> dict[str, Any] | None:
    """A finished run's diagnosis (null until then, and when the sandbox itself failed)."""
    return diagnose_run(run.result) if run.status == "graded" else None
