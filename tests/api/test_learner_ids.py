"""Learner ids and course external ids: no character that makes one id look like another (bidi
controls, line separators, format and control characters), and not white space alone; each entry
point refuses them with a 422 naming the field (a path's, with 404), and writes nothing."""

import re

import pytest

from service.learner_ids import LEARNER_PATTERN, is_learner_id
from service.models import Attempt, Course
from tests.helpers import bearer, count_rows

QUIZ = "backward-none-for-bounds"
REFUSED = {
    "right-to-left override": "\u202eada",
    "left-to-right embedding": "\u202aada\u202c",
    "first strong isolate": "\u2068ada\u2069",
    "right-to-left mark": "ada\u200f",
    "arabic letter mark": "ada\u061c",
    "line separator": "ada\u2028bob",
    "paragraph separator": "ada\u2029",
    "zero width space": "a\u200bda",
    "byte order mark": "\ufeffada",
    "soft hyphen": "a\u00adda",
    "next line (C1 control)": "ada\x85",
    "newline": "ada\n",
    "tab": "a\tda",
    "slash": "a/b",
    "empty": "",
    "spaces only": "   ",
    "no-break and ideographic spaces only": "\u00a0\u3000",
    "too long": "x" * 256,
}
ACCEPTED = ["ada", "Ada Lovelace", " ada", "émile.zola@example.edu", "علي", "李雷", "learner-😀", "x" * 255]


@pytest.mark.parametrize("value", REFUSED.values(), ids=REFUSED.keys())
def test_the_rule_refuses_look_alike_ids(value):
    assert not is_learner_id(value)
    assert re.fullmatch(LEARNER_PATTERN, value) is None  # the document's pattern says the same


@pytest.mark.parametrize("value", ACCEPTED)
def test_the_rule_takes_ids_of_any_script(value):
    assert is_learner_id(value) and re.fullmatch(LEARNER_PATTERN, value)


def _field_errors(response, status=422):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.content_type == "application/problem+json"
    return [error["field"] for error in response.json["errors"]]


@pytest.mark.parametrize("value", REFUSED.values(), ids=REFUSED.keys())
def test_every_entry_point_refuses_them_naming_the_field(app, client, client_key, value):
    key = bearer(client_key)
    answer = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=key, json={"learner": value, "answer": "none-each"})
    assert "json.learner" in _field_errors(answer)
    token = client.post("/api/v1/learner-tokens", headers=key, json={"learner": value, "exercises": [QUIZ]})
    assert "json.learner" in _field_errors(token)
    course = client.post("/api/v1/courses", headers=key, json={"external_id": value, "title": "CS 101"})
    assert "json.external_id" in _field_errors(course)
    in_course = client.post("/api/v1/learner-tokens", headers=key, json={"learner": "ada", "exercises": [QUIZ], "course": value})
    assert "json.course" in _field_errors(in_course)
    variant = client.get(f"/api/v1/exercises/{QUIZ}", headers=key, query_string={"learner": value})
    assert "query.learner" in _field_errors(variant)
    assert count_rows(app, Attempt) == 0 and count_rows(app, Course) == 0


@pytest.mark.parametrize("value", ["\u202eada", "ada\u2028", "   ", "a\u200bda"])
def test_a_path_with_such_a_learner_id_is_not_found(client, client_key, value):
    response = client.get(f"/api/v1/learners/{value}/attempts", headers=bearer(client_key))
    assert response.status_code == 404 and response.content_type == "application/problem+json"


def test_ids_of_any_script_are_taken(app, client, client_key):
    for learner in ACCEPTED:
        response = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(client_key),
                               json={"learner": learner, "answer": "none-each"})
        assert response.status_code == 201, (learner, response.json)
    assert client.get("/api/v1/learners/علي/attempts", headers=bearer(client_key)).json["attempts"]
