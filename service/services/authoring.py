"""Course exercises (issue 34): a course's staff save drafts, which are proven, then published.

One path for every way an exercise is written (the course exercises API with JSON files or an
archive, the dashboard's editor, a course's git repository):
- `save_draft` checks the files' format with the catalog's reader (loader.exercise_from_files: runs
  nothing) and stores a version: the same content as an existing version is that version; format
  problems make it `failed` at once; a quiz is proven at once (proof.prove(None, ...): torch-free);
  a code exercise's proof is queued for the grading workers (`ExerciseProof`), whose completion
  stores the report on the version (`record_proof`, in the job's own transaction).
- `publish` makes a proven version current (a draft, or an older one: the way back); `unpublish`
  hides the exercise; `delete_exercise` removes one no learner has answered.

Free of Flask and torch. The caller commits, then dispatches the proof job (`DraftOutcome.proof_job`)
as every job is dispatched (extensions.dispatch_job, or jobs.dispatch.dispatcher_for outside a request).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from ..catalog import proof
from ..catalog.loader import SPEC_FILE, content_digest, exercise_from_files, slug_problem
from ..models import (
    Attempt,
    Course,
    Exercise,
    ExerciseProof,
    ExerciseTopic,
    ExerciseVersion,
    PreviewAttempt,
    Run,
)
from ..models.base import utcnow
from ..models.exercise import PROOF_FAILED, PROOF_PASSED, PROOF_QUEUED, PROOF_RUNNING
from ..models.preparation import forget_superseded

DRAFT, PUBLISHED, UNPUBLISHED = "draft", "published", "unpublished"


class AuthoringError(Exception):
    """A request the authoring rules refuse; `str()` is the message for the author."""


class InvalidSlug(AuthoringError):
    pass


class SlugTaken(AuthoringError):
    """The slug names an exercise already: the catalog's or any course's (never said whose)."""


class NotCourseExercise(AuthoringError):
    """No exercise of this course has the slug (another course's, or the catalog's, is not there)."""


class NoSuchVersion(AuthoringError):
    pass


class HasAttempts(AuthoringError):
    pass


class NotProven(AuthoringError):
    """The version is not proven: failed (with its problems) or not yet (queued or running)."""

    def __init__(self, number: int, status: str, problems: list[proof.ProofProblem]) -> None:
        self.number, self.status, self.problems = number, status, problems
        if status == PROOF_FAILED:
            text = (f"Version {number} is not proven: its proof failed ({len(problems)} problem(s)). "
                    "Fix them and save a new version.")
        else:
            text = f"Version {number} is not proven yet: its proof is {status}. Publish it once it has passed."
        super().__init__(text)


#: A proof job the workers gave up on (the grader itself failed on every try).
PROOF_NOT_RUN: dict[str, Any] = proof.ProofReport([proof.ProofProblem(
    "(proof)", "(grader)", "the proof could not be run: the grader failed on every try. Prove it again later; "
    "if it fails again, tell the service's operators.")]).to_json()


@dataclass(frozen=True)
class DraftOutcome:
    exercise: Exercise
    version: ExerciseVersion
    #: False: the files are the content of an existing version, which is returned.
    created: bool
    #: The proof job queued for this version (a code exercise's), to dispatch once committed.
    proof_job: ExerciseProof | None = None


@dataclass(frozen=True)
class ProofView:
    """A version's proof as the API shows it (ExerciseDraft.proof)."""

    status: str
    passed: bool | None
    problems: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, version: ExerciseVersion) -> ProofView:
        report = version.proof or {}
        passed = None if version.proof_status in (PROOF_QUEUED, PROOF_RUNNING) else version.proof_status == PROOF_PASSED
        return cls(version.proof_status, passed, list(report.get("problems", [])), list(report.get("steps", [])))


def status_of(exercise: Exercise, ever_published: bool) -> str:
    """draft (never published), published, or unpublished (published once, hidden now)."""
    if exercise.published:
        return PUBLISHED
    return UNPUBLISHED if ever_published else DRAFT


def ever_published(session: Session, exercise_id: int) -> bool:
    return session.scalar(select(func.count()).select_from(ExerciseVersion).where(
        ExerciseVersion.exercise_id == exercise_id, ExerciseVersion.published_at.is_not(None))) != 0


