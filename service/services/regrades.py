"""Regrades: the graded attempts of an exercise (or one attempt) graded again, against the
exercise's current version, after its grader or answer key changed; in every course, or in one
(`Regrade.course_id`: a course's staff regrade their course's attempts only, and see only their
course's regrades).

A regrade is first a dry run: one RegradeItem per attempt, graded by the grading workers like any
job (`grade_item`), changing nothing on the attempts. Once every item is finished the regrade is
ready and shows what would change; applying it stores the new grades on the attempts, in chunks
of APPLY_CHUNK per transaction, each changed attempt with an `attempt.regraded` event (webhooks,
LTI passback and the statistics follow). The apply request applies for APPLY_REQUEST_SECONDS at
most; the grading workers, when they have nothing to grade, finish what is left. No Flask here; no
torch either (the judge is passed in).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, insert, literal, or_, select, update
from sqlalchemy.orm import Session, contains_eager

from ..logs import current_request_id
from ..models import (
    REGRADED_EVENT,
    ApiClient,
    Attempt,
    AttemptStatus,
    Exercise,
    ExerciseVersion,
    Regrade,
    RegradeItem,
)
from ..models.attempt import grade_columns
from ..models.base import utcnow
from ..quiz import AnswerError
from ..rules import counted_score
from ..scoring import code_grade, policy_score
from ..variants import regrade_quiz_answer
from . import preparations, progress
from .events import record_attempt_event

# Stored statuses of a regrade; READY is never stored: a dry run whose items are all finished is ready.
DRY_RUN, READY, APPLYING, APPLIED = "dry_run", "ready", "applying", "applied"
QUEUED, RUNNING, GRADED, ERROR = (s.value for s in AttemptStatus)
#: Items applied per transaction. Each changed attempt's event updates the exercise's statistics
#: counters in the same transaction, so a chunk holds the exercise's counter row (a grade of a new
#: attempt at the exercise waits for it): a small chunk keeps that wait under a second.
APPLY_CHUNK = 100
#: How long an apply request applies before it answers (202, applying): the workers finish it.
APPLY_REQUEST_SECONDS = 5.0
#: How long a grading worker with nothing to grade applies before it looks for jobs again.
APPLY_WORKER_SECONDS = 1.0
#: Quiz items graded together in one transaction, beside the claimed one.
QUIZ_BATCH = 500
#: Changed attempts a regrade lists (the biggest changes first); the summary counts them all.
MAX_CHANGES = 500
#: Items that could not be graded, listed with their message.
MAX_ERRORS = 100
NOT_GRADABLE = "not_gradable"


class NothingToRegrade(Exception):
    """The exercise has no graded attempt, or the attempt is not graded."""


# --- requesting -------------------------------------------------------------------------------


def _new_uuid(session: Session) -> Any:
    """A random UUID made by the database, for set-based inserts (stored as each backend stores Uuid)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.gen_random_uuid()
    return func.lower(func.hex(func.randomblob(16)))  # SQLite: Uuid is 32 hex digits


def request_regrade(session: Session, exercise: Exercise, actor: str, attempt: Attempt | None = None,
                    course_id: int | None = None) -> Regrade:
    """A dry run of every graded attempt of `exercise` (or of `attempt` alone) against its current
    version, with its items queued for the workers; the caller commits (and may dispatch).

    `course_id` limits it to that course's attempts (a course's staff, or staff asking for one
    course); a regrade of one attempt belongs to the attempt's course. The items are made by one
    INSERT ... SELECT, however many attempts there are. Raises NothingToRegrade when there is no
    graded attempt to regrade.
    """
    graded = select(Attempt.id).where(Attempt.exercise_id == exercise.id, Attempt.status == GRADED)
    if attempt is not None:
        graded = graded.where(Attempt.id == attempt.id)
        course_id = attempt.course_id
    elif course_id is not None:
        graded = graded.where(Attempt.course_id == course_id)
    if session.scalar(graded.limit(1)) is None:
        raise NothingToRegrade(exercise.slug if attempt is None else str(attempt.id))
    now = utcnow()
    regrade = Regrade(id=uuid.uuid4(), exercise_id=exercise.id, exercise_version_id=exercise.version.id,
                      status=DRY_RUN, requested_by=actor, attempt_id=attempt.id if attempt else None,
                      course_id=course_id, created_at=now)
    session.add(regrade)
    session.flush()
    items = graded.with_only_columns(
        _new_uuid(session), literal(regrade.id, RegradeItem.regrade_id.type), Attempt.id, Attempt.grader_score,
        literal(QUEUED), literal(0), literal(now, RegradeItem.created_at.type),
        literal(current_request_id(), RegradeItem.request_id.type))
    session.execute(insert(RegradeItem).from_select(
        ["id", "regrade_id", "attempt_id", "old_score", "status", "tries", "created_at", "request_id"], items))
    return regrade


