"""Statistics of one course (issue 18): the figures of a course's attempts only, counted when asked,
with the definitions and the response shapes of the every-course counters.

A hand count over the course's attempts (written here, in Python, from the definitions in
service/services/stats.py) gives the same figures; they differ from the all-course counters when
another course has attempts too, and equal them when one course holds every attempt.
"""

from __future__ import annotations

import statistics
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from service.extensions import db_session
from service.models import ApiClient, Attempt, Course, Exercise, LtiLinkExercise, LtiPlatform, LtiResourceLink, Role
from service.models.base import utcnow
from service.services import progress, stats
from tests.api.support import catch_up, code_report, grade_next
from tests.helpers import bearer, correct_answer

QUIZ = "backward-none-for-bounds"  # single choice
CODE = "clamp-function"
LINKED = "squarefn-forward-value"  # linked in course c1, never answered
IN_ASSIGNMENT = "square-function"  # the second exercise of an assignment of course c1
ADMIN = "/api/v1/admin"


@pytest.fixture
def instructor_key(app, client_key_for) -> str:
    return client_key_for(app, "prof", Role.INSTRUCTOR)


def make_course(app, external_id: str, client_name: str = "lms-one") -> int:
    with app.app_context():
        session = db_session()
        client_id = session.scalar(select(ApiClient.id).where(ApiClient.name == client_name))
        course = Course(client_id=client_id, external_id=external_id, title=f"Course {external_id}")
        session.add(course)
        session.commit()
        return course.id


def place(app, attempt_ids, course_id: int | None, days_ago: int = 0) -> None:
    """As a launch of the course records its attempts (submitted `days_ago` days ago)."""
    with app.app_context():
        values: dict = {"course_id": course_id}
        if days_ago:
            values["created_at"] = utcnow() - timedelta(days=days_ago)
        db_session().execute(update(Attempt).where(Attempt.id.in_([uuid.UUID(str(a)) for a in attempt_ids]))
                             .values(**values))
        db_session().commit()


def answer(client, key, learner, value) -> str:
    response = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(key),
                           json={"learner": learner, "answer": value})
    assert response.status_code == 201, response.json
    return response.json["id"]


def submit_code(client, key, learner) -> str:
    response = client.post(f"/api/v1/exercises/{CODE}/attempts", headers=bearer(key),
                           json={"learner": learner, "code": "class ClampFn: pass\n"})
    assert response.status_code == 202, response.json
    return response.json["id"]


def wrong_choice(spec):
    return next(c["id"] for c in spec["choices"] if not c["correct"])


