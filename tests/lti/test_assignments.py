"""Assignments of several exercises (issue 18), against the test LMS: the instructor's Deep Linking
makes one link of several exercises, in order, with a scoring rule; a launch of it gives a token for
all of them; attempts at any of them send ONE score, by the rule, to the link's one line item."""

from __future__ import annotations

import html
import re
import shutil

import pytest
from sqlalchemy import event, select

from service.catalog import load_catalog
from service.config import PROJECT_ROOT
from service.database import engine_for
from service.extensions import db_session
from service.learner_tokens import read_learner_token
from service.lti import claims as c
from service.models import LtiLinkExercise, LtiResourceLink, ScorePassback
from service.models.base import utcnow
from tests.helpers import bearer

from .platform import INSTRUCTOR_ROLES, TestPlatform
from .support import launch_handoff, lti_launch, passback_runner

# Three quizzes graded at once: right scores 1, wrong 0.
QUIZ, QUIZ_RIGHT, QUIZ_WRONG = "backward-none-for-bounds", "none-each", "zero-number"
SQUARE, SQUARE_RIGHT = "squarefn-forward-value", 16.0
CLAMP, CLAMP_RIGHT = "builtin-clamp-forward-value", 1.0


def _picker(client, platform: TestPlatform) -> tuple[str, str]:
    page = lti_launch(client, platform, message_type=c.DEEP_LINKING_REQUEST, roles=INSTRUCTOR_ROLES, sub="teacher-1")
    assert page.status_code == 200, page.get_data(as_text=True)
    text = page.get_data(as_text=True)
    return text, html.unescape(re.search(r'name="picker" value="([^"]+)"', text).group(1))


def _deep_link(client, platform: TestPlatform, form: dict) -> list[dict]:
    """The content items of the Deep Linking response the picker's `form` makes, verified as the
    LMS verifies them (the tool's signature, from its JWKS)."""
    _, token = _picker(client, platform)
    returned = client.post("/lti/deep-link", data={"picker": token, **form})
    assert returned.status_code == 200, returned.get_data(as_text=True)
    response_jwt = html.unescape(re.search(r'name="JWT" value="([^"]+)"', returned.get_data(as_text=True)).group(1))
    return platform.read_deep_linking_response(response_jwt)[c.CONTENT_ITEMS]


def _assignment(client, platform: TestPlatform, scoring: str, points: dict[str, str] | None = None) -> dict:
    """One assignment of QUIZ, SQUARE and CLAMP, numbered in that order (listed otherwise)."""
    form = {"mode": "assignment", "exercise": [CLAMP, QUIZ, SQUARE], "title": "Week 3: custom functions",
            "scoring": scoring, f"order-{QUIZ}": "1", f"order-{SQUARE}": "2", f"order-{CLAMP}": "3"}
    form.update({f"points-{slug}": value for slug, value in (points or {}).items()})
    [item] = _deep_link(client, platform, form)
    return item


def test_the_picker_offers_one_assignment_with_order_title_and_rule(client, registered_platform):
    page, _ = _picker(client, registered_platform)
    assert 'name="mode" value="links" checked' in page and 'name="mode" value="assignment"' in page
    assert f'name="order-{QUIZ}"' in page and f'name="points-{QUIZ}" value="1"' in page
    assert '<label for="assignment-title">' in page and '<option value="sum">' in page


def test_deep_linking_makes_one_signed_item_for_an_assignment(client, registered_platform):
    item = _assignment(client, registered_platform, "sum", {QUIZ: "2", SQUARE: "1", CLAMP: "3"})
    assert item["type"] == "ltiResourceLink" and item["title"] == "Week 3: custom functions"
    custom = item["custom"]
    # In the order the instructor numbered them, with their points; signed in the response JWT.
    assert (custom["exercises"], custom["scoring"], custom["points"]) == (f"{QUIZ},{SQUARE},{CLAMP}", "sum", "2,1,3")
    assert "exercise" not in custom
    assert item["lineItem"]["scoreMaximum"] == 6 and item["lineItem"]["label"] == "Week 3: custom functions"
    # A mean is out of 100; points left blank are 1.
    mean = _assignment(client, registered_platform, "mean")
    assert mean["custom"]["points"] == "1,1,1" and mean["lineItem"]["scoreMaximum"] == 100