def first_items(session: Session, regrade: Regrade, limit: int) -> list[uuid.UUID]:
    return list(session.scalars(select(RegradeItem.id).where(RegradeItem.regrade_id == regrade.id).limit(limit)))


# --- grading (in the grading workers) ---------------------------------------------------------


def grade_item(judge: Any, item: RegradeItem) -> dict[str, Any]:
    """Column values of a graded regrade item: its attempt graded against the regrade's version.

    Code is graded by the judge, like a new attempt; raises GraderFault for the grader's own
    faults (retried like any job). Quiz kinds are pure and instant: with this item, up to
    QUIZ_BATCH more queued items of the regrade are graded in the same transaction (a claim per
    item would cost far more than the grading). An answer the version cannot grade (its choice
    was removed, the exercise changed kind) gets no new score.
    """
    session = Session.object_session(item)
    assert session is not None  # the item was loaded by the worker's session
    code, answer, stored, scoring, client_id, learner, version_id, digest = session.execute(
        select(Attempt.code, Attempt.answer, Attempt.result, Attempt.scoring, Attempt.client_id, Attempt.learner,
               Regrade.exercise_version_id, ExerciseVersion.digest)
        .join(RegradeItem, RegradeItem.attempt_id == Attempt.id).join(Regrade, Regrade.id == RegradeItem.regrade_id)
        .join(ExerciseVersion, ExerciseVersion.id == Regrade.exercise_version_id)
        .where(RegradeItem.id == item.id)).one()
    version = _version(session, version_id, digest)
    if version.spec["kind"] == "code" and code is not None:
        # The attempt's own variant: the hidden inputs of its learner, as when it was first graded.
        result = preparations.grade_in_variant(
            judge, preparations.connections(session), {"slug": version.slug, "spec": version.spec, "files": version.files},
            code, version_id=version_id, client_id=client_id, learner=learner,
            # This session's reads began a transaction (on SQLite, the write lock): nothing kept.
            keep=False)
        # Under the scoring policy the attempt was submitted with, as its penalties (not today's rules).
        score, correct = code_grade(scoring, result)
        return {"new_score": score, "new_correct": correct, "result": result}
    values = _grade_quiz(version, code, answer, stored, scoring)
    if version.spec["kind"] != "code":
        _grade_quiz_batch(session, item, version)
    return values


def _grade_quiz(version: _Version, code: str | None, answer: Any, stored: dict[str, Any] | None,
                scoring: dict[str, Any] | None) -> dict[str, Any]:
    kind = version.spec["kind"]
    if (kind == "code") != (code is not None):
        return _not_gradable(f"the attempt is not a {kind} answer")
    try:
        # In the variant the attempt's result kept (its choice order, its [params] values).
        grade = regrade_quiz_answer(version.spec, answer, stored)
    except AnswerError as exc:
        return _not_gradable(f"the answer does not fit version {version.number}: {exc}")
    return {"new_score": policy_score(scoring, grade.score, grade.correct), "new_correct": grade.correct,
            "result": grade.as_result()}


def _grade_quiz_batch(session: Session, item: RegradeItem, version: _Version) -> None:
    """Grade more queued quiz items of `item`'s regrade, in the transaction that stores `item`.

    The transaction is their lease: they go from queued to graded in it, or stay queued. A task
    the Celery backend sent for one of them finds it graded, and does nothing."""
    stmt = (select(RegradeItem.id, Attempt.code, Attempt.answer, Attempt.result, Attempt.scoring)
            .join(Attempt, Attempt.id == RegradeItem.attempt_id)
            .where(RegradeItem.regrade_id == item.regrade_id, RegradeItem.status == QUEUED).limit(QUIZ_BATCH))
    if _postgresql(session):
        stmt = stmt.with_for_update(of=RegradeItem.__table__, skip_locked=True)
    now = utcnow()
    graded = [{"id": item_id, "status": GRADED, "started_at": now, "graded_at": now, "tries": 1,
               **_grade_quiz(version, code, answer, stored, scoring)}
              for item_id, code, answer, stored, scoring in session.execute(stmt)]
    if graded:
        session.execute(update(RegradeItem), graded)