def close(a, b) -> bool:
    """Equal, floats within rounding (a mean summed in another order)."""
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and a == pytest.approx(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def get(http, key, path, **query):
    response = http.get(path, headers=bearer(key), query_string=query)
    assert response.status_code == 200, response.json
    return response.json


def hand_count(app, course_id: int, slug: str) -> dict:
    """The exercise's figures over the course's attempts, counted one attempt at a time."""
    with app.app_context():
        rows = db_session().scalars(
            select(Attempt).join(Exercise).where(Attempt.course_id == course_id, Exercise.slug == slug)
            .order_by(Attempt.created_at, Attempt.id)).all()
        graded = [a for a in rows if a.status == "graded"]
        mine: dict[tuple, list[Attempt]] = {}
        for attempt in graded:
            mine.setdefault((attempt.client_id, attempt.learner), []).append(attempt)
        best = [max(a.score for a in history) for history in mine.values()]
        firsts = [(n + 1, history[n].created_at - history[0].created_at) for history in mine.values()
                  for n in [next((i for i, a in enumerate(history) if a.verdict == "passed"), None)] if n is not None]
        checks = Counter(name for a in graded for name in progress.failed_checks(a.result))
        causes = Counter(a.likely_cause for a in graded if a.likely_cause)
        days = Counter(a.created_at.date().isoformat() for a in graded)
        return {
            "attempts": len(rows), "graded": len(graded),
            "passed_attempts": sum(a.verdict == "passed" for a in graded), "learners": len(mine),
            "passed_learners": len(firsts),
            "histogram": [sum(min(int(b * 10), 9) == i for b in best) for i in range(10)],
            "mean_best_score": statistics.mean(best) if best else None,
            "median_attempts_to_first_pass": statistics.median([n for n, _ in firsts]) if firsts else None,
            "median_seconds_to_first_pass": (statistics.median([s.total_seconds() for _, s in firsts])
                                             if firsts else None),
            "failing_checks": sorted(checks.items(), key=lambda item: (-item[1], item[0])),
            "likely_causes": sorted(causes.items(), key=lambda item: (-item[1], item[0])),
            "days": dict(days),
        }


def figures(response: dict) -> dict:
    """The response's figures in hand_count's shape."""
    return {
        **{k: response[k] for k in ("attempts", "graded", "passed_attempts", "learners", "passed_learners")},
        "histogram": [b["count"] for b in response["score_histogram"]],
        "mean_best_score": response["mean_best_score"],
        "median_attempts_to_first_pass": response["median_attempts_to_first_pass"],
        "median_seconds_to_first_pass": response["median_seconds_to_first_pass"],
        "failing_checks": [(e["name"], e["count"]) for e in response["failing_checks"]],
        "likely_causes": [(e["name"], e["count"]) for e in response["likely_causes"]],
        "days": {d["day"]: d["attempts"] for d in response["attempts_by_day"] if d["attempts"]},
    }


def seed_two_courses(app, client, client_key, other_client_key, quiz_catalog) -> tuple[int, int]:
    """Courses c1 and c2 of lms-one, and attempts outside any course.

    c1: ada wrong (3 days ago), wrong, right; bob wrong; cy's code failed then passed, dee's queued.
    c2: ada right; eve wrong, right; eve's code failed. No course: zed right (lms-two's), yan wrong."""
    spec = quiz_catalog[QUIZ]
    right, wrong = correct_answer(spec), wrong_choice(spec)
    c1, c2 = make_course(app, "c1"), make_course(app, "c2")
    # Made together, then placed: each course numbers its attempts apart (migration 0021).
    ada_in_c1 = [answer(client, client_key, "ada", value) for value in (wrong, wrong, right)]
    place(app, ada_in_c1[:1], c1, days_ago=3)
    place(app, [*ada_in_c1[1:], answer(client, client_key, "bob", wrong)], c1)
    place(app, [answer(client, client_key, "ada", right), answer(client, client_key, "eve", wrong),
                answer(client, client_key, "eve", right)], c2)
    answer(client, other_client_key, "zed", right)
    answer(client, client_key, "yan", wrong)
    cy = [submit_code(client, client_key, "cy"), submit_code(client, client_key, "cy")]
    eve = submit_code(client, client_key, "eve")
    dee = submit_code(client, client_key, "dee")
    place(app, [*cy, dee], c1)
    place(app, [eve], c2)
    assert grade_next(app, code_report("failed", 0.5, ("gradcheck", "gradient"), "wrong_sign")) == uuid.UUID(cy[0])
    assert grade_next(app, code_report("passed", 1.0)) == uuid.UUID(cy[1])
    assert grade_next(app, code_report("failed", 0.25, ("forward",), "forward_wrong")) == uuid.UUID(eve)
    catch_up(app)
    return c1, c2


def test_a_courses_statistics_are_a_hand_count_of_its_attempts_not_every_courses(
        app, client, client_key, other_client_key, instructor_key, quiz_catalog):
    c1, c2 = seed_two_courses(app, client, client_key, other_client_key, quiz_catalog)

    for course in (c1, c2):
        for slug in (QUIZ, CODE):
            stats_of_course = get(client, instructor_key, f"{ADMIN}/exercises/{slug}/stats", course=course)
            assert close(figures(stats_of_course), hand_count(app, course, slug)), (course, slug)
            assert stats_of_course["counters_as_of"] is None
    c1_quiz = get(client, instructor_key, f"{ADMIN}/exercises/{QUIZ}/stats", course=c1)
    # ada: wrong, wrong, right; bob: wrong.
    assert {k: c1_quiz[k] for k in ("attempts", "graded", "passed_attempts", "learners", "passed_learners",
                                    "pass_rate", "attempt_pass_rate", "median_attempts_to_first_pass")} == {
        "attempts": 4, "graded": 4, "passed_attempts": 1, "learners": 2, "passed_learners": 1, "pass_rate": 0.5,
        "attempt_pass_rate": 0.25, "median_attempts_to_first_pass": 3.0}
    assert c1_quiz["median_seconds_to_first_pass"] == pytest.approx(3 * 86400, abs=60)
    assert [d["attempts"] for d in c1_quiz["attempts_by_day"][-4:]] == [1, 0, 0, 3]
    c1_code = get(client, instructor_key, f"{ADMIN}/exercises/{CODE}/stats", course=c1)
    assert (c1_code["attempts"], c1_code["graded"], c1_code["learners"]) == (3, 2, 1)
    assert c1_code["failing_checks"] == [{"name": "gradcheck", "count": 1}, {"name": "gradient", "count": 1}]
    assert c1_code["likely_causes"] == [{"name": "wrong_sign", "count": 1}]
    assert c1_code["mean_best_raw_score"] == 1.0

    # Every course's counters count all of it: 9 quiz attempts by 5 learners (ada of both courses is one;
    # lms-two's zed and yan, of no course, are in).
    everyone = get(client, instructor_key, f"{ADMIN}/exercises/{QUIZ}/stats")
    assert (everyone["attempts"], everyone["learners"], everyone["passed_learners"]) == (9, 5, 3)
    every_code = get(client, instructor_key, f"{ADMIN}/exercises/{CODE}/stats")
    assert every_code["failing_checks"] != c1_code["failing_checks"]

    overview = {e["exercise"]: e for e in get(client, instructor_key, f"{ADMIN}/stats", course=c2)}
    assert set(overview) == {QUIZ, CODE}  # c2's exercises only: it has no link
    assert {k: overview[QUIZ][k] for k in ("attempts", "learners", "passed_learners", "pass_rate")} == {
        "attempts": 3, "learners": 2, "passed_learners": 2, "pass_rate": 1.0}
    assert (overview[CODE]["attempts"], overview[CODE]["learners"], overview[CODE]["pass_rate"]) == (1, 1, 0.0)


def test_a_course_holding_every_attempt_has_the_counters_figures(app, client, client_key, other_client_key,
                                                                  instructor_key, quiz_catalog):
    """The two sources share their definitions: one course with every attempt, every figure alike."""
    seed_two_courses(app, client, client_key, other_client_key, quiz_catalog)
    with app.app_context():
        platform_free = make_course(app, "everything", "lms-two")
        # One course numbers a learner's attempts at an exercise once (migration 0021): numbered
        # again as they came, which no figure reads.
        numbers: dict[tuple, int] = {}
        for attempt in db_session().scalars(select(Attempt).order_by(Attempt.created_at, Attempt.id)):
            key = (attempt.client_id, attempt.exercise_id, attempt.learner)
            numbers[key] = numbers.get(key, 0) + 1
            attempt.course_id, attempt.attempt_number = platform_free, -numbers[key]  # apart from the old ones
        db_session().flush()
        db_session().execute(update(Attempt).values(attempt_number=-Attempt.attempt_number))
        db_session().commit()
    for slug in (QUIZ, CODE):
        counted = get(client, instructor_key, f"{ADMIN}/exercises/{slug}/stats")
        of_course = get(client, instructor_key, f"{ADMIN}/exercises/{slug}/stats", course=platform_free)
        assert close(of_course, counted), slug
    counted = {e["exercise"]: e for e in get(client, instructor_key, f"{ADMIN}/stats")}
    of_course = get(client, instructor_key, f"{ADMIN}/stats", course=platform_free)
    assert of_course == [counted[QUIZ] if e["exercise"] == QUIZ else counted[CODE] for e in of_course]
    for learner in ("ada", "eve", "cy", "dee", "zed"):
        assert (get(client, instructor_key, f"{ADMIN}/learners/{learner}/progress", course=platform_free)
                == get(client, instructor_key, f"{ADMIN}/learners/{learner}/progress"))


def test_the_course_overview_lists_the_exercises_it_links_or_has_attempts_at(app, client, client_key,
                                                                            instructor_key, quiz_catalog):
    c1, c2 = make_course(app, "c1"), make_course(app, "c2")
    place(app, [answer(client, client_key, "ada", correct_answer(quiz_catalog[QUIZ]))], c2)
    with app.app_context():
        session = db_session()
        ids = dict(session.execute(select(Exercise.slug, Exercise.id)
                                   .where(Exercise.slug.in_([LINKED, IN_ASSIGNMENT]))).all())
        platform = LtiPlatform(name="LMS", issuer="https://lms.example", client_id="tool", deployment_ids=["d1"],
                               auth_login_url="https://x", auth_token_url="https://x", jwks_url="https://x",
                               api_client_id=session.scalar(select(ApiClient.id).where(ApiClient.name == "lms-one")))
        session.add(platform)
        session.flush()
        link = LtiResourceLink(platform_id=platform.id, deployment_id="d1", resource_link_id="l1", context_id="c1",
                               course_id=c1, exercise_id=ids[LINKED], scoring="mean")
        session.add(link)
        session.flush()
        session.add_all([LtiLinkExercise(link_id=link.id, position=1, exercise_id=ids[LINKED], points=1.0),
                         LtiLinkExercise(link_id=link.id, position=2, exercise_id=ids[IN_ASSIGNMENT], points=1.0)])
        session.commit()
    c1_overview = get(client, instructor_key, f"{ADMIN}/stats", course=c1)
    assert [(e["exercise"], e["attempts"], e["learners"], e["pass_rate"]) for e in c1_overview] == [
        (IN_ASSIGNMENT, 0, 0, None), (LINKED, 0, 0, None)]
    assert [e["exercise"] for e in get(client, instructor_key, f"{ADMIN}/stats", course=c2)] == [QUIZ]
    assert len(get(client, instructor_key, f"{ADMIN}/stats")) > 2  # every exercise


def test_a_learners_progress_in_a_course_is_their_attempts_there(app, client, client_key, other_client_key,
                                                                  instructor_key, quiz_catalog):
    c1, c2 = seed_two_courses(app, client, client_key, other_client_key, quiz_catalog)
    in_c1 = get(client, instructor_key, f"{ADMIN}/learners/ada/progress", course=c1)
    assert in_c1["counters_as_of"] is None
    [entry] = in_c1["exercises"]
    assert {k: entry[k] for k in ("exercise", "client", "attempts", "best_score", "latest_score", "passed",
                                  "attempts_to_first_pass")} == {
        "exercise": QUIZ, "client": "lms-one", "attempts": 3, "best_score": 1.0, "latest_score": 1.0, "passed": True,
        "attempts_to_first_pass": 3}
    assert entry["first_attempt_at"] < entry["first_passed_at"] <= entry["last_graded_at"]
    [in_c2] = get(client, instructor_key, f"{ADMIN}/learners/ada/progress", course=c2)["exercises"]
    assert (in_c2["attempts"], in_c2["attempts_to_first_pass"]) == (1, 1)
    [everywhere] = get(client, instructor_key, f"{ADMIN}/learners/ada/progress")["exercises"]
    assert everywhere["attempts"] == 4
    eve_quiz, eve_code = get(client, instructor_key, f"{ADMIN}/learners/eve/progress", course=c2,
                             client="lms-one")["exercises"]
    assert (eve_quiz["exercise"], eve_quiz["latest_score"], eve_quiz["best_score"]) == (QUIZ, 1.0, 1.0)
    assert eve_code["exercise"] == CODE
    assert (eve_code["passed"], eve_code["best_score"], eve_code["attempts_to_first_pass"]) == (False, 0.25, None)
    assert get(client, instructor_key, f"{ADMIN}/learners/bob/progress", course=c2)["exercises"] == []


def test_a_course_that_does_not_exist_is_a_404(app, client, instructor_key):
    for path in ("/stats", f"/exercises/{QUIZ}/stats", "/learners/ada/progress"):
        response = client.get(f"{ADMIN}{path}", headers=bearer(instructor_key), query_string={"course": 999999})
        assert response.status_code == 404, response.json
        assert response.mimetype == "application/problem+json"


def test_the_service_functions_take_a_course(app, client, client_key, other_client_key, quiz_catalog):
    c1, _c2 = seed_two_courses(app, client, client_key, other_client_key, quiz_catalog)
    with app.app_context():
        session = db_session()
        quiz = session.scalar(select(Exercise).where(Exercise.slug == QUIZ))
        assert stats.exercise_stats(session, quiz, course_id=c1)["learners"] == 2
        assert stats.exercise_stats(session, quiz)["learners"] == 5
        assert stats.counters_as_of(session, c1) is None