def course_exercise(session: Session, course_id: int, slug: str) -> Exercise:
    """The course's exercise `slug`; NotCourseExercise for any other (the catalog's, another course's)."""
    exercise = session.scalar(select(Exercise).where(Exercise.slug == slug, Exercise.course_id == course_id))
    if exercise is None:
        raise NotCourseExercise(f"This course has no exercise {slug!r}.")
    return exercise


def version_of(session: Session, exercise: Exercise, number: int) -> ExerciseVersion:
    version = session.scalar(select(ExerciseVersion).where(ExerciseVersion.exercise_id == exercise.id,
                                                           ExerciseVersion.number == number))
    if version is None:
        raise NoSuchVersion(f"Exercise {exercise.slug!r} has no version {number}.")
    return version


def latest_number(session: Session, exercise_id: int) -> int:
    return session.scalar(select(func.max(ExerciseVersion.number)).where(ExerciseVersion.exercise_id == exercise_id)) or 0


def version_files(version: ExerciseVersion) -> dict[str, str]:
    """The version's files as written, exercise.toml included (the raw text the author saved; a
    catalog version, saved before raw texts were kept, has none)."""
    written = dict(version.content.get("source", {}))
    return {**written, **version.content.get("files", {})}


def _listing(raw_toml: str, slug: str) -> dict[str, Any]:
    """Listing fields read leniently from a spec that may not be valid (a new exercise's first
    draft is listed even when its format fails)."""
    try:
        spec = tomllib.loads(raw_toml)
    except tomllib.TOMLDecodeError:
        spec = {}
    title, kind, difficulty, topics = (spec.get(key) for key in ("title", "kind", "difficulty", "topics"))
    return {"title": title[:200] if isinstance(title, str) and title else slug,
            "kind": kind[:32] if isinstance(kind, str) else "",
            "difficulty": difficulty if isinstance(difficulty, int) and not isinstance(difficulty, bool) else 1,
            "topics": [t for t in topics if isinstance(t, str)][:20] if isinstance(topics, list) else []}


def _copy_listing(exercise: Exercise, listing: Mapping[str, Any]) -> None:
    exercise.kind, exercise.title, exercise.difficulty = listing["kind"], listing["title"], listing["difficulty"]
    wanted = {t[:40] for t in listing["topics"]}
    exercise.topics = [t for t in exercise.topics if t.topic in wanted] + [
        ExerciseTopic(topic=t) for t in sorted(wanted - set(exercise.topic_names))]


def _listing_of(version: ExerciseVersion, slug: str) -> dict[str, Any]:
    spec = version.content.get("spec") or {}
    if spec:
        return {"title": spec["title"], "kind": spec["kind"], "difficulty": spec["difficulty"],
                "topics": list(spec.get("topics", []))}
    return _listing(version.content.get("source", {}).get(SPEC_FILE, ""), slug)


def _holder(session: Session, course: Course, slug: str, new: bool | None) -> Exercise | None:
    """The course's exercise `slug` if it exists (None: it is to be made), as `new` allows."""
    wrong_slug = slug_problem(slug)
    if wrong_slug is not None:
        raise InvalidSlug(f"Slug {slug!r}: {wrong_slug}.")
    holder = session.scalar(select(Exercise).where(Exercise.slug == slug))
    if holder is not None and holder.course_id != course.id:
        if new is False:
            raise NotCourseExercise(f"This course has no exercise {slug!r}.")
        raise SlugTaken(f"The slug {slug!r} is taken: choose another.")
    if holder is not None and new is True:
        raise SlugTaken(f"The slug {slug!r} is taken: choose another.")
    if holder is None and new is False:
        raise NotCourseExercise(f"This course has no exercise {slug!r}.")
    return holder