def test_an_invalid_assignment_is_refused_and_signs_nothing(client, registered_platform):
    _, token = _picker(client, registered_platform)
    for bad in ({f"points-{QUIZ}": "0"}, {f"points-{QUIZ}": "many"}, {"scoring": "median"},
                {f"order-{QUIZ}": "first"}, {"title": "x" * 256}):
        form = {"picker": token, "mode": "assignment", "exercise": [QUIZ, SQUARE], **bad}
        refused = client.post("/lti/deep-link", data=form)
        assert refused.status_code == 422 and refused.mimetype == "application/problem+json", bad
        assert "JWT" not in refused.get_data(as_text=True)


def test_a_launch_of_an_assignment_gives_a_token_for_all_its_exercises(app, client, registered_platform):
    item = _assignment(client, registered_platform, "mean")
    launched = lti_launch(client, registered_platform, custom=item["custom"], sub="student-7", resource_link_id="week-3")
    handoff = launch_handoff(launched)
    assert 'data-page="assignment"' in launched.get_data(as_text=True)  # the assignment's page, not one exercise's
    assert handoff["assignment"] is True and handoff["exercise"] == QUIZ
    scope = read_learner_token(app.config["SECRET_KEY"], handoff["token"])
    assert scope.exercises == (QUIZ, SQUARE, CLAMP) and scope.learner == "student-7" and scope.link_id is not None
    with app.app_context():
        link = db_session().get(LtiResourceLink, scope.link_id)
        assert (link.scoring, link.exercise.slug, link.title) == ("mean", QUIZ, "Autograd quiz")
        rows = db_session().scalars(select(LtiLinkExercise).where(LtiLinkExercise.link_id == link.id)
                                    .order_by(LtiLinkExercise.position)).all()
        assert [(r.position, r.exercise.slug, r.points) for r in rows] == [(0, QUIZ, 1), (1, SQUARE, 1), (2, CLAMP, 1)]
    # The token answers every exercise of the assignment, and its page's API lists them in order.
    answered = client.post(f"/api/v1/exercises/{CLAMP}/attempts", headers=bearer(handoff["token"]),
                           json={"answer": CLAMP_RIGHT})
    assert answered.status_code == 201, answered.json
    listed = client.get("/api/v1/assignment", headers=bearer(handoff["token"]))
    assert listed.status_code == 200 and listed.headers["Cache-Control"] == "private, no-store"
    assert [(e["slug"], e["status"], e["score"]) for e in listed.json["exercises"]] == [
        (QUIZ, "not_tried", None), (SQUARE, "not_tried", None), (CLAMP, "passed", 1.0)]
    assert (listed.json["score"], listed.json["score_maximum"], listed.json["complete"]) == (pytest.approx(33.3333), 100, False)


def test_a_launch_naming_an_unpublished_exercise_is_refused(client, registered_platform):
    refused = lti_launch(client, registered_platform, custom={"exercises": f"{QUIZ},no-such-exercise", "scoring": "mean"})
    assert refused.status_code == 401 and "no-such-exercise" in refused.json["detail"]
    refused = lti_launch(client, registered_platform, custom={"exercises": f"{QUIZ},{QUIZ}"})
    assert refused.status_code == 401 and "once" in refused.json["detail"]


