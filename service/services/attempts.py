"""Submitting and reading attempts."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from marshmallow import Schema
from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Engine,
    Executable,
    Insert,
    Select,
    and_,
    bindparam,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defaultload, lazyload

from .. import scores
from ..database import READ_ONLY, bound_values, outside_transaction, serialize_transactions
from ..learner_tokens import LearnerScope
from ..logs import current_request_id
from ..models import (
    ApiClient,
    Attempt,
    AttemptRow,
    AttemptStatus,
    Exercise,
    ExerciseVersion,
    GradingJob,
    IdempotencyRecord,
    LtiResourceLink,
)
from ..models.attempt import FINISHED, grade_columns
from ..outbound import outbox
from ..outbound.outbox import NewEvent
from ..quiz import AnswerError, QuizGrade
from ..rules import Refusal, Standing, counted_score
from ..scoring import policy_score, scoring_of
from ..ttl_cache import TtlCache
from ..variants import grade_quiz_answer
from .events import graded_event
from .exercise_access import EVERY_COURSE, ExerciseAudience
from .standing import LearnerCountingScope, seen_under, standing
from .versions import LISTED_COLUMNS, LISTED_EXERCISE_COLUMNS, row_version

Job = TypeVar("Job", bound=GradingJob)


class ExerciseNotFound(LookupError):
    pass


class InvalidAnswer(ValueError):
    """The submission does not fit the exercise's kind; `field` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class IdempotencyKeyReused(Exception):
    """The same Idempotency-Key came with a different request."""


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: dict[str, Any]
    location: str | None


def published_exercise(session: Session, slug: str, audience: ExerciseAudience) -> Exercise:
    """The published exercise `slug` if `audience` may see it (services/exercise_access.py); else
    ExerciseNotFound, as for a slug that does not exist."""
    # Topics load only if read (the detail page): grading an attempt never needs them.
    exercise = session.scalar(select(Exercise).where(Exercise.slug == slug, Exercise.published.is_(True))
                              .options(lazyload(Exercise.topics)))
    if exercise is None or not audience.sees(exercise.course_id):
        raise ExerciseNotFound(slug)
    return exercise


@dataclass(frozen=True)
class CurrentVersion:
    """A published exercise and its current version as loaded once, detached from every session
    (columns loaded), for a process's TtlCache. Requests of several threads read them as they are,
    never added to a session: an attempt refers to them, and is written with Core statements, so
    no request needs copies merged into its session."""

    exercise: Exercise
    version: ExerciseVersion


def current_version(session: Session, slug: str, cache: TtlCache[str, CurrentVersion],
                    audience: ExerciseAudience) -> tuple[Exercise, ExerciseVersion]:
    """The published exercise `slug` and its current version, from the process's cache
    (EXERCISE_CACHE_SECONDS: a sync, publish or unpublish shows within that time) when it is on;
    raises ExerciseNotFound, also when `audience` may not see it (the cache is by slug, whoever
    asks: each hit is checked). The version's content is parsed from the database once per entry.
    Read only: cached objects are shared by the process's threads."""
    if not cache.seconds:
        exercise = published_exercise(session, slug, audience)
        return exercise, exercise.version

    def load() -> CurrentVersion | None:
        try:
            exercise = published_exercise(session, slug, EVERY_COURSE)
        except ExerciseNotFound:
            return None
        version = exercise.version
        session.expunge(version)
        session.expunge(exercise)
        return CurrentVersion(exercise, version)

    cached = cache.get(slug, load)
    if cached is None or not audience.sees(cached.exercise.course_id):
        raise ExerciseNotFound(slug)
    return cached.exercise, cached.version


class AttemptRefused(Exception):
    """The assessment rules refuse this attempt now (service/rules.py): nothing is written."""

    def __init__(self, refusal: Refusal, standing: Standing) -> None:
        super().__init__(refusal.message)
        self.refusal, self.standing = refusal, standing


