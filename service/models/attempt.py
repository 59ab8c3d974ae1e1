"""Attempts (every answer a learner submitted, with its grade) and runs ("try it yourself")."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false, func, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ..logs import current_request_id
from .base import Base, JSONType, utcnow
from .client import ApiClient
from .exercise import Exercise, ExerciseVersion


class AttemptStatus(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    # The grader itself failed (never the submission): no score, never a learner's zero.
    ERROR = "error"


FINISHED = (AttemptStatus.GRADED.value, AttemptStatus.ERROR.value)

# Every value of Attempt.verdict: a quiz attempt's passed or failed (grade_columns), a code
# attempt's report status, which the judge sets (service/grading/judge.py; the table in
# docs/grading.md#verdicts, which tests/unit/test_vocabulary.py holds to this list). The dashboard
# reads them from /admin/vocabulary.js, never from a copy of its own.
VERDICTS = ("passed", "failed", "timeout", "internal_error", "syntax_error", "memory_limit", "output_limit",
            "forbidden", "crashed", "bad_output", "too_large")


class GradingJob:
    """Columns of work done by the grading workers, claimed from the database with a lease.

    A worker sets `lease_owner` and `lease_expires_at` when it claims a queued job; a job whose
    lease ran out (its worker died mid-grade) is claimed again. `tries` counts claims, so a job
    that keeps failing the grader ends as an error instead of looping.
    """

    #: What the job is called in the API, logs and metrics.
    JOB_KIND: ClassVar[str]

    if TYPE_CHECKING:  # declared by each job's table (Attempt, Run); named here for code that takes any job
        id: Mapped[uuid.UUID]
        client_id: Mapped[int]

    status: Mapped[str] = mapped_column(String(16))
    result: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    graded_at: Mapped[datetime | None]
    tries: Mapped[int] = mapped_column(default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    # When its task was last handed to the broker (GRADING_BACKEND=celery); null: never sent.
    # The row is committed first, so a job whose sender died before sending is found and sent.
    dispatched_at: Mapped[datetime | None]
    # The X-Request-Id of the API request that made the job: its worker logs under the same id.
    request_id: Mapped[str | None] = mapped_column(String(64), default=current_request_id)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class Attempt(GradingJob, Base):
    __tablename__ = "attempts"
    JOB_KIND = "attempt"
    __table_args__ = (
        # A learner's history, newest first (ties by id), within one client (migration 0020).
        Index("ix_attempts_learner_history", "client_id", "learner", "created_at", "id"),
        Index("ix_attempts_exercise_created", "exercise_id", "created_at", "id"),
        Index("ix_attempts_queue", "status", "created_at"),
        # The admin search's keyset pages (migration 0006; see service/services/admin_search.py).
        Index("ix_attempts_created", "created_at", "id"),
        Index("ix_attempts_learner_created", "learner", "created_at", "id"),
        Index("ix_attempts_verdict_created", "verdict", "created_at", "id"),
        Index("ix_attempts_likely_cause_created", "likely_cause", "created_at", "id"),
        Index("ix_attempts_score", "score", "id"),
        Index("ix_attempts_exercise_score", "exercise_id", "score", "id"),
        # ?client= (and ?exercise=, above): a client or exercise with no recent attempts is not
        # behind every newer row (migration 0009).
        Index("ix_attempts_client_created", "client_id", "created_at", "id"),
        # A course's attempts, newest first: what course staff read (migration 0015).
        Index("ix_attempts_course_created", "course_id", "created_at", "id"),
        # One sequence of attempt numbers per learner and assignment, in its course (migrations 0014,
        # 0021): of two requests racing for the last allowed attempt, the second's insert fails here.
        Index("ux_attempts_number", "client_id", "exercise_id", func.coalesce(text("lti_link_id"), 0),
              func.coalesce(text("course_id"), 0), "learner", "attempt_number", unique=True),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    # The client's own identifier of the learner; unique only within that client.
    learner: Mapped[str] = mapped_column(String(255))
    exercise_id: Mapped[int] = mapped_column(ForeignKey("exercises.id"))
    exercise_version_id: Mapped[int] = mapped_column(ForeignKey("exercise_versions.id"))
    # A quiz answer (JSON), or null for a code exercise, whose source is in `code`.
    answer: Mapped[Any] = mapped_column(JSONType, nullable=True)
    code: Mapped[str | None] = mapped_column(Text)
    # The score that counts: the grader's, or an instructor's override (`overridden`).
    score: Mapped[float | None]
    correct: Mapped[bool | None]
    # What the grader (the latest regrade included) gave; kept when an instructor overrides `score`.
    grader_score: Mapped[float | None]
    overridden: Mapped[bool] = mapped_column(default=False)
    # Copied from the result when graded, for searching: passed, failed, timeout, internal_error…
    verdict: Mapped[str | None] = mapped_column(String(32))
    # The grader's first likely cause of a failure (e.g. wrong_sign), null when none.
    likely_cause: Mapped[str | None] = mapped_column(String(64))
    # The LTI resource link a learner launched to make this attempt: its score goes back to
    # that link's line item. Null for attempts made through the REST API.
    lti_link_id: Mapped[int | None] = mapped_column(ForeignKey("lti_resource_links.id"))
    # The course it was made in (service/models/course.py); None: made outside any course (an
    # instructor trying an exercise out, a client's learner with no course).
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id"))
    # Its place among the learner's attempts in its assignment (1, 2, ...; service/rules.py), whether
    # it came after the due date, and the penalties its rules applied ([{"reason", "factor"}]; null:
    # none): `score` is `grader_score` times their factors, in a regrade too.
    attempt_number: Mapped[int | None]
    late: Mapped[bool] = mapped_column(default=False, server_default=false())
    penalties: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType, nullable=True)
    # The scoring policy it was submitted under ({"policy", "cap"}: service/scoring.py), which makes
    # `grader_score` of its grade, in a regrade too; null (made before migration 0024): partial.
    scoring: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)

    client: Mapped[ApiClient] = relationship()
    exercise: Mapped[Exercise] = relationship(lazy="joined", innerjoin=True)
    exercise_version: Mapped[ExerciseVersion] = relationship(lazy="joined", innerjoin=True)

    @property
    def report(self) -> dict[str, Any] | None:
        """The code grader's report (quiz kinds have feedback instead)."""
        return self.result if self.code is not None else None


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """A new attempt's row: a value for every column of attempts (none left to the columns'
    defaults), as services/attempts.py writes it with one Core statement, no ORM object made.
    What a reader sees of it is an AttemptView (services/standing.py), as of a stored Attempt."""

    id: uuid.UUID
    client_id: int
    learner: str
    exercise_id: int
    exercise_version_id: int
    lti_link_id: int | None
    course_id: int | None
    attempt_number: int
    late: bool
    penalties: list[dict[str, Any]] | None
    scoring: dict[str, Any] | None
    created_at: datetime
    request_id: str | None
    status: str
    answer: Any
    code: str | None
    result: dict[str, Any] | None
    correct: bool | None
    grader_score: float | None
    score: float | None
    verdict: str | None
    graded_at: datetime | None
    # Set later, by a grade, the workers or an instructor.
    likely_cause: str | None = None
    overridden: bool = False
    started_at: datetime | None = None
    tries: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    dispatched_at: datetime | None = None


