"""A course's own exercises (issue 34) are seen by that course alone: its learners' tokens, its staff,
staff keys. Everyone else, no credentials included, is answered as for a slug that does not exist.
And previews: a version answered by its course's staff as a learner would, graded, never counted."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sqlalchemy import select, update

from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.models import Attempt, AttemptEvent, Course, Exercise, PreviewAttempt, Run, ScorePassback
from service.services.courses import make_key
from tests.helpers import add_course_exercise, bearer, count_rows

QUIZ = "backward-none-for-bounds"  # single choice; "none-each" is right
RIGHT = "none-each"
CODE = "clamp-function"
REFERENCE = (PROJECT_ROOT / "exercises" / CODE / "reference.py").read_text()
FORGOT_GRAD_OUTPUT = (PROJECT_ROOT / "exercises" / CODE / "wrong" / "forgot_grad_output.py").read_text()
OWN_QUIZ, OWN_CODE, OTHERS_QUIZ = "x-own-quiz", "x-own-code", "y-own-quiz"


@dataclass
class World:
    x: int  # course X of client A, which owns OWN_QUIZ and OWN_CODE
    y: int  # course Y of client A, which owns OTHERS_QUIZ
    x_learner: str  # learner tokens: ada in X, ada in Y, B's ada in B's course
    y_learner: str
    b_learner: str
    x_key: str  # course keys of X and Y
    y_key: str


def _course(client, key: str, external_id: str) -> int:
    made = client.post("/api/v1/courses", headers=bearer(key), json={"external_id": external_id, "title": external_id})
    assert made.status_code == 201, made.json
    return made.json["id"]


def _token(client, key: str, course: str, exercises=None) -> str:
    issued = client.post("/api/v1/learner-tokens", headers=bearer(key),
                         json={"learner": "ada", "exercises": exercises, "course": course})
    assert issued.status_code == 200, issued.json
    return issued.json["token"]


def _course_key(app, course_id: int) -> str:
    with app.app_context():
        session = db_session()
        _row, key = make_key(session, session.get(Course, course_id), "tests", "tests")
        session.commit()
        return key


@pytest.fixture
def world(app, client, client_key, other_client_key) -> World:
    x, y = _course(client, client_key, "x"), _course(client, client_key, "y")
    _course(client, other_client_key, "b")
    add_course_exercise(app, x, OWN_QUIZ, QUIZ)
    add_course_exercise(app, x, OWN_CODE, CODE)
    add_course_exercise(app, y, OTHERS_QUIZ, QUIZ)
    return World(x, y, _token(client, client_key, "x"), _token(client, client_key, "y"),
                 _token(client, other_client_key, "b"), _course_key(app, x), _course_key(app, y))


def _not_found(response, slug: str) -> None:
    """The answer to a slug that does not exist, word for word (with the slug in its place)."""
    assert response.status_code == 404, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    assert response.json["detail"] == f"No exercise with slug {slug!r}."


def test_a_course_exercise_is_seen_and_answered_by_its_courses_learners(client, world, worker):
    x_learner = bearer(world.x_learner)
    detail = client.get(f"/api/v1/exercises/{OWN_QUIZ}", headers=x_learner)
    assert detail.status_code == 200 and detail.json["slug"] == OWN_QUIZ and detail.json["learner"] == "ada"
    base = f"/api/v1/courses/{world.x}/exercises"
    standing = client.get(f"{base}/{OWN_QUIZ}/standing", headers=x_learner)
    assert standing.status_code == 200 and standing.json["attempts_used"] == 0, standing.json
    graded = client.post(f"{base}/{OWN_QUIZ}/attempts", headers=x_learner, json={"answer": RIGHT})
    assert graded.status_code == 201 and graded.json["score"] == 1.0 and graded.json["exercise"] == OWN_QUIZ
    # The catalog's URL answers the same caller alike (the learner page posts there).
    again = client.post(f"/api/v1/exercises/{OWN_QUIZ}/attempts", headers=x_learner, json={"answer": RIGHT})
    assert again.status_code == 201 and again.json["attempt_number"] == 2
    queued = client.post(f"{base}/{OWN_CODE}/attempts", headers=x_learner, json={"code": REFERENCE})
    assert queued.status_code == 202, queued.json
    done = client.get(queued.headers["Location"] + "?wait=20", headers=x_learner).json
    assert done["status"] == "graded" and done["score"] == 1.0 and done["exercise"] == OWN_CODE
    history = client.get(f"{base}/{OWN_QUIZ}/attempts", headers=x_learner)
    assert history.status_code == 200 and len(history.json["attempts"]) == 2
    assert history.json["best_scores"] == [{"exercise": OWN_QUIZ, "attempts": 2, "best_score": 1.0, "passed": True}]
    # The course's staff read it too (the shared detail); an instructor's key is staff of every course.
    assert client.get(f"/api/v1/exercises/{OWN_QUIZ}", headers=bearer(world.x_key)).status_code == 200


def test_a_course_exercise_is_a_404_like_an_unknown_slug_outside_its_course(app, client, client_key, other_client_key,
                                                                            world):
    outsiders = {"Y's learner": bearer(world.y_learner), "B's learner": bearer(world.b_learner), "nobody": {},
                 "Y's course key": bearer(world.y_key), "B's key": bearer(other_client_key),
                 "A's key, no course named": bearer(client_key)}
    before = count_rows(app, Attempt)
    for who, headers in outsiders.items():
        for slug in (OWN_QUIZ, "no-such-exercise"):
            _not_found(client.get(f"/api/v1/exercises/{slug}", headers=headers), slug)
            if headers and who != "Y's course key":
                _not_found(client.post(f"/api/v1/exercises/{slug}/attempts", headers=headers,
                                       json={"learner": "ada", "answer": RIGHT}), slug)
                _not_found(client.get(f"/api/v1/exercises/{slug}/standing", headers=headers,
                                      query_string={"learner": "ada"}), slug)
    assert count_rows(app, Attempt) == before
    # At a course's URL: another course's exercise, or the catalog's, is not that course's.
    x_learner, y_learner = bearer(world.x_learner), bearer(world.y_learner)
    for course, slug, headers in ((world.x, OWN_QUIZ, y_learner), (world.y, OWN_QUIZ, y_learner),
                                  (world.y, QUIZ, y_learner), (world.x, OTHERS_QUIZ, x_learner)):
        base = f"/api/v1/courses/{course}/exercises/{slug}"
        _not_found(client.post(f"{base}/attempts", headers=headers, json={"answer": RIGHT}), slug)
        _not_found(client.get(f"{base}/attempts", headers=headers), slug)
        _not_found(client.get(f"{base}/standing", headers=headers), slug)
    # A's own key at the course's URL sees its course's exercise (it names the course), never B's.
    by_key = client.get(f"/api/v1/courses/{world.x}/exercises/{OWN_QUIZ}/standing", headers=bearer(client_key),
                        query_string={"learner": "ada"})
    assert by_key.status_code == 200
    _not_found(client.get(f"/api/v1/courses/{world.x}/exercises/{OWN_QUIZ}/standing", headers=bearer(other_client_key),
                          query_string={"learner": "ada"}), OWN_QUIZ)
    # Neither the public catalog nor the lesson lists a course's exercise.
    listed = {e["slug"] for e in client.get("/api/v1/exercises", query_string={"page_size": 100}).json}
    assert QUIZ in listed and not listed & {OWN_QUIZ, OWN_CODE, OTHERS_QUIZ}
    assert OWN_QUIZ not in client.get("/learn").get_data(as_text=True)


def test_the_shared_detail_cache_never_serves_a_course_exercise_outside_its_course(make_app, app, world):
    cached = make_app(exercise_cache_seconds=60).test_client()
    first = cached.get(f"/api/v1/exercises/{OWN_QUIZ}", headers=bearer(world.x_key))  # the shared detail, of X's staff
    assert first.status_code == 200
    _not_found(cached.get(f"/api/v1/exercises/{OWN_QUIZ}"), OWN_QUIZ)
    _not_found(cached.get(f"/api/v1/exercises/{OWN_QUIZ}", headers=bearer(world.y_key)), OWN_QUIZ)
    # And the cache of current versions, which attempts read, neither.
    assert cached.post(f"/api/v1/exercises/{OWN_QUIZ}/attempts", headers=bearer(world.x_learner),
                       json={"answer": RIGHT}).status_code == 201
    _not_found(cached.post(f"/api/v1/exercises/{OWN_QUIZ}/attempts", headers=bearer(world.y_learner),
                           json={"answer": RIGHT}), OWN_QUIZ)


def test_a_token_names_a_courses_exercises_only_with_that_course(client, client_key, world):
    for course in (None, "y"):
        refused = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                              json={"learner": "ada", "exercises": [QUIZ, OWN_QUIZ], "course": course})
        assert refused.status_code == 422 and refused.json["errors"] == [
            {"field": "json.exercises[1]", "message": f"no published exercise {OWN_QUIZ!r}"}]
    token = _token(client, client_key, "x", [QUIZ, OWN_QUIZ])
    assert client.get(f"/api/v1/exercises/{OWN_QUIZ}", headers=bearer(token)).status_code == 200


def test_the_learner_page_of_a_course_exercise_is_a_shell_without_its_detail(client, world):
    course_page = client.get(f"/learn/{OWN_QUIZ}")
    unknown = client.get("/learn/no-such-exercise")
    assert course_page.status_code == unknown.status_code == 404
    page = course_page.get_data(as_text=True)
    assert page.replace(OWN_QUIZ, "no-such-exercise") == unknown.get_data(as_text=True)
    assert 'id="gradquiz-shell"' in page and f'"exercise_api": "/api/v1/exercises/{OWN_QUIZ}"' in page
    assert "gradquiz-exercise" not in page and "prompt" not in page
    assert "script-src 'self'" in course_page.headers["Content-Security-Policy"]


def test_the_preview_page_embeds_where_its_script_reads_the_version(client, world):
    page = client.get(f"/learn/preview/{world.x}/{OWN_QUIZ}/1")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    html = page.get_data(as_text=True)
    assert "Preview" in html and "gradquiz-exercise" not in html
    assert (f'{{"exercise_api": "/api/v1/courses/{world.x}/exercises/{OWN_QUIZ}/versions/1/preview", '
            f'"preview": true, "slug": "{OWN_QUIZ}"}}') in html


def _nothing_counted(app) -> tuple[int, int, int]:
    return count_rows(app, Attempt), count_rows(app, AttemptEvent), count_rows(app, ScorePassback)


def test_preview_attempts_are_graded_and_never_counted(app, client, world, worker):
    with app.app_context():  # a draft: never published, still previewed by its staff
        db_session().execute(update(Exercise).where(Exercise.slug == OWN_QUIZ).values(published=False))
        db_session().commit()
    _not_found(client.get(f"/api/v1/exercises/{OWN_QUIZ}", headers=bearer(world.x_learner)), OWN_QUIZ)
    staff = bearer(world.x_key)
    before = _nothing_counted(app)
    base = f"/api/v1/courses/{world.x}/exercises"
    detail = client.get(f"{base}/{OWN_QUIZ}/versions/1/preview", headers=staff)
    assert detail.status_code == 200, detail.json
    assert detail.json["preview"] is True and detail.json["learner"] == "preview:course key 'tests'"
    assert detail.json["attempts_url"] == f"{base}/{OWN_QUIZ}/versions/1/preview/attempts"
    graded = client.post(detail.json["attempts_url"], headers=staff, json={"answer": RIGHT})
    assert graded.status_code == 201, graded.json
    assert graded.json["preview"] is True and graded.json["score"] == 1.0 and graded.json["status"] == "graded"
    assert client.get(graded.json["url"], headers=staff).json["id"] == graded.json["id"]
    queued = client.post(f"{base}/{OWN_CODE}/versions/1/preview/attempts", headers=staff, json={"code": REFERENCE})
    assert queued.status_code == 202 and queued.headers["Location"] == queued.json["url"]
    done = client.get(queued.json["url"] + "?wait=20", headers=staff).json
    assert done["status"] == "graded" and done["score"] == 1.0 and done["report"]["status"] == "passed"
    # Under the version's scoring rules (the default gate), as its learners' attempts: a wrong backward is capped.
    wrong = client.post(f"{base}/{OWN_CODE}/versions/1/preview/attempts", headers=staff, json={"code": FORGOT_GRAD_OUTPUT})
    capped = client.get(wrong.json["url"] + "?wait=20", headers=staff).json
    assert (capped["score"], capped["scoring"]) == (0.3, {"policy": "gate", "cap": 0.3, "capped": True,
                                                          "checks_score": capped["report"]["score"]})
    assert _nothing_counted(app) == before and count_rows(app, PreviewAttempt) == 3
    standing = client.get(f"{base}/{OWN_CODE}/standing", headers=bearer(world.x_learner)).json
    assert standing["attempts_used"] == 0
    # Another course's staff, and a learner, reach none of it.
    for headers in (bearer(world.y_key), bearer(world.x_learner)):
        assert client.get(f"{base}/{OWN_QUIZ}/versions/1/preview", headers=headers).status_code in (403, 404)
        assert client.get(graded.json["url"], headers=headers).status_code in (403, 404)
    assert client.get(f"{base}/{OWN_QUIZ}/versions/2/preview", headers=staff).status_code == 404
    assert client.get(f"/api/v1/courses/{world.x}/exercises/{QUIZ}/versions/1/preview", headers=staff).status_code == 404


def test_a_courses_staff_run_code_for_nobody(app, client, world):
    run = client.post("/api/v1/runs", headers=bearer(world.x_key), json={"exercise": OWN_CODE, "code": REFERENCE,
                                                                         "wait": 0})
    assert run.status_code == 202, run.json
    with app.app_context():
        made = db_session().scalar(select(Run))
        assert made.learner is None and made.course_id == world.x
    assert client.get(run.headers["Location"], headers=bearer(world.x_key)).status_code == 200
    assert client.get(run.headers["Location"], headers=bearer(world.y_key)).status_code == 404
    _not_found_run = client.post("/api/v1/runs", headers=bearer(world.y_key),
                                 json={"exercise": OWN_CODE, "code": REFERENCE, "wait": 0})
    assert _not_found_run.status_code == 404


def test_an_exercise_written_through_the_api_is_previewed_published_and_answered_in_its_course(app, client, world):
    """The "Done when" chain from the API side, with a quiz (its proof needs no sandbox)."""
    files = {"exercise.toml": (PROJECT_ROOT / "exercises" / QUIZ / "exercise.toml").read_text()}
    staff, learner = bearer(world.x_key), bearer(world.x_learner)
    base = f"/api/v1/courses/{world.x}/exercises"
    made = client.post(base, headers=staff, json={"slug": "bounds-in-x", "files": files})
    assert made.status_code == 201, made.json
    draft = made.json["exercises"][0]
    assert draft["proof"]["passed"] is True and draft["status"] == "draft"
    _not_found(client.post(f"{base}/bounds-in-x/attempts", headers=learner, json={"answer": RIGHT}), "bounds-in-x")
    preview = client.get(f"{base}/bounds-in-x/versions/{draft['version']}/preview", headers=staff).json
    assert client.post(preview["attempts_url"], headers=staff, json={"answer": RIGHT}).json["score"] == 1.0
    assert client.post(f"{base}/bounds-in-x/publish", headers=staff, json={}).status_code == 200
    assert client.get(draft["url"], headers=learner).json["learner"] == "ada"
    answered = client.post(draft["url"] + "/attempts", headers=learner, json={"answer": RIGHT})
    assert answered.status_code == 201 and answered.json["score"] == 1.0
    assert count_rows(app, Attempt) == 1
    for outsider in (bearer(world.y_learner), bearer(world.b_learner)):
        _not_found(client.post(draft["url"] + "/attempts", headers=outsider, json={"answer": RIGHT}), "bounds-in-x")
        _not_found(client.get("/api/v1/exercises/bounds-in-x", headers=outsider), "bounds-in-x")
    assert client.get(draft["url"], headers=bearer(world.y_learner)).status_code == 404


def test_a_courses_staff_see_its_own_exercises_in_the_dashboards_api_and_no_other_courses(client, admin_key, world):
    def listed(key: str) -> set[str]:
        return {e["slug"] for e in client.get("/api/v1/admin/exercises", headers=bearer(key)).json}

    assert {QUIZ, OWN_QUIZ, OWN_CODE} <= listed(world.x_key) and OTHERS_QUIZ not in listed(world.x_key)
    assert OWN_QUIZ not in listed(world.y_key) and {OWN_QUIZ, OTHERS_QUIZ} <= listed(admin_key)
    for path in (f"/api/v1/admin/exercises/{OWN_QUIZ}/versions", f"/api/v1/admin/exercises/{OWN_QUIZ}/stats"):
        assert client.get(path, headers=bearer(world.x_key)).status_code == 200, path
        assert client.get(path, headers=bearer(world.y_key)).status_code == 404, path
    gradebook = client.get("/api/v1/admin/gradebook.csv", headers=bearer(world.y_key)).get_data(as_text=True)
    assert OTHERS_QUIZ in gradebook.splitlines()[0] and OWN_QUIZ not in gradebook
    # The catalog's publishing never bypasses a course exercise's proof: that is its course's API.
    assert client.post(f"/api/v1/admin/exercises/{OWN_QUIZ}/unpublish", headers=bearer(admin_key)).status_code == 404


def test_a_preview_runs_a_draft_version_for_its_courses_staff_alone(app, client, world):
    with app.app_context():
        db_session().execute(update(Exercise).where(Exercise.slug == OWN_CODE).values(published=False))
        db_session().commit()
    body = {"exercise": OWN_CODE, "version": 1, "code": REFERENCE, "wait": 0}
    run = client.post("/api/v1/runs", headers=bearer(world.x_key), json=body)
    assert run.status_code == 202, run.json
    assert run.json["exercise"] == OWN_CODE
    assert client.post("/api/v1/runs", headers=bearer(world.x_key), json={**body, "version": 2}).status_code == 404
    assert client.post("/api/v1/runs", headers=bearer(world.y_key), json=body).status_code == 404
    assert client.post("/api/v1/runs", headers=bearer(world.x_learner), json=body).status_code == 403
    assert client.post("/api/v1/runs", headers=bearer(world.x_key), json={"version": 1, "code": "print(1)"}
                       ).status_code == 422


@pytest.mark.backends("sqlite")
def test_a_version_id_given_again_after_a_delete_is_graded_with_its_own_files(app, world):
    """SQLite gives a deleted exercise's version id to the next version: a worker that kept the old
    version's files must not grade the new one with them (service/jobs/worker.py exercise_payload)."""
    from service.jobs.worker import exercise_payload
    from service.services import authoring

    with app.app_context():
        session = db_session()
        old = session.scalar(select(Exercise).where(Exercise.slug == OTHERS_QUIZ))  # the last one made
        old_version_id = old.version.id

        def preview_of(version_id: int) -> PreviewAttempt:
            row = PreviewAttempt(course_id=world.y, client_id=session.get_one(Course, world.y).client_id,
                                 exercise_version_id=version_id, actor="prof", code="", status="queued")
            session.add(row)
            session.commit()
            return row

        assert exercise_payload(preview_of(old_version_id))["slug"] == OTHERS_QUIZ  # kept by this process
        session.execute(update(Exercise).where(Exercise.id == old.id).values(published=False))
        session.query(PreviewAttempt).delete()
        authoring.delete_exercise(session, old)
        session.commit()
        files = {path: text for path, text in authoring.version_files(
            session.scalar(select(Exercise).where(Exercise.slug == QUIZ)).version).items()}
        new = authoring.save_draft(session, session.get_one(Course, world.y), "y-new-quiz", files, author="prof",
                                   source="api")
        session.commit()
        assert new.version.id == old_version_id  # the id came back
        assert exercise_payload(preview_of(new.version.id))["slug"] == "y-new-quiz"