def save_draft(session: Session, course: Course, slug: str, files: Mapping[str, str], *, author: str, source: str,
               note: str | None = None, publish_when_proven: bool = False, new: bool | None = None) -> DraftOutcome:
    """Store `files` (relative path -> text) as a version of the course's exercise `slug`.

    `new`: True, the exercise must not exist yet (SlugTaken); False, it must be this course's
    (NotCourseExercise); None, either (a git sync). A slug another course or the catalog holds is
    SlugTaken. The version is proven at once (format problems, a quiz) or its proof queued (code).
    Nothing is committed."""
    holder = _holder(session, course, slug, new)
    raw = {path: text.encode("utf-8") for path, text in files.items()}
    checked, problems = exercise_from_files(slug, raw)
    digest = checked.digest if checked is not None else content_digest(raw)
    now = utcnow()
    exercise = holder
    if exercise is not None:
        existing = session.scalar(select(ExerciseVersion).where(ExerciseVersion.exercise_id == exercise.id,
                                                                ExerciseVersion.digest == digest))
        if existing is not None:
            if publish_when_proven:
                _publish_when_proven(session, existing, exercise, author, now)
            return DraftOutcome(exercise, existing, created=False)
    listing = _listing(files.get(SPEC_FILE, ""), slug)
    if exercise is None:
        exercise = Exercise(slug=slug, course_id=course.id, published=False, current_version=1, created_at=now,
                            updated_at=now, **{k: v for k, v in listing.items() if k != "topics"})
        session.add(exercise)
        session.flush()
        _copy_listing(exercise, listing)
    elif not ever_published(session, exercise.id):
        _copy_listing(exercise, listing)  # a draft is listed as last written until it is published

    if checked is not None:
        content: dict[str, Any] = {**checked.content, "source": {SPEC_FILE: files[SPEC_FILE]}}
    else:
        content = {"spec": {}, "files": {p: t for p, t in files.items() if p != SPEC_FILE},
                   "source": {SPEC_FILE: files.get(SPEC_FILE, "")}}
    version = ExerciseVersion(exercise_id=exercise.id, number=latest_number(session, exercise.id) + 1, digest=digest,
                              content=content, created_at=now, author=author[:100], source=source, note=note,
                              publish_when_proven=publish_when_proven, proof_status=PROOF_QUEUED)
    session.add(version)
    session.flush()
    job = None
    if checked is None:
        record_proof(session, version, proof.format_report(problems).to_json(), now)
    elif checked.spec["kind"] != "code":
        report = proof.prove(None, {"slug": slug, **checked.content}, spec_text=files[SPEC_FILE])
        record_proof(session, version, report.to_json(), now)
    else:
        job = queue_proof(session, course, version, requested_by=author)
    return DraftOutcome(exercise, version, created=True, proof_job=job)


def queue_proof(session: Session, course: Course, version: ExerciseVersion, *, requested_by: str) -> ExerciseProof:
    """A new proof job of a code version (the version's earlier report is kept until it is done)."""
    job = ExerciseProof(exercise_version_id=version.id, course_id=course.id, client_id=course.client_id,
                        requested_by=requested_by[:100], status="queued")
    version.proof_status = PROOF_QUEUED
    session.add(job)
    session.flush()
    return job


def reprove(session: Session, course: Course, exercise: Exercise, version: ExerciseVersion, *,
            requested_by: str) -> ExerciseProof | None:
    """Prove the version again: a code version's proof is queued (the job, to dispatch once
    committed); a quiz's, or a version whose format fails, is proven again at once (None)."""
    spec = version.content.get("spec") or {}
    if spec.get("kind") == "code":
        return queue_proof(session, course, version, requested_by=requested_by)
    if spec:
        report = proof.prove(None, {"slug": exercise.slug, "spec": spec, "files": version.content["files"]},
                             spec_text=version_files(version).get(SPEC_FILE))
    else:
        checked, problems = exercise_from_files(exercise.slug, {p: t.encode() for p, t in version_files(version).items()})
        report = proof.format_report(problems)
    record_proof(session, version, report.to_json(), utcnow())
    return None


def record_proof(session: Session, version: ExerciseVersion, report: dict[str, Any], at: datetime) -> None:
    """Store a proof's report on its version, and publish the version if it passed and its author
    asked for that (`publish_when_proven`). In the caller's transaction (the proof job's completion)."""
    version.proof, version.proven_at = report, at
    version.proof_status = PROOF_PASSED if report.get("passed") else PROOF_FAILED
    if version.proof_status == PROOF_PASSED and version.publish_when_proven:
        exercise = session.get_one(Exercise, version.exercise_id)
        _make_current(session, exercise, version, at)