@dataclass(frozen=True)
class Submission:
    """A learner's submission to an exercise, as the API received it: by whom (`learner`; `scope`:
    the learner token that sent it, None for an API key's learner), what (a quiz `answer` or
    `code`), and what the response calls the attempt: its id and `location`, chosen before it is
    made (every try of it, see submit_attempt, makes it with the same)."""

    slug: str
    learner: str
    answer: Any
    code: str | None
    scope: LearnerScope | None
    attempt_id: uuid.UUID
    location: str
    # Whose exercises the caller sees (services/exercise_access.py): another course's is a 404.
    audience: ExerciseAudience


@dataclass(frozen=True)
class NewAttempt:
    """An attempt checked and (a quiz answer) graded, not yet written: its row, its exercise and
    version, the learner's standing once it is made, and its `attempt.graded` event (a quiz answer;
    None for code, queued)."""

    row: AttemptRow
    exercise: Exercise
    version: ExerciseVersion
    standing: Standing
    event: NewEvent | None


def create_attempt(session: Session, client: ApiClient, exercise: Exercise, version: ExerciseVersion,
                   submission: Submission, where: LearnerCountingScope) -> NewAttempt:
    """Check the submission against the assessment rules and the exercise's kind, and make the
    attempt (`version`: its current one) and, for a quiz answer, its grade; `submit_attempt` writes it.

    The one place every path that submits (an API key, a learner token, an LTI launch) meets the
    rules: an attempt they refuse raises AttemptRefused before anything is made. A quiz answer
    is graded here and now (with its `attempt.graded` event); code is queued for the grading
    workers. `where`: the assignment the attempt counts in (its LTI link and course), and whether
    the rules bind the learner there (not an instructor trying the exercise out).
    """
    learner, answer, code = submission.learner, submission.answer, submission.code
    assignment = where.counting_scope
    before = standing(session, assignment, version.spec.get("rules", {}), learner, exempt=where.exempt)
    refusal = before.refusal()
    if refusal is not None:
        raise AttemptRefused(refusal, before)
    grade = checked_and_graded(client, exercise, version, learner, answer, code)
    penalties = [p.as_json() for p in before.penalties()] or None
    # The policy binds an instructor trying the exercise out too: they see what a learner would get.
    scoring = scoring_of(before.rules)
    grader_score = None if grade is None else policy_score(scoring, grade.score, grade.correct)
    row = AttemptRow(
        id=submission.attempt_id, client_id=client.id, learner=learner, exercise_id=exercise.id,
        exercise_version_id=version.id, lti_link_id=assignment.link_id, course_id=assignment.course_id,
        attempt_number=before.next_number, late=before.late_now, penalties=penalties, scoring=scoring,
        created_at=before.now,
        request_id=current_request_id(), answer=answer, code=code,  # one of the two, the other None
        # code is queued for the grading workers; a quiz answer is graded now
        status=AttemptStatus.QUEUED.value if grade is None else AttemptStatus.GRADED.value,
        result=None if grade is None else grade.as_result(),
        correct=None if grade is None else grade.correct,
        grader_score=grader_score,
        score=counted_score(grader_score, penalties),
        verdict=None if grade is None else grade_columns(None, grade.correct, is_code=False)["verdict"],
        graded_at=None if grade is None else before.now)
    return NewAttempt(row, exercise, version, before.after(row), None if grade is None else graded_event(row))


def checked_and_graded(client: ApiClient, exercise: Exercise, version: ExerciseVersion, learner: str, answer: Any,
                        code: str | None) -> QuizGrade | None:
    """A quiz answer's grade; None for code. Raises InvalidAnswer for a submission the kind of the
    exercise's `version` does not take (a preview's draft may have changed it)."""
    kind = version.spec["kind"]
    if kind == "code":
        if answer is not None:
            raise InvalidAnswer("answer", "a code exercise takes 'code' (Python source), not 'answer'")
        if code is None:
            raise InvalidAnswer("code", "required for this exercise: the Python source of your Function")
        return None
    if code is not None:
        raise InvalidAnswer("code", f"a {kind} exercise takes an 'answer', not 'code'")
    if answer is None:
        raise InvalidAnswer("answer", "required for this exercise")
    try:
        return grade_quiz_answer(exercise.slug, version, client.id, learner, answer)
    except AnswerError as exc:
        raise InvalidAnswer("answer", str(exc)) from None


#: Tries of a submission made again in its turn (see submit_attempt) after it lost the number race.
NUMBER_RACE_TURNS = 3


