"""A learner's progress across the exercises a learner token may see (GET /api/v1/progress): at each,
whether they passed it, tried it, or not started it, and their best graded score.

Read from the attempts themselves, in one statement, so a grade shows at once: the statistics
counters (service/services/progress.py) lag the grades by a fold interval, and count a learner's
attempts under every course of their client, where a token reads only its own course's
(services/attempts.py, token_limits). The exercises are those the token may see
(services/exercise_access.py: the catalog and its course's own) and may act at (its `exercises`),
published, in the catalog's order (easiest first, then by slug).

- `passed`: a graded attempt the grader found correct (scores.passed);
- `tried`: an attempt (queued, running or graded; one the grader failed on is not the learner's
  outcome), none passed yet;
- `not_started`: no attempt.
`best_score`: the best graded score (0 to 1, after the rules' penalties, an override where one was
made); null while none is graded.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .. import scores
from ..learner_tokens import LearnerScope
from ..models import Attempt, AttemptStatus, Exercise
from .attempts import token_limits
from .exercise_access import token_audience

PASSED, TRIED, NOT_STARTED = STATES = ("passed", "tried", "not_started")


@dataclass(frozen=True)
class ExerciseProgress:
    slug: str
    state: str
    best_score: float | None


def learner_progress(session: Session, scope: LearnerScope) -> list[ExerciseProgress]:
    """The token's own learner's progress at every published exercise the token may see and act at.
    An instructor's token: the instructor's own try-outs (made in no course), never their learners'."""
    mine = (Attempt.client_id == scope.client_id, Attempt.learner == scope.learner,
            Attempt.status != AttemptStatus.ERROR.value, *token_limits(scope))
    attempts = (select(Attempt.exercise_id, func.count().label("tried"), scores.best_of_group().label("best"),
                       scores.passed_in_group().label("passed"))
                .where(*mine).group_by(Attempt.exercise_id).subquery())
    stmt = (select(Exercise.slug, attempts.c.tried, attempts.c.best, attempts.c.passed)
            .outerjoin(attempts, attempts.c.exercise_id == Exercise.id)
            .where(Exercise.published.is_(True), token_audience(session, scope).where())
            .order_by(Exercise.difficulty, Exercise.slug))
    if scope.exercises is not None:
        stmt = stmt.where(Exercise.slug.in_(scope.exercises))
    return [ExerciseProgress(slug, PASSED if passed else TRIED if tried else NOT_STARTED,
                             None if best is None else float(best))
            for slug, tried, best, passed in session.execute(stmt)]
