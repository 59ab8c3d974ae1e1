"""A course's sync from its git repository: queued by "Sync now" or a push webhook, run by the
workers' supervisor (`GitSyncer`, a thread of `flask worker` and `flask outbound`), never in a web
request.

Each exercise folder of the fetched branch (service/gitsync/fetch.py) is checked by the catalog's
reader (service/catalog/loader.py `exercise_from_files`: it runs nothing), then:

- unchanged: its content is the exercise's current published version;
- saved as a draft version (service/services/authoring.py `save_draft`, source "git", the commit
  as its note), to be published by the worker once its proof passes: "proving", later
  "published" or "proof_failed" (read from the version's proof when the sync is shown);
- content the exercise had before (a revert): that version is published again if it was proven;
- invalid: the format's problems; nothing saved, the last published version stays live;
- a slug that is another course's or the catalog's: invalid, saying the slug is taken;
- a folder removed: its exercise (one this repository made) is unpublished: "removed".

One exercise's failure never stops the others (each in a savepoint).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from sqlalchemy import CursorResult, and_, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from .. import background
from ..catalog.loader import exercise_from_files
from ..catalog.proof import ProofProblem, ProofReport, format_report
from ..config import Settings
from ..database import engine_for
from ..models import Course, CourseGitRepo, Exercise, ExerciseProof, ExerciseVersion, GitSync, GitSyncStatus
from ..models.base import utcnow
from ..models.exercise import PROOF_FAILED, PROOF_PASSED
from ..sealing import InvalidToken, open_sealed
from .fetch import ExerciseFolder, FetchRefused, exercise_folders, fetched

log = logging.getLogger(__name__)
# The author and actor of what a sync saves, publishes or unpublishes.
ACTOR = "git sync"
LEASE = timedelta(minutes=10)
POLL_SECONDS = 1.0


class Outcome:
    UNCHANGED = "unchanged"
    PROVING = "proving"
    PUBLISHED = "published"
    PROOF_FAILED = "proof_failed"
    INVALID = "invalid"
    REMOVED = "removed"


@dataclass(frozen=True)
class ExerciseOutcome:
    """What one sync did with one exercise folder (stored as JSON in git_syncs.exercises)."""

    slug: str
    outcome: str
    version: int | None = None
    problems: list[ProofProblem] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def queue_sync(session: Session, course_id: int, requested_by: str) -> GitSync:
    """A sync of the course's repository, queued (the one already waiting, if any: pushes in a
    burst make one sync)."""
    waiting = session.scalar(select(GitSync).where(GitSync.course_id == course_id,
                                                   GitSync.status == GitSyncStatus.QUEUED))
    if waiting is not None:
        return waiting
    sync = GitSync(course_id=course_id, requested_by=requested_by[:100], status=GitSyncStatus.QUEUED, exercises=[])
    session.add(sync)
    session.flush()
    return sync


def _problems(found: list[Any]) -> list[ProofProblem]:
    """Format problems as a proof names them: the file in the exercise's folder, with its line."""
    return format_report(found).problems


def _report_problems(report: dict[str, Any] | None) -> list[ProofProblem]:
    """A version's proof problems (the ProofReport's JSON)."""
    return ProofReport.from_json(report or {}).problems


def _apply_folder(session: Session, course: Course, folder: ExerciseFolder, commit: str,
                  proof_jobs: list[Any]) -> ExerciseOutcome:
    """One folder's outcome; a proof job queued for it is added to `proof_jobs` (dispatched once
    committed)."""
    from ..services import authoring  # the authoring service loads the proof's code; only here

    if folder.refused:
        return ExerciseOutcome(folder.slug, Outcome.INVALID, problems=[
            ProofProblem(rel, "(file)", "a symbolic link or submodule: only plain files are read")
            for rel in folder.refused])
    exercise_file, problems = exercise_from_files(folder.slug, folder.files)
    if exercise_file is None:
        return ExerciseOutcome(folder.slug, Outcome.INVALID, problems=_problems(problems))
    exercise = session.scalar(select(Exercise).where(Exercise.slug == folder.slug, Exercise.course_id == course.id))
    if exercise is not None and exercise.published:
        current = session.scalar(select(ExerciseVersion.digest).where(
            ExerciseVersion.exercise_id == exercise.id, ExerciseVersion.number == exercise.current_version))
        if current == exercise_file.digest:
            return ExerciseOutcome(folder.slug, Outcome.UNCHANGED, exercise.current_version)
    files = {path: data.decode("utf-8") for path, data in folder.files.items()}
    try:
        # Content the exercise had before (a revert) is that version: published again if proven.
        draft = authoring.save_draft(session, course, folder.slug, files, author=ACTOR, source="git",
                                     note=f"git {commit}", publish_when_proven=True)
    except authoring.SlugTaken:
        return ExerciseOutcome(folder.slug, Outcome.INVALID, problems=[ProofProblem(
            "", "(folder name)", "this slug is taken by another exercise: rename the folder")])
    if draft.proof_job is not None:
        proof_jobs.append(draft.proof_job)
    version = draft.version
    if version.proof_status == PROOF_PASSED:
        return ExerciseOutcome(folder.slug, Outcome.PUBLISHED, version.number)
    if version.proof_status == PROOF_FAILED:
        return ExerciseOutcome(folder.slug, Outcome.PROOF_FAILED, version.number, _report_problems(version.proof))
    return ExerciseOutcome(folder.slug, Outcome.PROVING, version.number)