def record_proof_job(session: Session, job_id: Any, report: dict[str, Any], at: datetime) -> None:
    """The worker stored a proof job's result (db_lease.complete): copy it to the job's version,
    unless a newer proof of that version was asked for meanwhile (that one's result will be stored)."""
    version_id = session.scalar(select(ExerciseProof.exercise_version_id).where(ExerciseProof.id == job_id))
    newer = session.scalar(select(func.count()).select_from(ExerciseProof).where(
        ExerciseProof.exercise_version_id == version_id, ExerciseProof.status.in_(("queued", "running")),
        ExerciseProof.id != job_id))
    version = session.get_one(ExerciseVersion, version_id)
    if newer:
        return
    record_proof(session, version, report, at)


def mark_proof_running(session: Session, job: ExerciseProof) -> None:
    """A worker took the job: its version's proof is running (unless a newer status was written)."""
    session.execute(update(ExerciseVersion).where(ExerciseVersion.id == job.exercise_version_id,
                                                  ExerciseVersion.proof_status == PROOF_QUEUED)
                    .values(proof_status=PROOF_RUNNING))


def _publish_when_proven(session: Session, version: ExerciseVersion, exercise: Exercise, author: str,
                         at: datetime) -> None:
    """Saving an existing version's content again asked for it to be published once proven."""
    if version.proof_status == PROOF_PASSED:
        if not (exercise.published and exercise.current_version == version.number):
            _make_current(session, exercise, version, at)
    elif version.proof_status in (PROOF_QUEUED, PROOF_RUNNING):
        version.publish_when_proven = True


def _make_current(session: Session, exercise: Exercise, version: ExerciseVersion, at: datetime) -> None:
    exercise.current_version, exercise.published, exercise.unpublished_by = version.number, True, None
    exercise.updated_at = version.published_at = at
    version.publish_when_proven = False
    _copy_listing(exercise, _listing_of(version, exercise.slug))
    forget_superseded(session, {exercise.id: version.id})


def publish(session: Session, exercise: Exercise, number: int | None, *, actor: str) -> ExerciseVersion:
    """Make version `number` (default: the latest) current and published; NotProven unless its
    proof passed. An older proven version may be published again: the way back. Attempts keep the
    version they answered."""
    version = version_of(session, exercise, number if number is not None else latest_number(session, exercise.id))
    if version.proof_status != PROOF_PASSED:
        problems = proof.ProofReport.from_json(version.proof or {}).problems
        raise NotProven(version.number, version.proof_status, problems)
    _make_current(session, exercise, version, utcnow())
    return version


def unpublish(session: Session, exercise: Exercise, *, actor: str) -> None:
    """Hide the exercise from its course's learners (idempotent); its attempts stay."""
    if exercise.published:
        exercise.published, exercise.unpublished_by, exercise.updated_at = False, actor[:100], utcnow()


def delete_exercise(session: Session, exercise: Exercise) -> None:
    """Remove an exercise no learner has answered and no LTI link places, with its versions, proofs,
    previews, staff runs and rules; HasAttempts otherwise (unpublish it instead: attempts keep
    their version, links their exercise)."""
    from ..models import AssessmentRules, LtiLinkExercise, LtiResourceLink, VariantPreparation

    if session.scalar(select(func.count()).select_from(Attempt).where(Attempt.exercise_id == exercise.id)):
        raise HasAttempts(f"Exercise {exercise.slug!r} has attempts: unpublish it instead (attempts keep their version).")
    placed = session.scalar(select(func.count()).select_from(LtiResourceLink).where(LtiResourceLink.exercise_id == exercise.id))
    placed = placed or session.scalar(select(func.count()).select_from(LtiLinkExercise)
                                      .where(LtiLinkExercise.exercise_id == exercise.id))
    if placed:
        raise HasAttempts(f"Exercise {exercise.slug!r} is placed in the course by an LTI link: unpublish it instead.")
    versions = select(ExerciseVersion.id).where(ExerciseVersion.exercise_id == exercise.id).scalar_subquery()
    session.execute(delete(ExerciseProof).where(ExerciseProof.exercise_version_id.in_(versions)))
    session.execute(delete(PreviewAttempt).where(PreviewAttempt.exercise_version_id.in_(versions)))
    session.execute(delete(VariantPreparation).where(VariantPreparation.exercise_version_id.in_(versions)))
    session.execute(delete(Run).where(Run.exercise_id == exercise.id))
    session.execute(delete(AssessmentRules).where(AssessmentRules.exercise_id == exercise.id))
    session.execute(delete(ExerciseVersion).where(ExerciseVersion.exercise_id == exercise.id))
    session.delete(exercise)
    session.flush()
