"""The learner's pages over plain HTTP: /learn and /learn/{slug} (service/learn/).

The browser tests (tests/browser/test_learn*.py) drive the pages; here: what the server sends.
"""

from __future__ import annotations

import json
import re

from sqlalchemy import func, select, update

from service.extensions import db_session
from service.learn import render_exercise_page
from service.models import Attempt, Base, Exercise

SLUG = "backward-none-for-bounds"


def _json_block(html: str, element_id: str) -> dict | None:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', html, re.S)
    return json.loads(match.group(1)) if match else None


def _row_counts(app) -> dict[str, int]:
    with app.app_context():
        session = db_session()
        return {t.name: session.scalar(select(func.count()).select_from(t)) for t in Base.metadata.sorted_tables}


def test_the_exercise_page_embeds_the_public_detail_under_the_strict_policy(client):
    response = client.get(f"/learn/{SLUG}")
    assert response.status_code == 200 and response.mimetype == "text/html"
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy and "default-src 'self'" in policy
    assert "X-Frame-Options" not in response.headers  # an LMS shows the page in an iframe
    assert response.headers["Cache-Control"] == "no-cache"
    html = response.get_data(as_text=True)
    detail = _json_block(html, "gradquiz-exercise")
    assert detail == client.get(f"/api/v1/exercises/{SLUG}").get_json()
    assert _json_block(html, "gradquiz-launch") is None
    # Scripts are files of this origin: nothing inline but the two JSON blocks.
    for attrs, body in re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S):
        assert ('type="application/json"' in attrs) or (body == "" and 'src="/vendor/' in attrs), attrs


def test_a_launch_is_embedded_as_json_and_the_page_is_not_stored(app):
    launch = {"token": "t.o.k", "expires_in": 3600, "exercise": SLUG, "learner": "ada</script><b>",
              "role": "learner", "api": "http://localhost/api/v1", "refresh": "/api/v1/learner-tokens/refresh",
              "ignored": "not a launch field"}
    with app.test_request_context(f"/learn/{SLUG}"):
        response = render_exercise_page(SLUG, launch=launch)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    html = response.get_data(as_text=True)
    assert "</script><b>" not in html  # tojson escapes <, > and &
    embedded = _json_block(html, "gradquiz-launch")
    assert embedded == {k: v for k, v in launch.items() if k != "ignored"}


def test_unknown_and_unpublished_exercises_are_a_404_page_and_write_nothing(app, client):
    with app.app_context():
        db_session().execute(update(Exercise).where(Exercise.slug == SLUG).values(published=False))
        db_session().commit()
    before = _row_counts(app)
    for path in (f"/learn/{SLUG}", "/learn/no-such-exercise", "/learn/%3Cscript%3Ealert(1)%3C%2Fscript%3E"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.mimetype == "text/html"
        html = response.get_data(as_text=True)
        assert "Not found" in html and "<script>alert" not in html and "Traceback" not in html
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    with app.test_request_context("/"):
        assert render_exercise_page(SLUG, launch={"token": "x"}).status_code == 404
    assert _row_counts(app) == before
    with app.app_context():
        assert db_session().scalar(select(func.count()).select_from(Attempt)) == 0


def test_the_lesson_page_is_served(client):
    response = client.get("/learn")
    assert response.status_code == 200 and response.mimetype == "text/html"
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_an_exercise_page_names_its_concept_and_its_neighbours(app, client, client_key):
    from service.learn.lesson import the_lesson
    from tests.helpers import add_course_exercise, bearer

    lesson = the_lesson()
    ctx = next(c for c in lesson.concepts if c.id == "ctx")
    html = client.get(f"/learn/{ctx.exercises[0]}").get_data(as_text=True)
    crumbs = re.search(r'<nav class="crumbs".*?</nav>', html, re.S).group(0)
    assert 'href="/learn#ctx"' in crumbs and ctx.title in crumbs
    before = lesson.concepts[[c.id for c in lesson.concepts].index("ctx") - 1].exercises[-1]
    assert f'rel="prev" href="/learn/{before}"' in html and f'rel="next" href="/learn/{ctx.exercises[1]}"' in html
    assert f"Exercise 1 of {len(ctx.exercises)} in this part" in html
    # The lesson's last exercise leads to the recap that closes it.
    last = client.get(f"/learn/{lesson.concepts[-1].exercises[-1]}").get_data(as_text=True)
    assert 'rel="next" href="/learn#key-points"' in last and "Next: Key points" in last
    # A launch links only the neighbours its token may answer (the LMS launched this one).
    scoped = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                         json={"learner": "ada", "exercises": [ctx.exercises[0], ctx.exercises[1]]}).json["token"]
    with app.test_request_context(f"/learn/{ctx.exercises[0]}"):
        launched = render_exercise_page(ctx.exercises[0], launch={"token": scoped}).get_data(as_text=True)
    assert 'rel="prev"' not in launched and f'rel="next" href="/learn/{ctx.exercises[1]}"' in launched
    # A course's own exercise (opened by a launch of its course) is in no lesson: its course, no neighbours.
    course = client.post("/api/v1/courses", headers=bearer(client_key), json={"external_id": "x", "title": "Autumn"}).json
    add_course_exercise(app, course["id"], "x-own-quiz", SLUG)
    token = client.post("/api/v1/learner-tokens", headers=bearer(client_key),
                        json={"learner": "ada", "exercises": None, "course": "x"}).json["token"]
    with app.test_request_context("/learn/x-own-quiz"):
        page = render_exercise_page("x-own-quiz", launch={"token": token}).get_data(as_text=True)
    assert '<span id="crumb-section">Course: Autumn</span>' in page and "exercise-nav" not in page