def _removed(session: Session, course: Course, present: set[str]) -> list[ExerciseOutcome]:
    """The course's published exercises this repository made whose folder is gone: unpublished."""
    from ..services import authoring

    made_by_git = select(ExerciseVersion.exercise_id).where(ExerciseVersion.source == "git")
    gone = session.scalars(select(Exercise).where(Exercise.course_id == course.id, Exercise.published.is_(True),
                                                  Exercise.id.in_(made_by_git), Exercise.slug.not_in(present)))
    outcomes = []
    for exercise in gone.all():
        authoring.unpublish(session, exercise, actor=ACTOR)
        outcomes.append(ExerciseOutcome(exercise.slug, Outcome.REMOVED, exercise.current_version))
    return outcomes


def apply_folders(session: Session, course: Course, folders: list[ExerciseFolder], commit: str,
                  proof_jobs: list[Any]) -> list[ExerciseOutcome]:
    """Every folder's outcome, then the removed ones; each exercise in a savepoint of its own. The
    proof jobs queued are added to `proof_jobs`, to dispatch once committed."""
    outcomes = []
    for folder in folders:
        savepoint = session.begin_nested()
        queued: list[Any] = []
        try:
            outcomes.append(_apply_folder(session, course, folder, commit, queued))
            savepoint.commit()
            proof_jobs += queued
        except Exception as exc:  # a bug or a refusal of one exercise must not stop the others
            savepoint.rollback()
            log.exception("git sync of course %s: exercise %s failed", course.id, folder.slug)
            outcomes.append(ExerciseOutcome(folder.slug, Outcome.INVALID, problems=[
                ProofProblem("", "(sync)", f"could not be saved ({type(exc).__name__}): try again")]))
    outcomes += _removed(session, course, {folder.slug for folder in folders})
    return outcomes


def shown_exercises(session: Session, sync: GitSync) -> list[dict[str, Any]]:
    """The sync's outcomes as shown now: a version still proving when the sync ended shows what its
    proof became (published, or proof_failed with its problems)."""
    pending = [e for e in sync.exercises if e["outcome"] == Outcome.PROVING and e.get("version") is not None]
    versions: dict[tuple[str, int], ExerciseVersion] = {}
    if pending:
        rows = session.execute(select(Exercise.slug, ExerciseVersion).join(
            ExerciseVersion, ExerciseVersion.exercise_id == Exercise.id).where(
            Exercise.course_id == sync.course_id,
            or_(*(and_(Exercise.slug == e["slug"], ExerciseVersion.number == e["version"]) for e in pending))))
        versions = {(slug, version.number): version for slug, version in rows}
    shown = []
    for entry in sync.exercises:
        version = versions.get((entry["slug"], entry.get("version") or 0)) if entry["outcome"] == Outcome.PROVING else None
        if version is not None and version.proof_status == PROOF_PASSED:
            entry = {**entry, "outcome": Outcome.PUBLISHED}
        elif version is not None and version.proof_status == PROOF_FAILED:
            entry = {**entry, "outcome": Outcome.PROOF_FAILED,
                     "problems": [asdict(p) for p in _report_problems(version.proof)]}
        shown.append(entry)
    return shown


class JobDispatcher(Protocol):
    """How a committed job reaches the grading workers (service/jobs/dispatch.py dispatcher_for)."""

    def dispatch(self, session: Session, model: Any, job_id: Any) -> None: ...


