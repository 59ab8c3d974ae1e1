from __future__ import annotations

from marshmallow import Schema, fields, validate

from .request import RequestSchema

ATTEMPTS = "Every attempt submitted: graded, still queued, or failed by the grader"
LEARNERS = "Learners (a client and its learner id) with a graded attempt"
PASSED_LEARNERS = "Learners with a graded attempt whose verdict is passed"
PASS_RATE = "passed_learners / learners (null without learners)"


AS_OF = ("null when the figures are up to date; else they hold every grade made before this time (the workers "
         "fold new grades into them within about a second). A course's figures (?course=, or a course's staff) "
         "are counted from its attempts when asked: always null")
#: A course's id, bounded like its column (PostgreSQL integer).
COURSE_ID = validate.Range(min=1, max=2**31 - 1)
COURSE = ("Only this course's attempts (an instructor's or admin's key; a course's own staff always get their "
          "course's, and a 404 for another's)")


class ExerciseOverviewSchema(Schema):
    exercise = fields.String(required=True, metadata={"description": "The exercise's slug"})
    title = fields.String(required=True)
    kind = fields.String(required=True)
    published = fields.Boolean(required=True)
    attempts = fields.Integer(required=True, metadata={"description": ATTEMPTS})
    learners = fields.Integer(required=True, metadata={"description": LEARNERS})
    passed_learners = fields.Integer(required=True, metadata={"description": PASSED_LEARNERS})
    pass_rate = fields.Float(required=True, allow_none=True, metadata={"description": PASS_RATE})


class HistogramBucketSchema(Schema):
    from_ = fields.Float(required=True, data_key="from", attribute="from",
                         metadata={"description": "Lower bound (included)"})
    to = fields.Float(required=True, metadata={"description": "Upper bound (excluded, but 1.0 is in the last bucket)"})
    count = fields.Integer(required=True, metadata={"description": "Learners whose best score falls here"})


class NamedCountSchema(Schema):
    name = fields.String(required=True)
    count = fields.Integer(required=True, metadata={"description": "Graded attempts"})


class DayCountSchema(Schema):
    day = fields.Date(required=True, metadata={"description": "UTC day the attempts were submitted"})
    attempts = fields.Integer(required=True, metadata={"description": "Graded attempts submitted that day"})
    passed = fields.Integer(required=True, metadata={"description": "Of those, the ones that passed"})


class ExerciseStatsSchema(Schema):
    exercise = fields.String(required=True, metadata={"description": "The exercise's slug"})
    title = fields.String(required=True)
    kind = fields.String(required=True)
    attempts = fields.Integer(required=True, metadata={"description": ATTEMPTS})
    graded = fields.Integer(required=True, metadata={"description": "Graded attempts"})
    passed_attempts = fields.Integer(required=True, metadata={"description": "Graded attempts that passed"})
    learners = fields.Integer(required=True, metadata={"description": LEARNERS})
    passed_learners = fields.Integer(required=True, metadata={"description": PASSED_LEARNERS})
    pass_rate = fields.Float(required=True, allow_none=True, metadata={"description": PASS_RATE})
    attempt_pass_rate = fields.Float(required=True, allow_none=True,
                                     metadata={"description": "passed_attempts / graded (null when none is graded)"})
    score_histogram = fields.List(fields.Nested(HistogramBucketSchema), required=True,
                                  metadata={"description": "10 buckets of each learner's best score"})
    mean_best_score = fields.Float(
        required=True, allow_none=True,
        metadata={"description": "The mean of each learner's best score that counts (after the assessment rules' "
                                 "penalties and overrides), as in the histogram; null without learners"})
    mean_best_raw_score = fields.Float(
        required=True, allow_none=True,
        metadata={"description": "The mean of each learner's best raw score (the grader's, before the rules' "
                                 "penalties and any override): beside mean_best_score, what the rules took off"})
    median_attempts_to_first_pass = fields.Float(
        required=True, allow_none=True,
        metadata={"description": "Over the learners who passed: graded attempts up to and including the first pass"})
    median_seconds_to_first_pass = fields.Float(
        required=True, allow_none=True,
        metadata={"description": "Over the learners who passed: seconds from their first attempt to the first that "
                                 "passed (both as submitted)"})
    failing_checks = fields.List(fields.Nested(NamedCountSchema), required=True,
                                 metadata={"description": "The 10 checks graded attempts failed most"})
    likely_causes = fields.List(fields.Nested(NamedCountSchema), required=True,
                                metadata={"description": "The 10 most common first likely causes"})
    attempts_by_day = fields.List(fields.Nested(DayCountSchema), required=True,
                                  metadata={"description": "The last 30 UTC days, today included, oldest first"})
    counters_as_of = fields.DateTime(required=True, allow_none=True, metadata={"description": AS_OF})


class LearnerExerciseSchema(Schema):
    exercise = fields.String(required=True, metadata={"description": "The exercise's slug"})
    title = fields.String(required=True)
    client = fields.String(required=True, metadata={"description": "The API client the learner belongs to"})
    attempts = fields.Integer(required=True, metadata={"description": "Graded attempts"})
    best_score = fields.Float(required=True, allow_none=True)
    latest_score = fields.Float(required=True, allow_none=True,
                                metadata={"description": "The score of the graded attempt submitted last"})
    passed = fields.Boolean(required=True)
    first_attempt_at = fields.DateTime(required=True, allow_none=True)
    first_passed_at = fields.DateTime(required=True, allow_none=True)
    attempts_to_first_pass = fields.Integer(
        required=True, allow_none=True, metadata={"description": "1 when the first attempt passed; null until one does"})
    last_graded_at = fields.DateTime(required=True, allow_none=True)


class MembershipSchema(Schema):
    course_id = fields.Integer(required=True)
    course = fields.String(required=True, metadata={"description": "The course's title"})
    client = fields.String(required=True, metadata={"description": "The API client the course belongs to"})
    name = fields.String(required=True, allow_none=True,
                         metadata={"description": "Their name in the course (the LMS's roster, or their own launch)"})
    email = fields.String(required=True, allow_none=True, metadata={"description": "Only where the LMS shares it"})
    status = fields.String(required=True, metadata={"description": "active, or left: they left the course"})
    left_at = fields.DateTime(required=True, allow_none=True)


class LearnerProgressSchema(Schema):
    learner = fields.String(required=True)
    client = fields.String(allow_none=True, metadata={"description": "The client asked for (null: every client)"})
    memberships = fields.List(fields.Nested(MembershipSchema), required=True, metadata={
        "description": "The courses whose roster names this learner id (of the client asked for, the course asked "
                       "for or the caller's own), most recently updated first: their name, and whether they left"})
    exercises = fields.List(fields.Nested(LearnerExerciseSchema), required=True,
                            metadata={"description": "One entry per exercise (and client) with a graded attempt"})
    counters_as_of = fields.DateTime(required=True, allow_none=True, metadata={"description": AS_OF})


class CourseQuerySchema(RequestSchema):
    course = fields.Integer(validate=COURSE_ID, metadata={"description": COURSE})


class LearnerProgressQuerySchema(CourseQuerySchema):
    client = fields.String(validate=validate.Length(min=1, max=100),
                           metadata={"description": "The API client's name: learner ids are unique only within a "
                                                    "client (default: the learner under every client)"})
