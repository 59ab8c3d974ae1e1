"""Each learner's reference results of a code exercise, made before their first grade (issue 37).

A learner's grade of a code exercise version compares their code with the reference on their own
hidden inputs (service/variants.py). The judge keeps the reference's results per variant in memory
(grading/references.py); without them, a learner's first grade first ran the reference twice, and
at a deadline a whole class pays that at once. So:

- When a learner token or an LTI launch names code exercises, `request` queues a
  VariantPreparation per exercise version the learner has none of: a job of the grading workers,
  behind the learners' own attempts and runs (worker.HANDLERS' order; Celery's background queue).
- The worker's `prepare` has its judge run the reference and stores the result in the row.
- A grade (`grade_in_variant`) that finds its variant missing in the judge's memory reads the row
  and has the judge rebuild from it, running no reference (about 1 ms against 25 ms); when there
  is none yet, the judge runs the reference as before and the grade stores it for the next worker
  or restart.

Stored results are keyed by the judge's secret and their form, and carry the digest of the cases
they answer: a worker with another secret, or whose cases are drawn otherwise (an upgrade), runs
the reference again (and stores its own). Rows are small (about 9 KB for ClampFn,
docs/performance.md) but there is one per learner and version: they go when another version of
their exercise becomes current (models.preparation.forget_superseded), and with a deleted course
exercise.

Web-safe: the web process queues, the worker prepares; nothing here imports torch.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, and_, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from ..database import READ_ONLY, upsert_insert
from ..logs import current_request_id
from ..models import Exercise, ExerciseVersion, VariantPreparation
from ..models.attempt import AttemptStatus
from ..models.base import utcnow
from ..models.preparation import WAITING
from ..variants import variant_key

if TYPE_CHECKING:
    from ..grading.references import StoredReference

log = logging.getLogger("gradquiz.preparations")
QUEUED, RUNNING, GRADED = AttemptStatus.QUEUED.value, AttemptStatus.RUNNING.value, AttemptStatus.GRADED.value
PREPARED = "prepared"
#: At most this many of a client's preparations wait at once; past it, a token or launch queues
#: none (those learners' first grades run the reference, as before preparations). A class of 200
#: naming 10 code exercises queues 2,000; an integration minting tokens for many learner ids cannot
#: fill the workers' queue ahead of everyone's regrades.
MAX_QUEUED_PER_CLIENT = 10_000


def request(session: Session, client_id: int, learner: str, slugs: Collection[str]) -> list[uuid.UUID]:
    """Queue the preparation of the learner's variant of each published code exercise of `slugs`
    (its current version) that has none; returns the new jobs' ids, to dispatch once committed.

    Two reads when every one is there already (a token minted again), and no write; a third, of
    the client's waiting ones, before queueing (at most MAX_QUEUED_PER_CLIENT wait)."""
    if not slugs:
        return []
    versions = select(ExerciseVersion.id).join(Exercise, and_(
        Exercise.id == ExerciseVersion.exercise_id, ExerciseVersion.number == Exercise.current_version)).where(
        Exercise.slug.in_(slugs), Exercise.kind == "code", Exercise.published.is_(True))
    wanted = set(session.scalars(versions))
    if not wanted:
        return []
    wanted -= set(session.scalars(select(VariantPreparation.exercise_version_id).where(
        VariantPreparation.client_id == client_id, VariantPreparation.learner == learner,
        VariantPreparation.exercise_version_id.in_(wanted))))
    if not wanted:
        return []
    waiting = session.execute(select(func.count()).select_from(select(VariantPreparation.id).where(
        VariantPreparation.client_id == client_id, WAITING).limit(MAX_QUEUED_PER_CLIENT).subquery())).scalar_one()
    room = MAX_QUEUED_PER_CLIENT - waiting
    if room < len(wanted):
        log.warning("client %d has %d variant preparations waiting (at most %d): %d not queued", client_id, waiting,
                    MAX_QUEUED_PER_CLIENT, len(wanted) - max(room, 0))
        wanted = set(sorted(wanted)[:max(room, 0)])
        if not wanted:
            return []
    now, request_id = utcnow(), current_request_id()
    rows = [{"id": uuid.uuid4(), "exercise_version_id": version_id, "client_id": client_id, "learner": learner,
             "status": QUEUED, "tries": 0, "created_at": now, "request_id": request_id}
            for version_id in sorted(wanted)]
    # Two tokens minted at once for the same learner: the second one's rows are already there.
    stmt = upsert_insert(session.get_bind().dialect.name, VariantPreparation).values(rows).on_conflict_do_nothing(
        index_elements=["exercise_version_id", "client_id", "learner"]).returning(VariantPreparation.id)
    # A saving, never a condition of the token or launch that asks for it: one that cannot be
    # queued (the exercise deleted meanwhile, a lock timeout) is the first grade's to make.
    try:
        with session.begin_nested():
            return list(session.scalars(stmt))
    except SQLAlchemyError as exc:
        log.warning("variant preparations not queued (%s)", type(exc).__name__)
        return []


