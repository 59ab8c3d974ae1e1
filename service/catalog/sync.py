"""Brings the database in line with the exercise files, idempotently."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import Exercise, ExerciseTopic, ExerciseVersion
from ..models.base import utcnow
from .loader import ExerciseFile


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    unpublished: list[str] = field(default_factory=list)
    #: Exercises whose files are invalid now: each keeps serving the version synced last.
    kept: list[str] = field(default_factory=list)
    #: Folders whose slug a course's exercise holds (slugs are unique): not synced.
    taken: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (f"{len(self.created)} created, {len(self.updated)} updated, "
                f"{len(self.unchanged)} unchanged, {len(self.unpublished)} unpublished")
        text += f", {len(self.kept)} kept at their last valid version" if self.kept else ""
        return text + (f", {len(self.taken)} skipped (slug held by a course): {', '.join(self.taken)}"
                       if self.taken else "")


def known_content(session: Session, sources: Iterable[ExerciseFile]) -> set[str]:
    """The slugs of `sources` whose content the database holds already (a version with its
    digest): proven when it was synced, so not proven again."""
    by_slug = {source.slug: source.digest for source in sources}
    if not by_slug:
        return set()
    rows = session.execute(select(Exercise.slug, ExerciseVersion.digest).join(
        ExerciseVersion, ExerciseVersion.exercise_id == Exercise.id).where(Exercise.slug.in_(by_slug)))
    return {slug for slug, digest in rows if by_slug[slug] == digest}


def _version_for(session: Session, exercise: Exercise, source: ExerciseFile,
                 proof: Mapping[str, Any] | None) -> ExerciseVersion:
    """The version holding this content: an existing one with the same digest, or a new one, with
    its proof (`flask exercises sync` proves new content before it syncs it)."""
    version = session.scalar(
        select(ExerciseVersion).where(
            ExerciseVersion.exercise_id == exercise.id, ExerciseVersion.digest == source.digest
        )
    )
    if version is None:
        last = session.scalar(
            select(func.max(ExerciseVersion.number)).where(ExerciseVersion.exercise_id == exercise.id)
        )
        version = ExerciseVersion(
            exercise_id=exercise.id, number=(last or 0) + 1, digest=source.digest, content=source.content,
            source="catalog", proof_status="passed", proof=None if proof is None else dict(proof),
            proven_at=None if proof is None else utcnow(),
        )
        session.add(version)
        session.flush()
    return version


def _copy_listing_fields(exercise: Exercise, source: ExerciseFile) -> None:
    exercise.kind = source.spec["kind"]
    exercise.title = source.spec["title"]
    exercise.difficulty = source.spec["difficulty"]
    wanted = set(source.spec["topics"])
    exercise.topics = [t for t in exercise.topics if t.topic in wanted] + [
        ExerciseTopic(topic=t) for t in sorted(wanted - set(exercise.topic_names))
    ]


def sync_catalog(session: Session, sources: list[ExerciseFile], *, unpublish_missing: bool = True,
                 invalid: Collection[str] = (), proofs: Mapping[str, Mapping[str, Any]] | None = None) -> SyncReport:
    """Create or update one exercise per source, in one transaction the caller commits.

    Exercises whose folder is gone are unpublished, not deleted: their attempts stay. One that
    staff unpublished (`unpublished_by`) stays unpublished while its content is synced. `invalid`
    names exercises whose folder is there but whose files are not valid now: one already in the
    database is left as it is, serving its last valid version, until its files are mended.
    `proofs`: each new content's passed proof (ProofReport.to_json()) by slug, stored on its version.
    """
    proofs = proofs or {}
    report = SyncReport()
    # The catalog's own: a course's exercises (course_id) are never synced, nor unpublished, here.
    existing = {e.slug: e for e in session.scalars(select(Exercise).where(Exercise.course_id.is_(None)))}
    taken = set(session.scalars(select(Exercise.slug).where(Exercise.course_id.is_not(None))))
    for source in sources:
        if source.slug in taken:
            report.taken.append(source.slug)
            continue
        exercise = existing.get(source.slug)
        if exercise is None:
            exercise = Exercise(slug=source.slug, current_version=0, kind="", title="", difficulty=1)
            _copy_listing_fields(exercise, source)
            session.add(exercise)
            session.flush()
            version = _version_for(session, exercise, source, proofs.get(source.slug))
            exercise.current_version, version.published_at = version.number, utcnow()
            report.created.append(source.slug)
            continue
        version = _version_for(session, exercise, source, proofs.get(source.slug))
        # An exercise staff unpublished stays unpublished, whatever the files say.
        published = exercise.unpublished_by is None
        if version.number == exercise.current_version and exercise.published == published:
            report.unchanged.append(source.slug)
            continue
        exercise.current_version = version.number
        exercise.published = published
        exercise.updated_at = utcnow()
        if published:
            version.published_at = exercise.updated_at
        _copy_listing_fields(exercise, source)
        report.updated.append(source.slug)
    report.kept = sorted(set(invalid) & existing.keys())
    if unpublish_missing:
        present = {s.slug for s in sources} | set(invalid)
        for slug, exercise in existing.items():
            if slug not in present and exercise.published:
                exercise.published = False
                exercise.updated_at = utcnow()
                report.unpublished.append(slug)
    session.flush()
    return report