class NumberRaceLost(Exception):
    """Every try of a submission found its attempt number taken by another request of the same
    learner: nothing is written, and the caller may retry shortly (the API answers 503)."""


class TakingTurns:
    """The turn keys (`_turn_key`) that submissions of this process wait for or hold. A learner's
    first try that finds its key here is not written optimistically but waits its turn as well:
    in a burst, the retries in turn kept losing their numbers to the burst's later first tries
    (docs/performance.md, "Simultaneous submissions of one learner"). Costs a first try one dict
    lookup, no lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[Any, ...], int] = {}

    def __contains__(self, key: tuple[Any, ...]) -> bool:
        return key in self._waiting

    def join(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            self._waiting[key] = self._waiting.get(key, 0) + 1

    def leave(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            if self._waiting[key] == 1:
                del self._waiting[key]
            else:
                self._waiting[key] -= 1


_TAKING_TURNS = TakingTurns()


def submit_attempt(session: Session, client: ApiClient, submission: Submission, key: str | None, digest: str, *,
                   versions: TtlCache[str, CurrentVersion], schema: Schema) -> tuple[StoredResponse, bool]:
    """Make the attempt `submission` asks for and write it, its event (and what the event causes)
    and the Idempotency-Key's record of its response (the attempt as its learner sees it, dumped
    by `schema`) together (`insert_new_attempt`), then commit; at most once per (client, key).
    Returns the response and whether it is a replay. Raises what the submission fails with
    (ExerciseNotFound, InvalidAnswer, AttemptRefused), IdempotencyKeyReused, NumberRaceLost.

    A new key (the usual case) costs no lookup: a key used before makes the write fail on the
    record's unique key, and the first response is replayed. A submission that fails (a 404, a
    422) is answered by an earlier record of its key if there is one, as a retry should be.

    A try is made and written in two steps: on SQLite the attempt is made in a read transaction
    (a snapshot) and written in the next, so that SQLite's one write lock is held for the write
    alone; on PostgreSQL both are outside any transaction, each statement its own
    (docs/performance.md, "The write path").

    That first try is optimistic: when another request of the same learner took the attempt's
    number between its read and its write (a stale snapshot, a double-clicked Submit, a script's
    burst), the write fails on ux_attempts_number and nothing is stored. The submission is then
    made again in its turn (`_turn_key`), under the rules, as if it came later (the last allowed
    attempt is refused); so is a first try of a learner whose submissions wait for their turn in
    this process (TakingTurns). On SQLite a turn always wins. On PostgreSQL turns serialise the
    retries, not the first tries of other processes, which can still take a number in between:
    after NUMBER_RACE_TURNS lost turns it raises NumberRaceLost, nothing written.
    """
    snapshot = session.get_bind().dialect.name == "sqlite"
    turn: tuple[Any, ...] | None = None  # whose turn it waits for, once the first try did not write
    try:
        for _ in range(1 + NUMBER_RACE_TURNS):
            try:
                session.commit()  # what the request read before (its key, when not cached)
                _begin_try(session, snapshot, turn)
                new = _made(session, client, submission, versions)
                response = _response(new, submission.location, schema)
                if snapshot and turn is None:
                    session.commit()
            except Exception:
                session.rollback()
                previous = None if key is None else _replay(session, client, key, digest)
                if previous is not None:
                    return previous, True
                raise
            if turn is None and _turn_key(new.row) in _TAKING_TURNS:
                turn = _take_turns(new.row)
                continue
            record = None if key is None else IdempotencyRow(client.id, key, digest, response.status, response.body,
                                                              response.location, new.row.created_at)
            try:
                insert_new_attempt(session, NewAttemptRows(new.row, new.event, record))
                session.commit()
            except IntegrityError as exc:
                session.rollback()
                previous = None if key is None else _replay(session, client, key, digest)
                if previous is not None:
                    return previous, True
                if "ux_attempts_number" not in str(exc.orig):
                    raise
                turn = turn or _take_turns(new.row)
                continue
            return response, False
    finally:
        if turn is not None:
            _TAKING_TURNS.leave(turn)
    raise NumberRaceLost(f"learner {submission.learner!r}'s attempt number was taken in each of "
                         f"{NUMBER_RACE_TURNS} turns")


def _begin_try(session: Session, snapshot: bool, turn: tuple[Any, ...] | None) -> None:
    """Begin what a try reads on: its turn (a write transaction), or, a first try, a snapshot
    (SQLite) or no transaction (PostgreSQL)."""
    if turn is not None:
        serialize_transactions(session, *turn)
    elif snapshot:
        session.connection(execution_options={READ_ONLY: True})
    else:
        outside_transaction(session)


def _made(session: Session, client: ApiClient, submission: Submission,
          versions: TtlCache[str, CurrentVersion]) -> NewAttempt:
    """One try's attempt: at the exercise's current version, in the assignment of the learner
    (their token's link and course), under its rules as they stand now."""
    exercise, version = current_version(session, submission.slug, versions, submission.audience)
    where = LearnerCountingScope.of(session, client.id, submission.scope, exercise.id)
    return create_attempt(session, client, exercise, version, submission, where)


def _response(new: NewAttempt, location: str, schema: Schema) -> StoredResponse:
    """The response that tells of `new` (201 graded, 202 queued): the attempt as its learner sees
    it once it is made, with their standing; as stored for a replay."""
    view = seen_under(new.standing, new.row, new.exercise, new.version, with_standing=True)
    status = 202 if new.row.status == AttemptStatus.QUEUED.value else 201
    return StoredResponse(status, dump_json(schema.dump(view)), location)


def _turn_key(attempt: AttemptRow) -> tuple[Any, ...]:
    """What a submission that lost the number race waits its turn on (serialize_transactions): its
    learner at its exercise, with the client. In its turn (SQLite: the write lock, from BEGIN
    IMMEDIATE; PostgreSQL: an advisory lock, to the commit) it reads the standing, numbers the
    attempt and writes it while no other turn of the learner's runs. Coarser than the counting scope
    on purpose (every link and course of the exercise): a rare wait, never a missed one."""
    return "attempts", attempt.client_id, attempt.exercise_id, attempt.learner


def _take_turns(attempt: AttemptRow) -> tuple[Any, ...]:
    key = _turn_key(attempt)
    _TAKING_TURNS.join(key)
    return key


# --------------------------------------------------------------------------- a new attempt's rows

@dataclass(frozen=True, slots=True)
class IdempotencyRow:
    """An Idempotency-Key's record (IdempotencyRecord) of the first response to its request."""

    client_id: int
    key: str
    request_digest: str
    response_status: int
    response_body: dict[str, Any]
    location: str | None
    created_at: datetime


_ATTEMPT_FIELDS = tuple(f.name for f in fields(AttemptRow))
_RECORD_FIELDS = tuple(f.name for f in fields(IdempotencyRow))


@dataclass(frozen=True)
class NewAttemptRows:
    """Every row a submitted attempt makes: the attempt; its `attempt.graded` event, with the
    deliveries the outbox makes of it (a quiz answer; None for code, queued); the
    Idempotency-Key's record of the response (None without a key)."""

    attempt: AttemptRow
    event: NewEvent | None
    record: IdempotencyRow | None

    def params(self) -> dict[str, Any]:
        """The statements' parameters: the attempt's columns named a_, the record's r_, the event's e_."""
        attempt, record = self.attempt, self.record
        params = {f"a_{name}": getattr(attempt, name) for name in _ATTEMPT_FIELDS}
        if record is not None:
            params.update({f"r_{name}": getattr(record, name) for name in _RECORD_FIELDS})
        if self.event is not None:
            params.update(self.event.params())
        return params


def insert_new_attempt(session: Session, rows: NewAttemptRows) -> None:
    """Write `rows` in the session's transaction, with the deliveries of the event (outbox): on
    PostgreSQL in one statement (a data-modifying WITH), elsewhere in one statement per table. A
    unique violation (the attempt's number, the record's key) raises IntegrityError here, not at
    the commit."""
    params = rows.params()
    event = rows.event
    connection = session.connection()  # Core statements on the session's transaction: no ORM step
    if connection.dialect.name == "postgresql":
        has_passback = event is not None and event.lti_link_id is not None
        connection.execute(_one_statement(event is not None, has_passback, rows.record is not None), params)
        return
    connection.execute(_insert_attempt(), params)
    if event is not None:
        outbox.insert_event_rows(connection, event)
    if rows.record is not None:
        connection.execute(_insert_record(), params)


@functools.cache
def _insert_attempt() -> Insert:
    table = Attempt.__table__
    unset = set(table.c.keys()) - set(_ATTEMPT_FIELDS)
    if unset:  # a column added to the model, not to its row: say so, rather than write its default
        raise TypeError(f"AttemptRow has no field for the column(s) {', '.join(sorted(unset))} of attempts")
    return insert(table).values(bound_values(table, "a_", _ATTEMPT_FIELDS))


@functools.cache
def _insert_record() -> Insert:
    table = IdempotencyRecord.__table__
    return insert(table).values(bound_values(table, "r_", _RECORD_FIELDS))


@functools.cache
def _one_statement(has_event: bool, has_passback: bool, has_record: bool) -> Executable:
    """PostgreSQL: every row in one statement (built once per shape): the attempt, then the event's
    parts (outbox.event_parts), then the record."""
    parts = [_insert_attempt().cte("new_attempt"), *(outbox.event_parts(has_passback) if has_event else ())]
    if has_record:
        return _insert_record().add_cte(*parts)
    if has_event:
        return select(literal(1)).add_cte(*parts)
    return _insert_attempt()


def request_digest(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(b"\0".join([method.encode(), path.encode(), body])).hexdigest()


def _stored(record: IdempotencyRecord) -> StoredResponse:
    return StoredResponse(record.response_status, record.response_body, record.location)


def _replay(session: Session, client: ApiClient, key: str, digest: str) -> StoredResponse | None:
    record = session.scalar(
        select(IdempotencyRecord).where(IdempotencyRecord.client_id == client.id, IdempotencyRecord.key == key)
    )
    if record is None:
        return None
    if record.request_digest != digest:
        raise IdempotencyKeyReused(key)
    return _stored(record)


def token_limits(scope: LearnerScope | None) -> list[ColumnElement[bool]]:
    """What a learner token narrows the attempts it reads to; the one place every route that reads
    attempts with a token applies it (nothing for an API key).

    - its exercises (None: every exercise);
    - its learner's attempts alone, unless it is an instructor's;
    - a token of a course (an LTI launch's: its link's course; or one named at POST
      /learner-tokens, or a course key's) reads that course's attempts alone. A platform's courses
      share its API client: without this an instructor of one course read every other course's
      attempts at the exercise; and a course key names its tokens' learners at will, so its token
      for a learner must reach nothing of theirs beyond its course (issue 33). A launch's token
      issued before courses names only its link: its link's course.
    - an instructor's launch token also reads its own learner's try-outs (attempts in no course:
      an instructor's attempts are never in a course, LearnerCountingScope.of).

    Attempts in no course otherwise (a client's learners through the REST API) are the client's:
    its keys read them, and so do its learner tokens of no course.
    """
    if scope is None:
        return []
    values = token_parameters(scope)
    # Unique names: a statement that joined two scopes' limits keeps each one's values.
    return _token_conditions(token_shape(scope),
                             lambda key, **options: bindparam(key, values[key], unique=True, **options))


#: What of a token's limits shapes their SQL: whether it names exercises, whether it is an
#: instructor's, and whether its course is named ("course"), its link's ("link") or none (None).
TokenShape = tuple[bool, bool, str | None]


def token_shape(scope: LearnerScope) -> TokenShape:
    course = "course" if scope.course_id is not None else "link" if scope.link_id is not None else None
    return scope.exercises is not None, scope.is_instructor, course


@functools.cache
def token_conditions(shape: TokenShape) -> tuple[ColumnElement[bool], ...]:
    """token_limits' conditions of a shape, their values to bind at execution (token_parameters):
    built once, so that a statement adding them is built once per shape too (the learner history)."""
    return tuple(_token_conditions(shape, bindparam))


def _token_conditions(shape: TokenShape, parameter: Callable[..., BindParameter[Any]]) -> list[ColumnElement[bool]]:
    """The conditions of token_limits, with `parameter(key)` for each of the token's values."""
    by_exercises, instructor, course = shape
    limits: list[ColumnElement[bool]] = []
    if by_exercises:
        limits.append(Attempt.exercise_id.in_(select(Exercise.id).where(
            Exercise.slug.in_(parameter("token_exercises", expanding=True)))))
    if not instructor:
        limits.append(Attempt.learner == parameter("token_learner"))
    if course is not None:
        in_course = Attempt.course_id == (parameter("token_course") if course == "course" else select(
            LtiResourceLink.course_id).where(LtiResourceLink.id == parameter("token_link")).scalar_subquery())
        limits.append(or_(in_course, and_(Attempt.course_id.is_(None), Attempt.learner == parameter("token_learner")))
                      if instructor else in_course)
    return limits


def token_parameters(scope: LearnerScope | None) -> dict[str, Any]:
    """The values of token_conditions' parameters (none for an API key)."""
    if scope is None:
        return {}
    return {"token_exercises": list(scope.exercises or ()), "token_learner": scope.learner,
            "token_course": scope.course_id, "token_link": scope.link_id}


#: An attempt's exercise comes joined, without its topics (which nothing about an attempt shows).
WITHOUT_TOPICS = defaultload(Attempt.exercise).lazyload(Exercise.topics)


def visible_attempts(client: ApiClient, scope: LearnerScope | None = None) -> Select[Attempt]:
    """Attempts the caller may read: the client's own learners' (an admin key's: every client's);
    with a learner token, only those its limits allow (token_limits), of its client alone."""
    stmt = select(Attempt).options(WITHOUT_TOPICS)
    if not client.is_admin or scope is not None:
        stmt = stmt.where(Attempt.client_id == client.id)
    return stmt.where(*token_limits(scope))


# A waiting request polls soon (an idle worker grades in a few ms), then less often: under
# load a grade waits in the queue, and each poll costs the web process a query and a wake-up.
# A job with others queued ahead of it sleeps for about as long as they take (see below).
WAIT_POLL_FIRST_SECONDS, WAIT_POLL_MAX_SECONDS = 0.01, 0.1


def wait_until_finished(session: Session, model: type[Job], visible: Select, seconds: float) -> Job | None:
    """The job `visible` selects, once a worker has finished it or `seconds` have passed.

    While waiting, the session holds no transaction; the status is polled on an autocommit
    connection, which takes no lock (so waiting requests never slow the workers' writes). The first
    read is at once, and each read also counts the jobs queued ahead of this one (up to 100): while
    there are some, the request sleeps for 0.8 of the time they should take, at the rate the queue
    drained since its previous read (10 ms a job until it has seen one), rather than polling every
    0.1 s (docs/performance.md, "Waiting for a grade"). Once none is ahead, or in an idle queue, it
    polls after 10 ms, then 1.5 times later each time, up to 0.1 s apart.
    """
    stmt = visible.execution_options(populate_existing=True)
    job = session.scalar(stmt)
    if job is None or job.finished or seconds <= 0:
        return job
    job_id, created_at = job.id, job.created_at
    session.rollback()
    deadline = time.monotonic() + seconds
    engine = session.get_bind()
    assert isinstance(engine, Engine)  # bound to the engine (a Connection has no connect())
    queued_ahead = select(model.id).where(model.status == AttemptStatus.QUEUED.value,
                                          model.created_at < created_at).limit(100).subquery()
    poll = select(model.status, select(func.count()).select_from(queued_ahead).scalar_subquery()).where(model.id == job_id)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        status, ahead = conn.execute(poll).one()  # at once: how far back in the queue it is
        pause, per_job, first = WAIT_POLL_FIRST_SECONDS, 0.01, True
        seen: tuple[float, int] | None = None  # (when, jobs ahead) at the previous poll
        while status not in FINISHED and (remaining := deadline - time.monotonic()) > 0:
            if ahead:
                now = time.monotonic()
                if seen is not None and seen[1] > ahead:
                    per_job = (now - seen[0]) / (seen[1] - ahead)
                seen = (now, ahead)
                pause = min(max(0.8 * ahead * per_job, WAIT_POLL_FIRST_SECONDS), 1.0)
            elif seen is not None:  # its turn has come: a job's time or so to its result
                seen, pause = None, min(max(0.8 * per_job, WAIT_POLL_FIRST_SECONDS), WAIT_POLL_MAX_SECONDS)
            elif not first:
                pause = min(pause * 1.5, WAIT_POLL_MAX_SECONDS)
            first = False
            time.sleep(min(pause, remaining))
            status, ahead = conn.execute(poll).one()
    return session.scalar(stmt)


def _history_conditions(by_exercises: bool) -> list[ColumnElement[bool]]:
    """The learner's attempts, their values bound (history_parameters): the history's statements
    are built once per shape, and so is SQLAlchemy's cache key of each (building them and their
    keys anew cost about a tenth of a history's CPU)."""
    conditions = [Attempt.client_id == bindparam("client_id"), Attempt.learner == bindparam("learner")]
    if by_exercises:
        conditions.append(Attempt.exercise_id.in_(bindparam("exercise_ids", expanding=True)))
    return conditions


def history_parameters(client: ApiClient, learner: str, exercise_ids: Collection[int] | None,
                       scope: LearnerScope | None = None) -> dict[str, Any]:
    """The values of learner_attempts' and best_scores' statements."""
    parameters: dict[str, Any] = {"client_id": client.id, "learner": learner, **token_parameters(scope)}
    if exercise_ids is not None:
        parameters["exercise_ids"] = list(exercise_ids)
    return parameters


@functools.cache
def _learner_attempts_select(by_exercises: bool, postgresql: bool, shape: TokenShape | None) -> Select[Any]:
    # Built once per shape, as _best_scores_select is (a learner token's limits too). Rows, not ORM
    # objects: what a page shows and show_to_learner reads (LISTED_COLUMNS), with the exercise's
    # slug and current version, and the row's version (its dump is kept per version:
    # schemas/attempts.py ListedAttemptDumps); VersionCache.listed gives them their versions.
    return (select(*LISTED_COLUMNS, *LISTED_EXERCISE_COLUMNS, row_version(postgresql))
            .join(Exercise, Exercise.id == Attempt.exercise_id)
            .where(*_history_conditions(by_exercises), *(() if shape is None else token_conditions(shape)))
            .order_by(Attempt.created_at.desc(), Attempt.id.desc()))


def learner_attempts(exercise_ids: Collection[int] | None, scope: LearnerScope | None = None, *,
                     postgresql: bool = False) -> Select[Any]:
    """The learner's attempts, newest first, as rows of LISTED_COLUMNS and the exercise's
    (VersionCache.listed); at the exercises `exercise_ids` (None: at any), and within a learner
    token's limits (token_limits). Its values: history_parameters. The same object for every
    request of a shape. `postgresql`: with each row's version (versions.row_version)."""
    return _learner_attempts_select(exercise_ids is not None, postgresql, None if scope is None else token_shape(scope))


@functools.cache
def _best_scores_select(by_exercises: bool, shape: TokenShape | None) -> Select[str, int, float | None, bool]:
    """best_scores' statement, the same for every request of a shape: built once per process
    (SQLAlchemy's case() alone formats an error message each time it is built)."""
    return (select(Exercise.slug, func.count(Attempt.id), scores.best_of_group(),
                   scores.passed_in_group())
            .join(Attempt, Attempt.exercise_id == Exercise.id)
            .where(*_history_conditions(by_exercises), *(() if shape is None else token_conditions(shape)))
            .group_by(Exercise.slug)
            .order_by(Exercise.slug))


def best_scores(session: Session, client: ApiClient, learner: str, exercise_ids: Collection[int] | None,
                scope: LearnerScope | None = None) -> list[dict[str, Any]]:
    """The learner's best score per exercise, over the same attempts as learner_attempts."""
    stmt = _best_scores_select(exercise_ids is not None, None if scope is None else token_shape(scope))
    # On the session's connection: a Core statement needs none of the ORM's execution step.
    return [
        {"exercise": slug, "attempts": count, "best_score": best, "passed": bool(passed)}
        for slug, count, best, passed in session.connection().execute(
            stmt, history_parameters(client, learner, exercise_ids, scope))
    ]


def dump_json(body: dict[str, Any]) -> dict[str, Any]:
    """A response body as stored for replay: plain JSON types only."""
    return json.loads(json.dumps(body, default=str))