def prepare(judge: Any, job: VariantPreparation, payload: dict[str, Any]) -> dict[str, Any]:
    """The worker's handler: the judge runs the reference on the learner's variant; the job's result
    is what it stores (null when the judge had it in memory: a grade of this learner stored it)."""
    stored = judge.prepare(payload, variant=variant_key(job.client_id, job.learner))
    return {"result": {"status": PREPARED, "stored": None if stored is None else stored.to_json()}}


def stored_reference(connection: Connection, version_id: int, client_id: int, learner: str) -> StoredReference | None:
    """The learner's prepared reference results of the version, if a worker stored them."""
    from ..grading.references import StoredReference  # torch-free; imported by the worker only

    result = connection.scalar(select(VariantPreparation.result).where(
        VariantPreparation.exercise_version_id == version_id, VariantPreparation.client_id == client_id,
        VariantPreparation.learner == learner, VariantPreparation.status == GRADED))
    return StoredReference.from_json(result.get("stored")) if isinstance(result, dict) else None


def store(connection: Connection, version_id: int, client_id: int, learner: str, stored: StoredReference) -> None:
    """Keep what a grade's reference run made, for the learner's next grade on another worker or
    after a restart. A queued preparation of the same variant is done by it; one a worker is
    running now is left to store its own (the same results)."""
    table = VariantPreparation.__table__
    now = utcnow()
    values = {"status": GRADED, "result": {"status": PREPARED, "stored": stored.to_json()}, "graded_at": now}
    stmt = upsert_insert(connection.dialect.name, VariantPreparation).values(
        id=uuid.uuid4(), exercise_version_id=version_id, client_id=client_id, learner=learner, tries=0,
        created_at=now, request_id=current_request_id(), **values)
    connection.execute(stmt.on_conflict_do_update(
        index_elements=["exercise_version_id", "client_id", "learner"], set_=values,
        where=table.c.status != RUNNING))


def connections(session: Session) -> Callable[[bool], AbstractContextManager[Connection]]:
    """Connections of their own beside a worker's session (`write`: in a transaction committed at
    the end), not the session's transaction: on SQLite that would hold the write lock through a grade."""
    engine = session.get_bind()
    assert isinstance(engine, Engine)

    def connect(write: bool) -> AbstractContextManager[Connection]:
        return engine.begin() if write else engine.execution_options(**{READ_ONLY: True}).connect()
    return connect


def grade_in_variant(judge: Any, connection_for: Callable[[bool], AbstractContextManager[Connection]],
                     payload: dict[str, Any], code: str, *, version_id: int,
                     client_id: int, learner: str, keep: bool = True) -> dict[str, Any]:
    """The judge's grade of `code` in the learner's variant of the version, from its prepared
    reference results: the judge's own, else the stored ones, else run now and stored.
    `connection_for`: connections(the worker's session). `keep`: store results the reference ran
    for (False when the caller's session holds SQLite's write lock: a second writer would wait on it)."""
    variant = variant_key(client_id, learner)
    stored = None
    # Reading and keeping the results is a saving, never a condition of the grade: a database
    # that fails here (SQLite busy in a burst) costs a reference run, not the learner's grade.
    if not judge.has_reference(payload, variant=variant):
        try:
            with connection_for(False) as connection:
                stored = stored_reference(connection, version_id, client_id, learner)
        except SQLAlchemyError as exc:
            log.warning("stored reference results unreadable (%s); the reference runs", type(exc).__name__)
    made: list[StoredReference] = []
    result: dict[str, Any] = judge.grade(payload, code, variant=variant, stored=stored, on_prepared=made.append)
    if made and keep:
        try:
            with connection_for(True) as connection:
                store(connection, version_id, client_id, learner, made[0])
        except SQLAlchemyError as exc:
            log.warning("reference results not kept (%s)", type(exc).__name__)
    return result