def _not_gradable(message: str) -> dict[str, Any]:
    return {"new_score": None, "new_correct": None, "result": {"status": NOT_GRADABLE, "message": message}}


@dataclass(frozen=True)
class _Version:
    slug: str
    number: int
    spec: dict[str, Any]
    files: dict[str, str]


# Versions are immutable (the same digest, the same content): a worker reads each one once, not
# once per item of a regrade of 100,000 attempts.
_versions: dict[tuple[int, str], _Version] = {}
_VERSIONS_KEPT = 32


def _version(session: Session, version_id: int, digest: str) -> _Version:
    version = _versions.get((version_id, digest))
    if version is None:
        slug, number, content = session.execute(
            select(Exercise.slug, ExerciseVersion.number, ExerciseVersion.content)
            .join(Exercise, Exercise.id == ExerciseVersion.exercise_id).where(ExerciseVersion.id == version_id)).one()
        if len(_versions) >= _VERSIONS_KEPT:
            _versions.clear()
        version = _versions[(version_id, digest)] = _Version(slug, number, content["spec"], content["files"])
    return version


# --- reading ----------------------------------------------------------------------------------


@dataclass
class Progress:
    """Counts of a regrade's items."""

    total: int = 0
    finished: int = 0
    errors: int = 0
    up: int = 0
    down: int = 0
    unchanged: int = 0
    applied: int = 0


def _direction() -> Any:
    return case((RegradeItem.status != GRADED, "pending"), (RegradeItem.new_score.is_(None), "error"),
                (RegradeItem.new_score > RegradeItem.old_score, "up"),
                (RegradeItem.new_score < RegradeItem.old_score, "down"), else_="unchanged")


def progress_of(session: Session, regrade_ids: list[uuid.UUID]) -> dict[uuid.UUID, Progress]:
    """Each regrade's counts, in one grouped query over their items."""
    found: dict[uuid.UUID, Progress] = {regrade_id: Progress() for regrade_id in regrade_ids}
    if not regrade_ids:
        return found
    direction = _direction().label("direction")
    rows = session.execute(
        select(RegradeItem.regrade_id, RegradeItem.status, direction, func.count(),
               func.count(RegradeItem.applied_at))
        .where(RegradeItem.regrade_id.in_(regrade_ids))
        .group_by(RegradeItem.regrade_id, RegradeItem.status, direction))
    for regrade_id, status, kind, count, applied in rows:
        counts = found[regrade_id]
        counts.total += count
        counts.applied += applied
        if status in (GRADED, ERROR):
            counts.finished += count
        if status == ERROR or kind == "error":
            counts.errors += count
        elif kind in ("up", "down", "unchanged"):
            setattr(counts, kind, getattr(counts, kind) + count)
    return found


def status_of(regrade: Regrade, counts: Progress) -> str:
    if regrade.status == DRY_RUN and counts.finished == counts.total:
        return READY
    return regrade.status


def describe_many(session: Session, regrades: list[Regrade]) -> list[dict[str, Any]]:
    """Regrades as the API lists them: one query for their counts, one for their versions."""
    counts = progress_of(session, [regrade.id for regrade in regrades])
    numbers = dict(session.execute(select(ExerciseVersion.id, ExerciseVersion.number).where(
        ExerciseVersion.id.in_({regrade.exercise_version_id for regrade in regrades}))).all()) if regrades else {}
    return [_summary(regrade, counts[regrade.id], numbers[regrade.exercise_version_id]) for regrade in regrades]


def describe(session: Session, regrade: Regrade) -> dict[str, Any]:
    """The regrade in full: its counts, the changed attempts (MAX_CHANGES, the biggest changes
    first) and the items that could not be graded (MAX_ERRORS)."""
    described = describe_many(session, [regrade])[0]
    described["kept_overrides"] = _kept_overrides(session, regrade) if regrade.status in (APPLYING, APPLIED) else 0
    described["changes"] = changes(session, regrade)
    described["error_items"] = error_items(session, regrade)
    return described


