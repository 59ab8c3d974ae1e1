"""SQLAlchemy models; importing this package registers every table on `Base.metadata`."""

from .attempt import (
    GRADED_EVENT,
    OVERRIDDEN_EVENT,
    REGRADED_EVENT,
    Attempt,
    AttemptEvent,
    AttemptRow,
    AttemptStatus,
    GradingJob,
    IdempotencyRecord,
    Run,
)
from .authoring import ExerciseProof, PreviewAttempt
from .base import Base
from .client import ApiClient, Role
from .course import Course, CourseKey, CourseMember, MemberStatus
from .delivery import DeliveryStatus, OutboundDelivery
from .exercise import Exercise, ExerciseTopic, ExerciseVersion
from .git import CourseGitRepo, GitSync, GitSyncStatus
from .lti import (
    LtiLearnerDates,
    LtiLinkExercise,
    LtiNonce,
    LtiPlatform,
    LtiRegistrationLink,
    LtiResourceLink,
    LtiToolKey,
    ScorePassback,
)
from .preparation import VariantPreparation
from .progress import ExerciseDailyCount, ExerciseOutcomeCount, ExerciseProgress, LearnerProgress
from .regrade import GradeOverride, Regrade, RegradeItem
from .rules import AssessmentRules
from .webhook import WebhookDelivery, WebhookEndpoint

__all__ = [
    "GRADED_EVENT",
    "OVERRIDDEN_EVENT",
    "REGRADED_EVENT",
    "ApiClient",
    "AssessmentRules",
    "Attempt",
    "AttemptEvent",
    "AttemptRow",
    "AttemptStatus",
    "Course",
    "CourseKey",
    "CourseMember",
    "CourseGitRepo",
    "Base",
    "DeliveryStatus",
    "Exercise",
    "GitSync",
    "GitSyncStatus",
    "ExerciseDailyCount",
    "ExerciseOutcomeCount",
    "ExerciseProof",
    "ExerciseProgress",
    "ExerciseTopic",
    "ExerciseVersion",
    "GradeOverride",
    "GradingJob",
    "IdempotencyRecord",
    "LearnerProgress",
    "LtiLearnerDates",
    "LtiLinkExercise",
    "LtiNonce",
    "LtiPlatform",
    "LtiRegistrationLink",
    "LtiResourceLink",
    "LtiToolKey",
    "MemberStatus",
    "PreviewAttempt",
    "OutboundDelivery",
    "Run",
    "Regrade",
    "RegradeItem",
    "Role",
    "ScorePassback",
    "VariantPreparation",
    "WebhookDelivery",
    "WebhookEndpoint",
]