class Run(GradingJob, Base):
    """Code run in the sandbox: the lesson's "Try it yourself" button, and an exercise page's "Run"
    (with the exercise's entry point and sample inputs; never graded)."""

    __tablename__ = "runs"
    JOB_KIND = "run"
    __table_args__ = (Index("ix_runs_queue", "status", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"), index=True)
    code: Mapped[str] = mapped_column(Text)
    entry_point: Mapped[str | None] = mapped_column(String(100))
    inputs: Mapped[Any] = mapped_column(JSONType, nullable=True)
    # The learner whose token made the run (null: made with an API key); only they see it.
    learner: Mapped[str | None] = mapped_column(String(255))
    # The exercise the run counts for (its rules' `runs`, `max_runs`): the one whose entry point and
    # sample inputs it used (a page's "Run" button), or the one exercise a learner token that made a
    # free run reaches (resources/runs.py). Null: a free run of a key, or of a token of several.
    exercise_id: Mapped[int | None] = mapped_column(ForeignKey("exercises.id"))
    # The course of the learner token that made it (its runs count there alone); null: none.
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id"))

    # Loaded when read (never joined: the workers claim runs with SELECT ... FOR UPDATE).
    exercise: Mapped[Exercise | None] = relationship()
    # The optional checks the request asked for (grading.registry.OPTIONS), with those of the
    # exercise it runs: double backward (torch.autograd.gradgradcheck), forward mode (jvp), in place, vmap.
    gradgradcheck: Mapped[bool] = mapped_column(default=False, server_default=false())
    forward_ad: Mapped[bool] = mapped_column(default=False, server_default=false())
    in_place: Mapped[bool] = mapped_column(default=False, server_default=false())
    vmap: Mapped[bool] = mapped_column(default=False, server_default=false())

    @property
    def options(self) -> frozenset[str]:
        flags = (("gradgradcheck", self.gradgradcheck), ("forward_ad", self.forward_ad), ("in_place", self.in_place),
                 ("vmap", self.vmap))
        return frozenset(name for name, on in flags if on)


class AttemptEvent(Base):
    """Something that happened to an attempt, written in the transaction that made it happen.

    A grade writes `attempt.graded` together with the result, so a task delivered twice, or a
    job graded again after its worker died, still makes one event: the outbox webhooks and grade
    passback deliver from.
    """

    __tablename__ = "attempt_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    attempt_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("attempts.id"), index=True)
    type: Mapped[str] = mapped_column(String(32))
    # The attempt's grade as the event saw it: {status, score, correct}.
    data: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # What the statistics counters take from this event (progress.counter_input), and when the
    # workers folded it into them (None: not yet; progress.fold_pending).
    counters: Mapped[dict[str, Any] | None]
    counted_at: Mapped[datetime | None]


GRADED_EVENT = "attempt.graded"
REGRADED_EVENT = "attempt.regraded"
OVERRIDDEN_EVENT = "attempt.overridden"


def grade_columns(result: dict[str, Any] | None, correct: bool | None, is_code: bool) -> dict[str, Any]:
    """The searchable columns of a grade, taken from its result (one place for every grader)."""
    if is_code:
        causes = (result or {}).get("likely_causes") or []
        return {"verdict": (result or {}).get("status"), "likely_cause": causes[0] if causes else None}
    return {"verdict": None if correct is None else ("passed" if correct else "failed"), "likely_cause": None}


class IdempotencyRecord(Base):
    """The first response to a POST that carried an Idempotency-Key, replayed on retries."""

    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("client_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"))
    key: Mapped[str] = mapped_column(String(255))
    # SHA-256 of method, path and body: the same key with another request is refused.
    request_digest: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int]
    response_body: Mapped[dict[str, Any]]
    location: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
