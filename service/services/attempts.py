"""Submitting and reading attempts."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Engine, Select, and_, func, inspect, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defaultload, lazyload, load_only

from .. import scores
from ..database import READ_ONLY, outside_transaction, serialize_transactions
from ..learner_tokens import LearnerScope
from ..logs import current_request_id
from ..models import (
    ApiClient,
    Attempt,
    AttemptStatus,
    Exercise,
    ExerciseVersion,
    GradingJob,
    IdempotencyRecord,
    LtiResourceLink,
)
from ..models.attempt import FINISHED, grade_columns
from ..outbound.outbox import NewAttemptRows, insert_new_attempt
from ..quiz import AnswerError
from ..rules import Refusal, Standing, counted_score
from ..ttl_cache import TtlCache
from ..variants import grade_quiz_answer
from .events import graded_event_columns
from .standing import CountingScope, standing
from .versions import WITHOUT_VERSIONS

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


def published_exercise(session: Session, slug: str) -> Exercise:
    # Topics load only if read (the detail page): grading an attempt never needs them.
    exercise = session.scalar(select(Exercise).where(Exercise.slug == slug, Exercise.published.is_(True))
                              .options(lazyload(Exercise.topics)))
    if exercise is None:
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


def current_version(session: Session, slug: str, cache: TtlCache[str, CurrentVersion]) -> tuple[Exercise, ExerciseVersion]:
    """The published exercise `slug` and its current version, from the process's cache
    (EXERCISE_CACHE_SECONDS: a sync, publish or unpublish shows within that time) when it is on;
    raises ExerciseNotFound. The version's content is parsed from the database once per entry.
    Read only: cached objects are shared by the process's threads."""
    if not cache.seconds:
        exercise = published_exercise(session, slug)
        return exercise, exercise.version

    def load() -> CurrentVersion | None:
        try:
            exercise = published_exercise(session, slug)
        except ExerciseNotFound:
            return None
        version = exercise.version
        session.expunge(version)
        session.expunge(exercise)
        return CurrentVersion(exercise, version)

    cached = cache.get(slug, load)
    if cached is None:
        raise ExerciseNotFound(slug)
    return cached.exercise, cached.version


class AttemptRefused(Exception):
    """The assessment rules refuse this attempt now (service/rules.py): nothing is written."""

    def __init__(self, refusal: Refusal, standing: Standing) -> None:
        super().__init__(refusal.message)
        self.refusal, self.standing = refusal, standing


@dataclass(frozen=True)
class NewAttempt:
    """An attempt checked and (a quiz answer) graded, not yet written: `attempt` is transient."""

    attempt: Attempt
    standing: Standing
    #: Its `attempt.graded` event's values (a quiz answer), None for code (queued).
    event: dict[str, Any] | None


def create_attempt(session: Session, client: ApiClient, exercise: Exercise, version: ExerciseVersion, learner: str,
                   answer: Any = None, code: str | None = None, lti_link_id: int | None = None, *,
                   exempt: bool = False, course_id: int | None = None) -> NewAttempt:
    """Check the submission against the assessment rules and the exercise's kind, and make the
    attempt (`version`: its current one) and, for a quiz answer, its grade; `submit_attempt` writes it.

    The one place every path that submits (an API key, a learner token, an LTI launch) meets the
    rules: an attempt they refuse raises AttemptRefused before anything is made. A quiz answer
    is graded here and now (with its `attempt.graded` event); code is queued for the grading
    workers. `lti_link_id`: the LTI resource link the learner launched from; `exempt`: the rules
    do not bind the learner (an instructor trying the exercise out); `course_id`: the course the
    attempt belongs to (the learner token's).
    """
    kind = exercise.kind
    before = standing(session, CountingScope(client.id, exercise.id, lti_link_id, course_id),
                      version.spec.get("rules", {}), learner, exempt=exempt)
    refusal = before.refusal()
    if refusal is not None:
        raise AttemptRefused(refusal, before)
    penalties = before.penalties()
    # Every column set here (none left to the columns' defaults): the row is written from these values.
    attempt = Attempt(id=uuid.uuid4(), client_id=client.id, learner=learner, exercise=exercise, exercise_id=exercise.id,
                      exercise_version=version, exercise_version_id=version.id, created_at=before.now,
                      lti_link_id=lti_link_id, course_id=course_id, attempt_number=before.next_number,
                      late=before.late_now, penalties=[p.as_json() for p in penalties] or None,
                      overridden=False, tries=0, request_id=current_request_id())
    if kind == "code":
        if answer is not None:
            raise InvalidAnswer("answer", "a code exercise takes 'code' (Python source), not 'answer'")
        if code is None:
            raise InvalidAnswer("code", "required for this exercise: the Python source of your Function")
        attempt.code, attempt.status = code, AttemptStatus.QUEUED.value
    else:
        if code is not None:
            raise InvalidAnswer("code", f"a {kind} exercise takes an 'answer', not 'code'")
        if answer is None:
            raise InvalidAnswer("answer", "required for this exercise")
        try:
            grade = grade_quiz_answer(exercise.slug, version, client.id, learner, answer)
        except AnswerError as exc:
            raise InvalidAnswer("answer", str(exc)) from None
        attempt.answer, attempt.status = answer, AttemptStatus.GRADED.value
        attempt.correct, attempt.result = grade.correct, grade.as_result()
        attempt.grader_score, attempt.score = grade.score, counted_score(grade.score, attempt.penalties)
        attempt.verdict = grade_columns(attempt.result, grade.correct, is_code=False)["verdict"]
        attempt.graded_at = attempt.created_at
    event = graded_event_columns(attempt) if attempt.finished else None
    return NewAttempt(attempt, before.after(attempt), event)


