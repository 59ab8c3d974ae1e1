"""What a learner has used of an exercise's rules, read from the database for one counting scope
(service/services/standing.py `standing`), case by case: a counting scope is the client, the
exercise, the LTI link (or none) and the course (or none), and attempts elsewhere count nothing."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.models import ApiClient, Attempt, AttemptStatus, Course, Exercise, Role
from service.models.base import utcnow
from service.services.standing import CountingScope, standing

QUIZ = "backward-none-for-bounds"


@dataclass(frozen=True)
class Made:
    """An attempt of `learner` in course `course` ("a", "b" or None), graded `correct` or failed by the grader."""

    learner: str = "ada"
    course: str | None = None
    correct: bool = False
    error: bool = False


# (attempts made, the course counted in, expected attempts used, next number, passed)
CASES = [
    ([], None, 0, 1, False),
    ([Made(), Made(correct=True)], None, 2, 3, True),
    ([Made(course="a"), Made(course="a")], None, 0, 1, False),  # another course's count nothing here
    ([Made(course="a"), Made(course="b", correct=True)], "a", 1, 2, False),
    ([Made(), Made(course="a")], "a", 1, 2, False),  # nor do the attempts made in no course
    ([Made(learner="bob"), Made(learner="bob", correct=True)], None, 0, 1, False),
    ([Made(error=True), Made()], None, 1, 3, False),  # a grader's error is not counted, but keeps its number
]


@pytest.mark.parametrize("made,counted_in,used,next_number,passed", CASES)
def test_a_counting_scope_counts_its_own_attempts_alone(app, made, counted_in, used, next_number, passed):
    with app.app_context():
        session = db_session()
        client = ApiClient(name="lms-one", role=Role.CLIENT.value, key_hash=uuid.uuid4().hex, key_prefix="gq_x")
        session.add(client)
        session.flush()
        courses = {name: Course(client_id=client.id, external_id=name, title=name) for name in ("a", "b")}
        session.add_all(courses.values())
        exercise = session.scalar(select(Exercise).where(Exercise.slug == QUIZ))
        session.flush()
        numbers: dict[tuple[str, str | None], int] = {}
        for attempt in made:
            number = numbers[(attempt.learner, attempt.course)] = numbers.get((attempt.learner, attempt.course), 0) + 1
            session.add(Attempt(
                id=uuid.uuid4(), client_id=client.id, learner=attempt.learner, exercise_id=exercise.id,
                exercise_version_id=exercise.version.id, answer="none-each", created_at=utcnow(),
                course_id=None if attempt.course is None else courses[attempt.course].id, attempt_number=number,
                status=(AttemptStatus.ERROR if attempt.error else AttemptStatus.GRADED).value,
                correct=None if attempt.error else attempt.correct, overridden=False, tries=0, late=False))
        session.flush()
        course_id = None if counted_in is None else courses[counted_in].id
        found = standing(session, CountingScope(client.id, exercise.id, None, course_id), {}, "ada")
        assert (found.attempts_used, found.next_number, found.passed) == (used, next_number, passed)
        session.rollback()
