"""SQLAlchemy models; importing this package registers every table on `Base.metadata`."""

from .attempt import GRADED_EVENT, Attempt, AttemptEvent, AttemptStatus, GradingJob, IdempotencyRecord, Run
from .base import Base
from .client import ApiClient, Role
from .exercise import Exercise, ExerciseTopic, ExerciseVersion

__all__ = [
    "GRADED_EVENT",
    "ApiClient",
    "Attempt",
    "AttemptEvent",
    "AttemptStatus",
    "Base",
    "Exercise",
    "ExerciseTopic",
    "ExerciseVersion",
    "GradingJob",
    "IdempotencyRecord",
    "Run",
    "Role",
]