@dataclass(frozen=True)
class Submission:
    """A new attempt and the response that tells of it, ready to be written together."""

    new: NewAttempt
    response: StoredResponse


#: Tries of a submission made again in its turn (see submit_attempt) after it lost the number race.
NUMBER_RACE_TURNS = 3


class NumberRaceLost(Exception):
    """Every try of a submission found its attempt number taken by another request of the same
    learner: nothing is written, and the caller may retry shortly (the API answers 503)."""


class TakingTurns:
    """The turn keys (`_turn_key`) that submissions of this process wait for or hold. A learner's
    first try that finds its key here is not written optimistically but waits its turn as well:
    in a burst, the retries in turn kept losing their numbers to the burst's later first tries
    (on PostgreSQL, 200 simultaneous POSTs of one learner in one process: 2 to 5 lost all three
    turns, a 503; with this, none of 600). Costs a first try one dict lookup, no lock."""

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


@functools.cache
def _attempt_columns() -> tuple[tuple[str, str], ...]:
    """(column name, attribute name) of every column of attempts."""
    return tuple((prop.columns[0].name, prop.key) for prop in inspect(Attempt).column_attrs)


def submit_attempt(session: Session, client: ApiClient, key: str | None, digest: str,
                   prepare: Callable[[], Submission]) -> tuple[StoredResponse, bool]:
    """Make an attempt with `prepare` and write it, its event (and what the event causes) and the
    Idempotency-Key's record of its response together (outbox.insert_new_attempt: one statement on
    PostgreSQL), then commit; at most once per (client, key). Returns the response and whether it
    is a replay.

    A new key (the usual case) costs no lookup: a key used before makes the write fail on the
    record's unique key, and the first response is replayed. A submission that fails (a 404, a
    422) is answered by an earlier record of its key if there is one, as a retry should be.

    On SQLite the submission is made in a read transaction (a WAL snapshot, no lock) and written in
    the next: SQLite has one write lock, and a writer holds it for the write and the commit alone,
    not for the rules' read, the grading and the response. On PostgreSQL it is made and written
    outside any transaction (autocommit): its reads take no lock, and its rows are one statement,
    a transaction of its own, so no BEGIN and COMMIT go to the server (two round trips of the five
    a quiz POST made).

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
                submission = prepare()
                if snapshot and turn is None:
                    session.commit()
            except Exception:
                session.rollback()
                previous = None if key is None else _replay(session, client, key, digest)
                if previous is not None:
                    return previous, True
                raise
            attempt, response = submission.new.attempt, submission.response
            if turn is None and _turn_key(attempt) in _TAKING_TURNS:
                turn = _take_turns(attempt)
                continue
            try:
                insert_new_attempt(session, _rows(submission, client, key, digest))
                session.commit()
            except IntegrityError as exc:
                session.rollback()
                previous = None if key is None else _replay(session, client, key, digest)
                if previous is not None:
                    return previous, True
                if "ux_attempts_number" not in str(exc.orig):
                    raise
                turn = turn or _take_turns(attempt)
                continue
            return response, False
    finally:
        if turn is not None:
            _TAKING_TURNS.leave(turn)
    raise NumberRaceLost(f"learner {attempt.learner!r}'s attempt number was taken in each of {NUMBER_RACE_TURNS} turns")


def _begin_try(session: Session, snapshot: bool, turn: tuple[Any, ...] | None) -> None:
    """Begin what a try reads on: its turn (a write transaction), or, a first try, a snapshot
    (SQLite) or no transaction (PostgreSQL)."""
    if turn is not None:
        serialize_transactions(session, *turn)
    elif snapshot:
        session.connection(execution_options={READ_ONLY: True})
    else:
        outside_transaction(session)


def _rows(submission: Submission, client: ApiClient, key: str | None, digest: str) -> NewAttemptRows:
    attempt, response = submission.new.attempt, submission.response
    record = None if key is None else {
        "client_id": client.id, "key": key, "request_digest": digest, "response_status": response.status,
        "response_body": response.body, "location": response.location, "created_at": attempt.created_at}
    return NewAttemptRows({column: getattr(attempt, attr) for column, attr in _attempt_columns()},
                          submission.new.event, attempt.lti_link_id, record)


def _turn_key(attempt: Attempt) -> tuple[Any, ...]:
    """What a submission that lost the number race waits its turn on (serialize_transactions): its
    learner at its exercise, with the client. In its turn (SQLite: the write lock, from BEGIN
    IMMEDIATE; PostgreSQL: an advisory lock, to the commit) it reads the standing, numbers the
    attempt and writes it while no other turn of the learner's runs. Coarser than the counting scope
    on purpose (every link and course of the exercise): a rare wait, never a missed one."""
    return "attempts", attempt.client_id, attempt.exercise_id, attempt.learner


def _take_turns(attempt: Attempt) -> tuple[Any, ...]:
    key = _turn_key(attempt)
    _TAKING_TURNS.join(key)
    return key


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
    limits: list[ColumnElement[bool]] = []
    if scope.exercises is not None:
        limits.append(Attempt.exercise_id.in_(select(Exercise.id).where(Exercise.slug.in_(scope.exercises))))
    if not scope.is_instructor:
        limits.append(Attempt.learner == scope.learner)
    course: Any = scope.course_id
    if course is None and scope.link_id is not None:
        course = select(LtiResourceLink.course_id).where(LtiResourceLink.id == scope.link_id).scalar_subquery()
    if course is not None:
        in_course = Attempt.course_id == course
        limits.append(or_(in_course, and_(Attempt.course_id.is_(None), Attempt.learner == scope.learner))
                      if scope.is_instructor else in_course)
    return limits


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
    0.1 s (a request of a 16-client burst polled 7-10 times, each a wake-up that costs the process's
    other threads the GIL; now about 5). Once none is ahead, or in an idle queue, it polls after
    10 ms, then 1.5 times later each time, up to 0.1 s apart.
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


@functools.cache
def _learner_attempts_select() -> Select[Attempt]:
    # Built once, as _best_scores_select is: a request adds its conditions. It loads what a page
    # shows (AttemptSchema) and what show_to_learner and VersionCache.attach read, and leaves out
    # the workers' lease and the exercise's catalog entry: reading one of those raises, rather than
    # loading it attempt by attempt.
    return (select(Attempt)
            .options(*WITHOUT_VERSIONS,
                     load_only(Attempt.id, Attempt.client_id, Attempt.learner, Attempt.exercise_id,
                               Attempt.exercise_version_id, Attempt.lti_link_id, Attempt.course_id, Attempt.status,
                               Attempt.answer, Attempt.code, Attempt.result, Attempt.score, Attempt.grader_score, Attempt.correct,
                               Attempt.attempt_number, Attempt.late, Attempt.penalties, Attempt.created_at,
                               Attempt.started_at, Attempt.graded_at, raiseload=True),
                     defaultload(Attempt.exercise).load_only(Exercise.slug, Exercise.current_version, raiseload=True))
            .order_by(Attempt.created_at.desc(), Attempt.id.desc()))


def learner_attempts(client: ApiClient, learner: str, exercise_ids: Collection[int] | None,
                     scope: LearnerScope | None = None) -> Select[Attempt]:
    """The learner's attempts, newest first; at the exercises `exercise_ids` (None: at any), and
    within a learner token's limits (token_limits). Without their versions: VersionCache.attach."""
    stmt = _learner_attempts_select().where(Attempt.client_id == client.id, Attempt.learner == learner,
                                            *token_limits(scope))
    if exercise_ids is not None:
        stmt = stmt.where(Attempt.exercise_id.in_(exercise_ids))
    return stmt