def test_the_second_lesson_is_served_beside_the_first_and_each_links_the_other(client):
    from service.learn.lesson import the_lessons

    first, second = the_lessons()
    one = client.get("/learn").get_data(as_text=True)
    two_response = client.get("/learn/beyond")
    assert two_response.status_code == 200 and two_response.mimetype == "text/html"
    assert "script-src 'self'" in two_response.headers["Content-Security-Policy"]
    two = two_response.get_data(as_text=True)
    # The lessons' navigation, the current one marked, on both; the way on at the end.
    labels = {"/learn": "Lesson 1: Custom autograd functions", "/learn/beyond": "Lesson 2: Beyond the basics"}
    for html, current in ((one, "/learn"), (two, "/learn/beyond")):
        nav = re.search(r'<nav class="crumbs lessons-nav".*?</nav>', html, re.S).group(0)
        assert f'<strong aria-current="page">{labels[current]}</strong>' in nav
        other = next(url for url in labels if url != current)
        assert f'<a href="{other}">{labels[other]}</a>' in nav
    assert 'id="next-lesson" rel="next" href="/learn/beyond">Next lesson: Beyond the basics' in one
    assert 'id="previous-lesson" rel="prev" href="/learn"><span aria-hidden="true">← </span>Previous lesson: Custom ' \
        'autograd functions' in two
    assert 'id="previous-lesson"' not in one and 'id="next-lesson"' not in two
    # Each page's document is its own lesson's; the first lists none of the second's exercises.
    doc_one, doc_two = _json_block(one, "gradquiz-lesson"), _json_block(two, "gradquiz-lesson")
    assert doc_two["title"] == second.title and [c["id"] for c in doc_two["concepts"]] == [c.id for c in second.concepts]
    listed_one = {e["slug"] for c in doc_one["concepts"] for e in c["exercises"]} | {e["slug"] for e in doc_one["more"]}
    listed_two = {e["slug"] for c in doc_two["concepts"] for e in c["exercises"]}
    assert listed_two == set(second.slugs) and not listed_one & listed_two and doc_two["more"] == []
    assert doc_two["recap"]["id"] == "beyond-key-points"
    examples = [e for c in doc_two["concepts"] for e in c["examples"]]
    assert examples and all("prints" not in e for e in examples)  # what the tests check is not served


def test_an_exercise_of_the_second_lesson_names_it_and_keeps_its_way_inside_it(client):
    from service.learn.lesson import the_lessons

    first, second = the_lessons()
    concept = second.concepts[0]
    html = client.get(f"/learn/{concept.exercises[0]}").get_data(as_text=True)
    crumbs = re.search(r'<nav class="crumbs".*?</nav>', html, re.S).group(0)
    assert '<a href="/learn/beyond" id="crumb-lesson">Lesson 2: Beyond the basics</a>' in crumbs
    assert f'href="/learn/beyond#{concept.id}"' in crumbs
    assert 'rel="prev"' not in html and f'rel="next" href="/learn/{concept.exercises[1]}"' in html
    last = client.get(f"/learn/{second.slugs[-1]}").get_data(as_text=True)
    assert 'rel="next" href="/learn/beyond#beyond-key-points"' in last and "Next: Key points" in last
    # The first lesson's pages keep their own.
    first_page = client.get(f"/learn/{first.slugs[0]}").get_data(as_text=True)
    assert '<a href="/learn" id="crumb-lesson">Lesson 1: Custom autograd functions</a>' in first_page