class GitSyncer:
    """Runs queued syncs until stopped: claims one (a lease: a syncer that dies leaves it to
    another once the lease passes), fetches with no session open, applies, records, then hands the
    proofs it queued to the grading workers through `dispatcher`."""

    def __init__(self, settings: Settings, dispatcher: JobDispatcher) -> None:
        self.settings = settings
        self.sessions = sessionmaker(bind=engine_for(settings.sqlalchemy_url), expire_on_commit=False)
        self.dispatcher = dispatcher

    def claim(self, now: datetime) -> int | None:
        """The id of a sync claimed (committed), or None. One sync of a course runs at a time, and
        not while the proofs the last one queued are still waiting or running: a course pushing
        faster than its exercises are proven fills no queue (its pushes make one sync meanwhile)."""
        with self.sessions() as session:
            busy = select(GitSync.course_id).where(GitSync.status == GitSyncStatus.RUNNING, GitSync.lease_until > now)
            proving = select(ExerciseProof.course_id).where(ExerciseProof.status.in_(("queued", "running")),
                                                            ExerciseProof.requested_by == ACTOR)
            candidates = session.scalars(select(GitSync.id).where(
                or_(GitSync.status == GitSyncStatus.QUEUED,
                    and_(GitSync.status == GitSyncStatus.RUNNING, GitSync.lease_until <= now)),
                GitSync.course_id.not_in(busy), GitSync.course_id.not_in(proving)).order_by(GitSync.id).limit(5)).all()
            for sync_id in candidates:
                # Taken only if still free: another syncer may have claimed it meanwhile.
                result = cast(CursorResult[Any], session.execute(
                    update(GitSync).where(GitSync.id == sync_id, or_(
                        GitSync.status == GitSyncStatus.QUEUED,
                        and_(GitSync.status == GitSyncStatus.RUNNING, GitSync.lease_until <= now)))
                    .values(status=GitSyncStatus.RUNNING, lease_until=now + LEASE, started_at=now)))
                if result.rowcount == 1:
                    session.commit()
                    return sync_id
            session.commit()
        return None

    def run_once(self) -> int:
        """Run every sync queued now; how many ran."""
        ran = 0
        while (sync_id := self.claim(utcnow())) is not None:
            self.run(sync_id)
            ran += 1
        return ran

    def run(self, sync_id: int) -> None:
        with self.sessions() as session:
            sync = session.get(GitSync, sync_id)
            repo = session.get(CourseGitRepo, sync.course_id) if sync is not None else None
            if sync is None:
                return
            if repo is None:
                self._finish(sync_id, error="The course no longer names a git repository.")
                return
            url, branch, path, sealed = repo.url, repo.branch, repo.path, repo.token_sealed
            session.commit()
        try:
            token = open_sealed(self.settings.secret_key, sealed).decode() if sealed else None
        except InvalidToken:
            self._finish(sync_id, error="The deploy token cannot be read (the server's SECRET_KEY changed): "
                                        "give it again.")
            return
        try:
            with fetched(self.settings, url, branch, token) as (commit, git_dir):
                folders = exercise_folders(git_dir, path)
        except FetchRefused as exc:
            self._finish(sync_id, error=str(exc))
            return
        except Exception as exc:  # a bug must not stop the other syncs; the record says little
            log.exception("git sync %s of a course failed", sync_id)
            self._finish(sync_id, error=f"The sync failed ({type(exc).__name__}).")
            return
        with self.sessions() as session:
            course = session.get(Course, self._course_id(session, sync_id))
            if course is None:
                return
            proof_jobs: list[Any] = []
            outcomes = apply_folders(session, course, folders, commit, proof_jobs)
            self._record(session, sync_id, commit=commit, exercises=[o.to_json() for o in outcomes])
            session.commit()
            for job in proof_jobs:
                self.dispatcher.dispatch(session, type(job), job.id)
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        log.info("git sync %s of course %s at %s: %s", sync_id, course.id, commit[:12],
                 ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no exercise folder")

    @staticmethod
    def _course_id(session: Session, sync_id: int) -> int:
        return session.scalars(select(GitSync.course_id).where(GitSync.id == sync_id)).one()

    @staticmethod
    def _record(session: Session, sync_id: int, *, commit: str | None = None, error: str | None = None,
                exercises: list[dict[str, Any]] | None = None) -> None:
        sync = session.get(GitSync, sync_id)
        assert sync is not None
        sync.status = GitSyncStatus.FAILED if error else GitSyncStatus.DONE
        sync.commit, sync.error, sync.finished_at, sync.lease_until = commit, error and error[:500], utcnow(), None
        sync.exercises = exercises or []

    def _finish(self, sync_id: int, *, error: str) -> None:
        with self.sessions() as session:
            self._record(session, sync_id, error=error)
            session.commit()
        log.warning("git sync %s failed: %s", sync_id, error)

    def start_thread(self, stop: threading.Event) -> threading.Thread:
        return background.start_thread("git-syncer", self.run_once, stop, POLL_SECONDS)
