"""Staff's view of the catalog: every exercise, published or not, its versions, and publishing.

`published` is what the public catalog and new attempts obey. A sync of the exercise files sets
it from whether the folder exists, except for an exercise staff unpublished (`unpublished_by`):
that one stays unpublished through syncs until staff publish it again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import Attempt, Exercise, ExerciseVersion
from ..models.base import utcnow
from .exercise_access import ExerciseAudience


def all_exercises(session: Session, audience: ExerciseAudience) -> list[Exercise]:
    """Every exercise the caller sees (services/exercise_access.py), unpublished ones too."""
    return list(session.scalars(select(Exercise).where(audience.where()).order_by(Exercise.slug)))


def find(session: Session, slug: str, audience: ExerciseAudience) -> Exercise | None:
    """The exercise `slug`, published or not, if the caller sees it."""
    return session.scalar(select(Exercise).where(Exercise.slug == slug, audience.where()))


def versions(session: Session, exercise: Exercise, course_id: int | None = None) -> list[dict[str, Any]]:
    """The exercise's versions, newest first, each with how many attempts answered it (in course
    `course_id`, if given)."""
    counted = select(Attempt.exercise_version_id, func.count().label("attempts")).where(Attempt.exercise_id == exercise.id)
    if course_id is not None:
        counted = counted.where(Attempt.course_id == course_id)
    attempts = counted.group_by(Attempt.exercise_version_id).subquery()
    rows = session.execute(
        select(ExerciseVersion.number, ExerciseVersion.digest, ExerciseVersion.created_at,
               func.coalesce(attempts.c.attempts, 0))
        .outerjoin(attempts, attempts.c.exercise_version_id == ExerciseVersion.id)
        .where(ExerciseVersion.exercise_id == exercise.id).order_by(ExerciseVersion.number.desc()))
    return [{"number": number, "digest": digest, "created_at": created_at, "attempts": count,
             "current": number == exercise.current_version} for number, digest, created_at, count in rows]


def publish(exercise: Exercise) -> None:
    """Serve the exercise again (idempotent). If its folder was removed from the catalog, the
    next sync unpublishes it again: the files decide what exists."""
    if exercise.published and exercise.unpublished_by is None:
        return
    exercise.published, exercise.unpublished_by, exercise.updated_at = True, None, utcnow()


def unpublish(exercise: Exercise, actor: str) -> None:
    """Hide the exercise from the public catalog and refuse new attempts at it (idempotent); its
    attempts stay readable, and syncs keep it unpublished."""
    if not exercise.published and exercise.unpublished_by is not None:
        return
    exercise.published, exercise.unpublished_by, exercise.updated_at = False, actor, utcnow()
