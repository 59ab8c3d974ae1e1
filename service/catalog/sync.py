"""Brings the database in line with the exercise files, idempotently."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, load_only

from ..models import Exercise, ExerciseTopic, ExerciseVersion
from ..models.base import utcnow
from ..models.preparation import forget_superseded
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


def _new_version(number: int, source: ExerciseFile, proof: Mapping[str, Any] | None) -> ExerciseVersion:
    """A version for new content, with its proof (`flask exercises sync` proves new content before
    it syncs it)."""
    return ExerciseVersion(
        number=number, digest=source.digest, content=source.content, source="catalog", proof_status="passed",
        proof=None if proof is None else dict(proof), proven_at=None if proof is None else utcnow(),
    )


def _known_versions(session: Session, exercise_ids: Collection[int]) -> tuple[
        dict[tuple[int, str], ExerciseVersion], dict[int, int]]:
    """The existing exercises' versions by (exercise id, digest), and each exercise's last number:
    two queries for the whole catalog rather than two per exercise (a sync runs at every start)."""
    if not exercise_ids:
        return {}, {}
    versions = session.scalars(select(ExerciseVersion).options(load_only(
        ExerciseVersion.id, ExerciseVersion.exercise_id, ExerciseVersion.number, ExerciseVersion.digest,
        ExerciseVersion.published_at)).where(ExerciseVersion.exercise_id.in_(exercise_ids)))
    by_digest: dict[tuple[int, str], ExerciseVersion] = {}
    last_number: dict[int, int] = {}
    for version in versions:
        by_digest.setdefault((version.exercise_id, version.digest), version)
        last_number[version.exercise_id] = max(version.number, last_number.get(version.exercise_id, 0))
    return by_digest, last_number


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
    An exercise whose current version changes loses its other versions' variant preparations
    (models.preparation.forget_superseded).
    """
    proofs = proofs or {}
    report = SyncReport()
    # The catalog's own: a course's exercises (course_id) are never synced, nor unpublished, here.
    existing = {e.slug: e for e in session.scalars(select(Exercise).where(Exercise.course_id.is_(None)))}
    taken = set(session.scalars(select(Exercise.slug).where(Exercise.course_id.is_not(None))))
    versions, last_number = _known_versions(session, [e.id for e in existing.values()])
    made_current: dict[Exercise, ExerciseVersion] = {}
    # Nothing is flushed until the end: the new rows go in as one batch per table.
    with session.no_autoflush:
        for source in sources:
            if source.slug in taken:
                report.taken.append(source.slug)
                continue
            exercise = existing.get(source.slug)
            if exercise is None:
                version = _new_version(1, source, proofs.get(source.slug))
                version.published_at = utcnow()
                exercise = Exercise(slug=source.slug, current_version=1, kind="", title="", difficulty=1,
                                    versions=[version])
                _copy_listing_fields(exercise, source)
                session.add(exercise)
                report.created.append(source.slug)
                continue
            found = versions.get((exercise.id, source.digest))
            if found is None:
                found = _new_version(last_number.get(exercise.id, 0) + 1, source, proofs.get(source.slug))
                found.exercise_id = exercise.id
                session.add(found)
            # An exercise staff unpublished stays unpublished, whatever the files say.
            published = exercise.unpublished_by is None
            if found.number == exercise.current_version and exercise.published == published:
                report.unchanged.append(source.slug)
                continue
            made_current[exercise] = found
            exercise.current_version = found.number
            exercise.published = published
            exercise.updated_at = utcnow()
            if published:
                found.published_at = exercise.updated_at
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
    forget_superseded(session, {exercise.id: version.id for exercise, version in made_current.items()})
    return report