def _summary(regrade: Regrade, counts: Progress, version_number: int) -> dict[str, Any]:
    return {
        "id": regrade.id, "exercise": regrade.exercise.slug, "exercise_version": version_number,
        "attempt": regrade.attempt_id, "course": regrade.course_id, "status": status_of(regrade, counts),
        "requested_by": regrade.requested_by,
        "created_at": regrade.created_at, "applied_at": regrade.applied_at, "applied_by": regrade.applied_by,
        "total": counts.total, "graded": counts.finished, "errors": counts.errors,
        "summary": {"up": counts.up, "down": counts.down, "unchanged": counts.unchanged},
        "applied": counts.applied,
    }


def changes(session: Session, regrade: Regrade, limit: int = MAX_CHANGES) -> list[dict[str, Any]]:
    """The items whose score changed, the biggest changes first."""
    change = func.abs(RegradeItem.new_score - RegradeItem.old_score)
    # Ranked on the items alone, then the first `limit` joined: not every changed item with its report.
    top = (select(RegradeItem.id, change.label("change"))
           .where(RegradeItem.regrade_id == regrade.id, RegradeItem.status == GRADED,
                  RegradeItem.new_score.is_not(None), RegradeItem.new_score != RegradeItem.old_score)
           .order_by(change.desc(), RegradeItem.attempt_id).limit(limit).subquery())
    rows = session.execute(
        select(RegradeItem, Attempt.learner, Attempt.overridden, Attempt.code.is_not(None), ApiClient.name)
        .join(top, top.c.id == RegradeItem.id)
        .join(Attempt, Attempt.id == RegradeItem.attempt_id).join(ApiClient, ApiClient.id == Attempt.client_id)
        .order_by(top.c.change.desc(), RegradeItem.attempt_id))
    return [{"attempt": item.attempt_id, "learner": learner, "client": client, "old_score": item.old_score,
             "new_score": item.new_score, "overridden": overridden, "applied": item.applied_at is not None,
             "new_verdict": grade_columns(item.result, item.new_correct, is_code)["verdict"]}
            for item, learner, overridden, is_code, client in rows]


def error_items(session: Session, regrade: Regrade, limit: int = MAX_ERRORS) -> list[dict[str, Any]]:
    rows = session.execute(
        select(RegradeItem.attempt_id, RegradeItem.status, RegradeItem.result)
        .where(RegradeItem.regrade_id == regrade.id,
               or_(RegradeItem.status == ERROR, (RegradeItem.status == GRADED) & RegradeItem.new_score.is_(None)))
        .order_by(RegradeItem.attempt_id).limit(limit))
    return [{"attempt": attempt_id, "status": (result or {}).get("status", status),
             "message": (result or {}).get("message")} for attempt_id, status, result in rows]


def _kept_overrides(session: Session, regrade: Regrade) -> int:
    return session.scalars(
        select(func.count()).select_from(RegradeItem).join(Attempt, Attempt.id == RegradeItem.attempt_id)
        .where(RegradeItem.regrade_id == regrade.id, RegradeItem.applied_at.is_not(None), Attempt.overridden.is_(True))).one()


# --- applying ---------------------------------------------------------------------------------


class NotReady(Exception):
    """The regrade is not ready to apply (its items are still being graded)."""


def _postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def apply(session: Session, regrade: Regrade, actor: str, seconds: float | None = None,
          chunk: int | None = None) -> bool:
    """Store the new grades of a ready regrade on its attempts; True once it is applied.

    Applies chunks of `chunk` items for up to `seconds` (None: until done); what is left, the
    grading workers apply (`continue_applying`). Raises NotReady while items are being graded.
    Applying an applied regrade does nothing; applying one being applied helps it along.
    """
    if regrade.status == APPLIED:
        return True
    if regrade.status == DRY_RUN:
        counts = progress_of(session, [regrade.id])[regrade.id]
        if status_of(regrade, counts) != READY:
            raise NotReady(regrade.id)
        # From here on it is being applied, by whoever gets to it: this request, a worker, a retry.
        session.execute(update(Regrade).where(Regrade.id == regrade.id, Regrade.status == DRY_RUN)
                        .values(status=APPLYING, applied_by=actor))
        session.commit()
    finished = _apply_for(session, regrade.id, seconds, chunk)
    session.refresh(regrade)
    return finished


