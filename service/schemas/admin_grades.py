from __future__ import annotations

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates_schema

from ..catalog.loader import KINDS
from ..services.regrades import APPLIED, APPLYING, DRY_RUN, READY
from .admin_stats import COURSE_ID
from .request import RequestSchema

REGRADE_STATUSES = [DRY_RUN, READY, APPLYING, APPLIED]
SLUG = validate.Length(min=1, max=64)


def _exercise(*, required: bool = False) -> fields.String:
    return fields.String(required=required, validate=SLUG,
                         metadata={"description": "Regrade every graded attempt of this exercise"})


def _attempt(*, required: bool = False) -> fields.UUID:
    return fields.UUID(required=required, metadata={"description": "Regrade this attempt only"})


def _course() -> fields.Integer:
    return fields.Integer(validate=COURSE_ID, metadata={
        "description": "Regrade this course's attempts only (an instructor's or admin's key; a course's own staff "
                       "always regrade their course's, and get a 404 for another's). With `attempt`: the attempt's "
                       "course, else a 404"})


class ExerciseRegradeCreateSchema(RequestSchema):
    """A regrade of every graded attempt of an exercise."""

    exercise = _exercise(required=True)
    course = _course()


class AttemptRegradeCreateSchema(RequestSchema):
    """A regrade of one attempt."""

    attempt = _attempt(required=True)
    course = _course()


class RegradeCreateSchema(RequestSchema):
    """What the server checks a regrade request with; the document gives it as one of ONE_OF (a
    generated client's types), and this schema's one_of says the same to a body that is neither."""

    ONE_OF = (ExerciseRegradeCreateSchema, AttemptRegradeCreateSchema)

    exercise = _exercise()
    attempt = _attempt()
    course = _course()

    @validates_schema
    def one_of(self, data, **_kwargs):
        if ("exercise" in data) == ("attempt" in data):
            raise ValidationError("Give either 'exercise' (every graded attempt of it) or 'attempt' (one), not both.")


class RegradeCountsSchema(Schema):
    """How a regrade's graded items' scores compare with the grader's score when it was requested."""

    up = fields.Integer(required=True)
    down = fields.Integer(required=True)
    unchanged = fields.Integer(required=True)


class RegradeSummarySchema(Schema):
    id = fields.UUID(required=True)
    exercise = fields.String(required=True, metadata={"description": "The exercise's slug"})
    exercise_version = fields.Integer(required=True, metadata={
        "description": "The version the attempts are graded against: the exercise's current one when requested"})
    attempt = fields.UUID(allow_none=True, metadata={"description": "The one attempt asked for; null: every graded "
                                                                    "attempt of the exercise"})
    course = fields.Integer(allow_none=True, metadata={
        "description": "The course whose attempts it regrades (a course's staff's regrade, one asked for with "
                       "`course`, or one attempt's, in its course); null: every course's attempts"})
    status = fields.String(required=True, validate=validate.OneOf(REGRADE_STATUSES), metadata={
        "description": "dry_run (the workers are grading its items; nothing changes on the attempts), ready "
                       "(every item graded: the diff is final, it may be applied), applying (being stored on the "
                       "attempts; applying again resumes), applied"})
    requested_by = fields.String(required=True, metadata={"description": "The client that asked for it"})
    created_at = fields.DateTime(required=True)
    applied_at = fields.DateTime(allow_none=True)
    applied_by = fields.String(allow_none=True)
    total = fields.Integer(required=True, metadata={"description": "Attempts being regraded"})
    graded = fields.Integer(required=True, metadata={"description": "Items finished so far (errors included)"})
    errors = fields.Integer(required=True, metadata={
        "description": "Items not regraded: the grader failed on them, or the answer does not fit the new version"})
    # A component of its own: inline, generators named it "RegradeSummary" within Regrade (after
    # its parent and field), the name of this schema's own component, and dropped Regrade.
    summary = fields.Nested(RegradeCountsSchema, required=True, metadata={
        "description": "{up, down, unchanged}: how the graded items' scores compare with the grader's score when "
                       "the regrade was requested"})
    applied = fields.Integer(required=True, metadata={"description": "Attempts the apply changed so far"})


