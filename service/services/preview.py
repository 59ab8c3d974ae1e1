"""Preview attempts (issue 34): a course's staff answer a version of its exercise as a learner
would ("Preview as a learner"), graded by the same code as attempts and counted nowhere.

A preview is a `PreviewAttempt` row, never an `Attempt`: no attempt number, no rules, no
`attempt.graded` event (so no webhook, no LTI passback), nothing in statistics, the gradebook or
the attempt search. It is answered as the learner `preview:<actor>` of the course's client (the
staff member or course key previewing), whose variant (services/variants.py) is their own: never a
real learner's, since a learner id of a course never names a staff actor's preview.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from ..models import ApiClient, AttemptStatus, Exercise, ExerciseVersion, PreviewAttempt
from ..models.base import utcnow
from ..rules import resolve
from ..scoring import policy_score, scoring_json, scoring_of
from ..variants import variant_key
from . import authoring
from .attempts import ExerciseNotFound, checked_and_graded
from .standing import AttemptView

PREVIEW_LEARNER_PREFIX = "preview:"


class NotPreviewable(Exception):
    """The version's files do not make an exercise (its format's problems): nothing to show."""


def preview_learner(actor: str) -> str:
    """The learner a staff actor previews as."""
    return PREVIEW_LEARNER_PREFIX + actor


def preview_variant(client_id: int, actor: str) -> str:
    """The variant a preview is shown and graded in (the judge's `variant` for code)."""
    return variant_key(client_id, preview_learner(actor))


def preview_scoring(spec: dict[str, Any]) -> dict[str, Any]:
    """The scoring policy a preview of a version with `spec` is graded under: its exercise.toml's
    (the defaults otherwise), as a learner's attempt takes it where staff set none."""
    return scoring_of(resolve([spec.get("rules", {})]))


def course_version(session: Session, course_id: int, slug: str, number: int) -> tuple[Exercise, ExerciseVersion]:
    """Version `number` of the course's own exercise `slug`, published or not: ExerciseNotFound for
    any other (no such version, the catalog's, another course's); NotPreviewable when its files
    do not make an exercise."""
    try:
        exercise = authoring.course_exercise(session, course_id, slug)
        version = authoring.version_of(session, exercise, number)
    except (authoring.NotCourseExercise, authoring.NoSuchVersion):
        raise ExerciseNotFound(slug) from None
    if not version.content.get("spec"):
        raise NotPreviewable(f"Version {number} of {slug!r} has format problems (see its proof): fix them to preview it.")
    return exercise, version


def new_preview(session: Session, client: ApiClient, course_id: int, exercise: Exercise, version: ExerciseVersion,
                actor: str, answer: Any, code: str | None) -> PreviewAttempt:
    """A preview attempt at `version`, added to the session: a quiz answer graded now, in the
    previewer's variant, by the code that grades attempts (services/attempts.py); code queued for
    the grading workers (service/jobs/worker.py grade_preview). Raises InvalidAnswer."""
    grade = checked_and_graded(client, exercise, version, preview_learner(actor), answer, code)
    now = utcnow()
    preview = PreviewAttempt(course_id=course_id, client_id=client.id, exercise_version_id=version.id,
                             actor=actor[:255], answer=answer, code=code, created_at=now,
                             status=AttemptStatus.QUEUED.value if grade is None else AttemptStatus.GRADED.value)
    if grade is not None:
        score = policy_score(preview_scoring(version.spec), grade.score, grade.correct)
        preview.result, preview.score, preview.correct, preview.graded_at = grade.as_result(), score, grade.correct, now
    session.add(preview)
    return preview


@dataclass(frozen=True, slots=True)
class PreviewView(AttemptView):
    """A preview attempt as its staff see it (schemas/preview.py): all shown, as to any staff reader."""

    learner: str
    url: str
    preview: bool = True

    @property
    def scoring(self) -> dict[str, Any] | None:
        """The version's scoring policy, as the preview was graded under (nothing stored)."""
        preview = self.attempt
        return scoring_json(preview_scoring(self.exercise_version.spec), preview.result, preview.score,
                            preview.code is not None)


def preview_view(preview: PreviewAttempt, exercise: Exercise, version: ExerciseVersion, url: str) -> PreviewView:
    return PreviewView(preview, exercise, version, True, None, preview_learner(preview.actor), url)  # type: ignore[arg-type]