@pytest.mark.parametrize(("scoring", "points", "expected_given", "expected_maximum"), [
    # QUIZ wrong then right (best: 1), SQUARE not tried (0), CLAMP wrong (0).
    ("mean", None, 100 / 3, 100),
    # The same, weighted: QUIZ 2 points, SQUARE 4, CLAMP 1: 2 of 7.
    ("sum", {QUIZ: "2", SQUARE: "4", CLAMP: "1"}, 2, 7),
])
def test_attempts_at_two_of_three_exercises_send_one_score_by_the_rule(app, client, registered_platform, scoring, points,
                                                                        expected_given, expected_maximum):
    platform = registered_platform
    item = _assignment(client, platform, scoring, points)
    token = launch_handoff(lti_launch(client, platform, custom=item["custom"], sub="student-7",
                                      resource_link_id="week-3"))["token"]
    for slug, answer in ((QUIZ, QUIZ_WRONG), (CLAMP, 2.0), (QUIZ, QUIZ_RIGHT)):
        made = client.post(f"/api/v1/exercises/{slug}/attempts", headers=bearer(token), json={"answer": answer})
        assert made.status_code == 201, made.json
        assert passback_runner(app).run_once() == 1
    # One score per graded attempt, all to the assignment's one line item; the last is the rule's.
    assert [s["lineitem"] for s in platform.scores] == [platform.lineitem_url()] * 3
    last = platform.scores[-1]["body"]
    assert last["userId"] == "student-7"
    assert last["scoreGiven"] == pytest.approx(expected_given, abs=1e-3) and last["scoreMaximum"] == expected_maximum
    # Graded as far as it goes (exercises not tried count 0), the activity still in progress.
    assert (last["gradingProgress"], last["activityProgress"]) == ("FullyGraded", "InProgress")
    assert [s["body"]["scoreGiven"] for s in platform.scores][:2] == [0, 0]
    # The third exercise graded: the activity is submitted.
    made = client.post(f"/api/v1/exercises/{SQUARE}/attempts", headers=bearer(token), json={"answer": SQUARE_RIGHT})
    assert made.status_code == 201 and passback_runner(app).run_once() == 1
    done = platform.scores[-1]["body"]
    expected_done = 200 / 3 if scoring == "mean" else 6
    assert done["scoreGiven"] == pytest.approx(expected_done, abs=1e-3) and done["activityProgress"] == "Submitted"
    assert platform.rejected == []


def test_a_late_retry_sends_the_assignments_score_as_it_is_when_sent(app, client, registered_platform):
    """The first attempt's score is refused, then a second exercise's grade is delivered: the retry of
    the first never sends the older assignment score."""
    platform = registered_platform
    item = _assignment(client, platform, "mean")
    token = launch_handoff(lti_launch(client, platform, custom=item["custom"], sub="student-8",
                                      resource_link_id="week-3"))["token"]
    runner = passback_runner(app)
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token),
                       json={"answer": QUIZ_RIGHT}).status_code == 201
    platform.fail_next_scores = 1
    runner.run_once()
    assert platform.scores == []
    assert client.post(f"/api/v1/exercises/{SQUARE}/attempts", headers=bearer(token),
                       json={"answer": SQUARE_RIGHT}).status_code == 201
    runner.run_once()
    with app.app_context():  # the first one's backoff has passed
        db_session().execute(ScorePassback.__table__.update().values(next_attempt_at=utcnow()))
        db_session().commit()
    runner.run_once()
    given = [s["body"]["scoreGiven"] for s in platform.scores]
    assert given and all(g == pytest.approx(200 / 3, abs=1e-3) for g in given), given
    assert platform.results[(platform.lineitem_url(), "student-8")]["score"]["scoreGiven"] == pytest.approx(200 / 3, abs=1e-3)


def test_an_override_of_one_exercises_attempt_sends_the_assignments_new_total(app, client, registered_platform,
                                                                              admin_key):
    platform = registered_platform
    item = _assignment(client, platform, "sum", {QUIZ: "2", SQUARE: "1", CLAMP: "1"})
    token = launch_handoff(lti_launch(client, platform, custom=item["custom"], sub="student-9",
                                      resource_link_id="week-3"))["token"]
    runner = passback_runner(app)
    wrong = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": QUIZ_WRONG})
    assert client.post(f"/api/v1/exercises/{SQUARE}/attempts", headers=bearer(token),
                       json={"answer": SQUARE_RIGHT}).status_code == 201
    runner.run_once()
    assert platform.scores[-1]["body"]["scoreGiven"] == 1 and platform.scores[-1]["body"]["scoreMaximum"] == 4
    overridden = client.post(f"/api/v1/admin/attempts/{wrong.json['id']}/override", headers=bearer(admin_key),
                             json={"score": 0.5, "reason": "partly right"})
    assert overridden.status_code == 201, overridden.json
    runner.run_once()
    # QUIZ's 0.5 x 2 points + SQUARE's 1 x 1, out of 4: one score to the assignment's line item.
    assert platform.scores[-1]["body"]["scoreGiven"] == 2 and platform.scores[-1]["lineitem"] == platform.lineitem_url()