class RegradeChangeSchema(Schema):
    attempt = fields.UUID(required=True)
    learner = fields.String(required=True)
    client = fields.String(required=True, metadata={"description": "The name of the client the learner belongs to"})
    old_score = fields.Float(allow_none=True, metadata={"description": "The grader's score when requested"})
    new_score = fields.Float(required=True)
    new_verdict = fields.String(allow_none=True)
    overridden = fields.Boolean(required=True, metadata={
        "description": "An instructor overrode the attempt's score: applying changes its grader score, not its score"})
    applied = fields.Boolean(required=True)


class RegradeErrorSchema(Schema):
    attempt = fields.UUID(required=True)
    status = fields.String(required=True, metadata={
        "description": "internal_error (the grader failed) or not_gradable (the answer does not fit the version)"})
    message = fields.String(allow_none=True)


class RegradeSchema(RegradeSummarySchema):
    changes = fields.List(fields.Nested(RegradeChangeSchema), required=True, metadata={
        "description": "The attempts whose score changes, the biggest changes first (at most 500)"})
    error_items = fields.List(fields.Nested(RegradeErrorSchema), required=True,
                              metadata={"description": "Items not regraded (at most 100)"})
    kept_overrides = fields.Integer(required=True, metadata={
        "description": "Changed attempts whose overridden score was kept when the regrade was applied"})


class RegradesQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    exercise = fields.String(validate=SLUG, metadata={"description": "Only regrades of this exercise"})
    course = fields.Integer(validate=COURSE_ID, metadata={
        "description": "Only regrades of this course's attempts (a course's own staff always see only theirs)"})


class OverrideCreateSchema(RequestSchema):
    score = fields.Float(required=True, validate=validate.Range(0.0, 1.0),
                         metadata={"description": "The score that counts from now on, 0 to 1"})
    reason = fields.String(required=True, validate=validate.Length(min=1, max=2000),
                           metadata={"description": "Why: kept in the audit log, for staff (1-2000 characters)"})
    learner_comment = fields.String(validate=validate.Length(min=1, max=2000), metadata={
        "description": "What the learner is told (optional, 1-2000 characters): sent to the LMS with the score, as "
                       "its comment; without it the learner's gradebook shows the score alone"})

    @validates_schema
    def texts_are_not_blank(self, data, **_kwargs):
        for name in ("reason", "learner_comment"):
            if name in data and not data[name].strip():
                raise ValidationError("This must say something.", name)


class GradeOverrideSchema(Schema):
    id = fields.Integer(required=True)
    attempt = fields.UUID(required=True)
    exercise = fields.String(required=True)
    learner = fields.String(required=True)
    actor = fields.String(required=True, metadata={"description": "The name of the client that overrode the score"})
    old_score = fields.Float(allow_none=True, metadata={"description": "The score that counted before"})
    new_score = fields.Float(required=True)
    reason = fields.String(required=True)
    learner_comment = fields.String(allow_none=True, metadata={"description": "What the learner was told, if anything"})
    created_at = fields.DateTime(required=True)


class OverridesQuerySchema(RequestSchema):
    class Meta:
        unknown = EXCLUDE  # page and page_size are read by the pagination decorator

    attempt = fields.UUID(metadata={"description": "Only this attempt's overrides"})
    exercise = fields.String(validate=SLUG, metadata={"description": "Only overrides of this exercise's attempts"})


class AdminExerciseSchema(Schema):
    slug = fields.String(required=True)
    title = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    difficulty = fields.Integer(required=True)
    topics = fields.List(fields.String(), required=True, attribute="topic_names")
    version = fields.Integer(required=True, attribute="current_version",
                             metadata={"description": "The current version: what new attempts answer"})
    published = fields.Boolean(required=True, metadata={
        "description": "Listed in the public catalog and open to new attempts"})
    unpublished_by = fields.String(allow_none=True, metadata={
        "description": "The staff client that unpublished it (it stays unpublished through catalog syncs); null: "
                       "not unpublished by staff (an unpublished exercise without it had its folder removed)"})
    updated_at = fields.DateTime(required=True)


class ExerciseVersionSchema(Schema):
    number = fields.Integer(required=True)
    digest = fields.String(required=True, metadata={"description": "SHA-256 over the exercise folder's files"})
    created_at = fields.DateTime(required=True)
    attempts = fields.Integer(required=True, metadata={"description": "Attempts that answered this version"})
    current = fields.Boolean(required=True)