def continue_applying(session: Session, seconds: float, chunk: int | None = None) -> bool:
    """Go on applying a regrade whose apply did not finish in its request (or whose applier
    died), for up to `seconds`: the grading workers call it when they have nothing to grade.
    False when no regrade is being applied."""
    regrade_id = session.scalar(select(Regrade.id).where(Regrade.status == APPLYING)
                                .order_by(Regrade.created_at).limit(1))
    session.rollback()
    if regrade_id is None:
        return False
    _apply_for(session, regrade_id, seconds, chunk)
    return True


def _apply_for(session: Session, regrade_id: uuid.UUID, seconds: float | None, chunk: int | None) -> bool:
    deadline = None if seconds is None else time.monotonic() + seconds
    while not apply_chunk(session, regrade_id, chunk):
        if deadline is not None and time.monotonic() >= deadline:
            return False
    return True


def apply_chunk(session: Session, regrade_id: uuid.UUID, chunk: int | None = None) -> bool:
    """Apply the next `chunk` (default APPLY_CHUNK) items, in attempt id order after the regrade's cursor, in one
    transaction; True when there were none left (the regrade is then applied).

    An item's grade is stored when its new score differs from the attempt's grader score now
    (so of two regrades applied one after the other, the later one's grades stand): grader_score,
    correct, result, verdict and likely cause, and score too unless an instructor overrode it
    (the override stands), with an `attempt.regraded` event; the item is marked applied. The
    cursor (`applied_through`) moves in the same transaction: a crash loses nothing and applies
    nothing twice, and each chunk reads only its own items (the unique (regrade, attempt) index).
    """
    stmt = select(Regrade).where(Regrade.id == regrade_id).execution_options(populate_existing=True)
    # One applier at a time per regrade: the others wait for this chunk, then take the next one.
    regrade = session.scalar(stmt.with_for_update(of=Regrade.__table__) if _postgresql(session) else stmt)
    if regrade is None or regrade.status != APPLYING:
        session.rollback()
        return True
    window = select(RegradeItem.attempt_id).where(RegradeItem.regrade_id == regrade_id)
    if regrade.applied_through is not None:
        window = window.where(RegradeItem.attempt_id > regrade.applied_through)
    window_ids = list(session.scalars(window.order_by(RegradeItem.attempt_id).limit(chunk or APPLY_CHUNK)))
    now = utcnow()
    if not window_ids:
        regrade.status, regrade.applied_at = APPLIED, now
        session.commit()
        return True
    eager = contains_eager(RegradeItem.attempt)
    changed = (select(RegradeItem).join(RegradeItem.attempt)
               # Not the exercise and its versions, joined to every attempt by default.
               .options(eager.lazyload(Attempt.exercise), eager.lazyload(Attempt.exercise_version))
               .where(RegradeItem.regrade_id == regrade_id, RegradeItem.attempt_id.in_(window_ids),
                      RegradeItem.status == GRADED, RegradeItem.applied_at.is_(None),
                      RegradeItem.new_score.is_not(None),
                      or_(Attempt.grader_score.is_(None), RegradeItem.new_score != Attempt.grader_score))
               .order_by(RegradeItem.attempt_id).execution_options(populate_existing=True))
    if _postgresql(session):
        # An override of one of these attempts waits for this chunk. NO KEY UPDATE: rows that
        # refer to the attempts (events, deliveries) can still be written meanwhile.
        changed = changed.with_for_update(of=Attempt.__table__, key_share=True)
    for item in session.scalars(changed).unique():
        _store(session, item, now)
    regrade.applied_through = window_ids[-1]
    session.commit()
    return False


def _store(session: Session, item: RegradeItem, now: datetime) -> None:
    attempt = item.attempt
    previous = progress.grade_snapshot(attempt)
    attempt.grader_score, attempt.correct, attempt.result = item.new_score, item.new_correct, item.result
    for name, value in grade_columns(item.result, item.new_correct, attempt.code is not None).items():
        setattr(attempt, name, value)
    if not attempt.overridden:
        # Under the penalties the attempt was submitted with (its number, lateness), not today's rules;
        # new_score is under its stored scoring policy already (grade_item), as old_score was.
        attempt.score = counted_score(item.new_score, attempt.penalties)
    item.applied_at = now
    record_attempt_event(session, attempt_id=attempt.id, client_id=attempt.client_id, lti_link_id=attempt.lti_link_id,
                         type=REGRADED_EVENT, at=now, previous=previous, attempt=attempt,
                         data={"status": attempt.status, "score": attempt.score, "correct": attempt.correct})