def test_each_exercise_of_an_assignment_has_its_own_rules_and_they_refuse_the_learner(
        app, client, registered_platform, admin_key):
    """Staff set max_attempts = 1 on the assignment's second exercise alone: the learner's second
    attempt there is refused, the first exercise keeps its own (unlimited) rules. A link of several
    exercises names the exercise: its rules without one are a 409 that lists them."""
    platform = registered_platform
    item = _assignment(client, platform, "mean")
    token = launch_handoff(lti_launch(client, platform, custom=item["custom"], sub="student-5",
                                      resource_link_id="week-3"))["token"]
    [link] = client.get(f"/api/v1/admin/links?exercise={SQUARE}", headers=bearer(admin_key)).json
    assert (link["exercise"], link["exercises"]) == (QUIZ, [QUIZ, SQUARE, CLAMP])
    rules = f"/api/v1/admin/links/{link['id']}/exercises/{SQUARE}/rules"
    described = client.put(rules, headers=bearer(admin_key), json={"max_attempts": 1})
    assert described.status_code == 200, described.json
    assert (described.json["exercise"], described.json["link"], described.json["link_exercises"],
            described.json["in_force"]["max_attempts"]) == (SQUARE, link["id"], [QUIZ, SQUARE, CLAMP], 1)
    first_exercise = client.get(f"/api/v1/admin/links/{link['id']}/exercises/{QUIZ}/rules", headers=bearer(admin_key))
    assert (first_exercise.json["assignment"], first_exercise.json["in_force"]["max_attempts"]) == (None, None)

    def answer(slug: str, value):
        return client.post(f"/api/v1/exercises/{slug}/attempts", headers=bearer(token), json={"answer": value})

    assert answer(SQUARE, 2.0).status_code == 201
    refused = answer(SQUARE, SQUARE_RIGHT)
    assert refused.status_code == 409 and refused.json["type"] == "/problems/attempt-refused/no-attempts-left"
    assert [answer(QUIZ, QUIZ_WRONG).status_code for _ in range(2)] == [201, 201]

    # The link's rules without an exercise are ambiguous here; an exercise not of the link is not found.
    for method in ("GET", "PUT", "DELETE"):
        ambiguous = client.open(f"/api/v1/admin/links/{link['id']}/rules", method=method, headers=bearer(admin_key),
                                json={"max_attempts": 2} if method == "PUT" else None)
        assert ambiguous.status_code == 409 and ambiguous.content_type == "application/problem+json"
        assert f"{QUIZ}, {SQUARE}, {CLAMP}" in ambiguous.json["detail"]
    other = client.get(f"/api/v1/admin/links/{link['id']}/exercises/doublefn-forward-result/rules",
                       headers=bearer(admin_key))
    assert other.status_code == 404


def test_the_assignment_page_reads_the_learners_attempts_in_one_statement(app, client, registered_platform,
                                                                         database_url):
    """Every exercise's status, attempts and counted score (best or latest) from one read of the
    attempts, however many exercises the assignment has."""
    platform = registered_platform
    item = _assignment(client, platform, "mean")
    token = launch_handoff(lti_launch(client, platform, custom=item["custom"], sub="student-6",
                                      resource_link_id="week-3"))["token"]
    for slug, answer in ((QUIZ, QUIZ_WRONG), (QUIZ, QUIZ_RIGHT), (CLAMP, 2.0)):
        assert client.post(f"/api/v1/exercises/{slug}/attempts", headers=bearer(token),
                           json={"answer": answer}).status_code == 201
    statements: list[str] = []
    engine = engine_for(database_url)

    def listener(_conn, _cursor, statement, *_rest) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", listener)
    try:
        listed = client.get("/api/v1/assignment", headers=bearer(token))
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert listed.status_code == 200, listed.json
    assert [(e["slug"], e["status"], e["attempts"], e["score"]) for e in listed.json["exercises"]] == [
        (QUIZ, "passed", 2, 1.0), (SQUARE, "not_tried", 0, None), (CLAMP, "tried", 1, 0.0)]
    assert len([s for s in statements if re.search(r"\bFROM attempts\b", s)]) == 1, statements


def test_the_catalog_refuses_an_exercise_called_assignment(tmp_path):
    """/learn/assignment is the assignment's page: no exercise may take that path."""
    shutil.copytree(PROJECT_ROOT / "exercises" / QUIZ, tmp_path / "assignment")
    exercises, problems = load_catalog(tmp_path)
    assert exercises == [] and [p.path for p in problems] == ["assignment"], problems
