"""One attempt in full, for the grading dashboard: its summary, what was submitted, the grader's
report, the timings, and what became of its grade (events, webhook deliveries, LMS passbacks,
overrides).

Each part is a dataclass with the fields of its schema in service/schemas/admin_attempts.py
(tests/api/test_admin_attempts.py checks that they match); a field that is a column of the row
of the same name is copied from it, the others are given.

No Flask here: the resource in service/resources/admin_attempts.py calls `attempt_detail`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from ..models import ApiClient, Attempt, AttemptEvent, GradeOverride, ScorePassback, WebhookDelivery
from ..scoring import scoring_json
from .names import attempt_learner

T = TypeVar("T")


def _from_row(cls: type[T], row: Any, **given: Any) -> T:
    """A `cls` whose fields are the `given` values, and for the rest `row`'s columns of the same
    name (only columns: a property of the model, such as Attempt.report, must be given)."""
    columns = inspect(type(row)).column_attrs.keys()
    unknown = [f.name for f in fields(cls) if f.name not in given and f.name not in columns]  # type: ignore[arg-type]
    if unknown:
        raise TypeError(f"{cls.__name__}: no column {', '.join(unknown)} on {type(row).__name__}; give it")
    return cls(**{f.name: given[f.name] if f.name in given else getattr(row, f.name)
                  for f in fields(cls)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class EventEntry:
    id: int
    type: str
    created_at: datetime
    data: dict[str, Any]


@dataclass(frozen=True)
class DeliveryState:
    """A webhook delivery of one of the attempt's events."""

    id: int
    endpoint_id: int
    event_id: int
    event_type: str
    status: str
    tries: int
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None


@dataclass(frozen=True)
class PassbackState:
    """A score passback to the LMS the attempt was launched from."""

    id: int
    event_id: int
    link_id: int
    status: str
    tries: int
    last_status_code: int | None
    last_error: str | None
    sent_score: dict[str, Any] | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None


@dataclass(frozen=True)
class OverrideEntry:
    id: int
    actor: str
    old_score: float | None
    new_score: float
    reason: str
    learner_comment: str | None
    created_at: datetime


@dataclass(frozen=True)
class Timings:
    created_at: datetime
    started_at: datetime | None
    graded_at: datetime | None
    queued_ms: float | None
    grading_ms: float | None
    # The judge's own timings (code): child_ms, judge_ms, wait_slot_ms, total_ms…
    report: dict[str, Any]


@dataclass(frozen=True)
class AttemptDetail:
    # The summary, as the search lists it.
    id: uuid.UUID
    exercise: str
    exercise_version: int
    client: str | None
    learner: str
    # Their name in the attempt's course (service/services/names.py); None where no roster names them.
    learner_name: str | None
    learner_email: str | None
    learner_status: str | None
    status: str
    verdict: str | None
    likely_cause: str | None
    score: float | None
    grader_score: float | None
    overridden: bool
    correct: bool | None
    created_at: datetime
    started_at: datetime | None
    graded_at: datetime | None
    # The scoring policy it was graded under and what it did (service/scoring.py); None before 0024.
    scoring: dict[str, Any] | None
    # The exercise, the grading job.
    exercise_kind: str
    exercise_version_digest: str
    tries: int
    lti_link_id: int | None
    request_id: str | None
    # What was submitted.
    answer: Any
    code: str | None
    # What the grader said (a code attempt's report; a quiz attempt has feedback only).
    report_status: str | None
    grader_version: str | None
    checks: list[dict[str, Any]]
    likely_causes: list[str]
    diagnostics: list[dict[str, Any]]
    error: dict[str, Any] | None
    feedback: list[Any]
    output: dict[str, Any] | None
    timings: Timings
    # What became of the grade, each oldest first.
    events: list[EventEntry]
    webhook_deliveries: list[DeliveryState]
    passbacks: list[PassbackState]
    overrides: list[OverrideEntry]


def attempt_detail(session: Session, attempt_id: uuid.UUID, course_id: int | None = None) -> AttemptDetail | None:
    """One attempt in full; None when there is no such attempt (in course `course_id`, if given)."""
    attempt = session.get(Attempt, attempt_id)
    if attempt is None or (course_id is not None and attempt.course_id != course_id):
        return None
    result = attempt.result or {}
    # Code attempts carry the judge's report; quiz attempts only feedback.
    report = attempt.report or {}
    named = attempt_learner(session, attempt)
    return _from_row(
        AttemptDetail, attempt,
        learner_name=named.name, learner_email=named.email, learner_status=named.status,
        exercise=attempt.exercise.slug,
        scoring=scoring_json(attempt.scoring, attempt.result, attempt.grader_score, attempt.code is not None),
        exercise_kind=attempt.exercise.kind,
        exercise_version=attempt.exercise_version.number,
        exercise_version_digest=attempt.exercise_version.digest,
        client=session.scalar(select(ApiClient.name).where(ApiClient.id == attempt.client_id)),
        report_status=report.get("status"),
        grader_version=report.get("grader_version"),
        checks=report.get("checks") or [],
        likely_causes=report.get("likely_causes") or [],
        diagnostics=report.get("diagnostics") or [],
        error=report.get("error"),
        feedback=result.get("feedback") or [],
        output=report.get("output"),
        timings=Timings(
            created_at=attempt.created_at,
            started_at=attempt.started_at,
            graded_at=attempt.graded_at,
            queued_ms=_ms_between(attempt.created_at, attempt.started_at),
            grading_ms=_ms_between(attempt.started_at, attempt.graded_at),
            report=report.get("timings") or {},
        ),
        events=[_from_row(EventEntry, e) for e in session.scalars(
            select(AttemptEvent).where(AttemptEvent.attempt_id == attempt.id).order_by(AttemptEvent.id))],
        webhook_deliveries=[_from_row(DeliveryState, d, event_type=event_type) for d, event_type in session.execute(
            select(WebhookDelivery, AttemptEvent.type).join(AttemptEvent, AttemptEvent.id == WebhookDelivery.event_id)
            .where(AttemptEvent.attempt_id == attempt.id).order_by(WebhookDelivery.id))],
        passbacks=[_from_row(PassbackState, p) for p in session.scalars(
            select(ScorePassback).where(ScorePassback.attempt_id == attempt.id).order_by(ScorePassback.id))],
        overrides=[_from_row(OverrideEntry, o) for o in session.scalars(
            select(GradeOverride).where(GradeOverride.attempt_id == attempt.id).order_by(GradeOverride.id))],
    )


def _ms_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000, 3)