@functools.cache
def _best_scores_select() -> Select[str, int, float | None, bool]:
    """best_scores' columns, join and grouping, the same for every request: built once per process
    (SQLAlchemy's case() alone formats an error message each time it is built)."""
    return (select(Exercise.slug, func.count(Attempt.id), scores.best_of_group(),
                   scores.passed_in_group())
            .join(Attempt, Attempt.exercise_id == Exercise.id)
            .group_by(Exercise.slug)
            .order_by(Exercise.slug))


def best_scores(session: Session, client: ApiClient, learner: str, exercise_ids: Collection[int] | None,
                scope: LearnerScope | None = None) -> list[dict[str, Any]]:
    """The learner's best score per exercise, over the same attempts as learner_attempts."""
    stmt = _best_scores_select().where(Attempt.client_id == client.id, Attempt.learner == learner, *token_limits(scope))
    if exercise_ids is not None:
        stmt = stmt.where(Attempt.exercise_id.in_(exercise_ids))
    # On the session's connection: a Core statement needs none of the ORM's execution step.
    return [
        {"exercise": slug, "attempts": count, "best_score": best, "passed": bool(passed)}
        for slug, count, best, passed in session.connection().execute(stmt)
    ]


def dump_json(body: dict[str, Any]) -> dict[str, Any]:
    """A response body as stored for replay: plain JSON types only."""
    return json.loads(json.dumps(body, default=str))
