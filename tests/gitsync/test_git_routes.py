"""A course's git repository through the API: its settings (the allow list, the token never shown),
"Sync now", and the push webhook's signature. Nothing here fetches: the syncer is not run."""

from __future__ import annotations

import json

from sqlalchemy import func, select

from service.extensions import db_session
from service.models import CourseGitRepo, GitSync, Role
from tests.gitsync.support import DEPLOY_TOKEN, GIT_HOST, signed
from tests.helpers import bearer

REPO_URL = f"http://{GIT_HOST}:9/course.git"


def _configure(http, course, **body) -> dict:
    response = http.put(f"/api/v1/courses/{course.course_id}/git", headers=bearer(course.key),
                        json={"url": REPO_URL, **body})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _syncs(app) -> int:
    with app.app_context():
        return db_session().scalar(select(func.count()).select_from(GitSync))


def test_the_deploy_token_is_sealed_and_never_returned_and_the_webhook_secret_shown_once(app, course):
    http = app.test_client()
    made = _configure(http, course, token=DEPLOY_TOKEN, branch="main", path="exercises")
    assert made["has_token"] is True and made["branch"] == "main" and made["path"] == "exercises"
    assert len(made["webhook_secret"]) >= 32
    assert made["webhook_url"].endswith(f"/api/v1/git-webhooks/{course.course_id}")
    assert made["last_sync"] is None
    shown = http.get(f"/api/v1/courses/{course.course_id}/git", headers=bearer(course.key))
    assert shown.status_code == 200
    assert "webhook_secret" not in shown.get_json() and DEPLOY_TOKEN not in shown.get_data(as_text=True)
    with app.app_context():
        stored = db_session().get(CourseGitRepo, course.course_id)
        assert stored.token_sealed and DEPLOY_TOKEN not in stored.token_sealed
        assert made["webhook_secret"] not in stored.webhook_secret_sealed

    # A change without a token keeps it; the secret is not shown again.
    changed = _configure(http, course, branch="teaching")
    assert changed["has_token"] is True and changed["branch"] == "teaching" and "webhook_secret" not in changed
    # null forgets it.
    assert _configure(http, course, token=None)["has_token"] is False


def test_a_host_outside_the_allow_list_is_refused_and_nothing_is_stored(app, course):
    http = app.test_client()
    response = http.put(f"/api/v1/courses/{course.course_id}/git", headers=bearer(course.key),
                        json={"url": "https://github.com/someone/course.git"})
    assert response.status_code == 422
    assert response.content_type == "application/problem+json"
    assert "github.com is not one this server may sync from" in response.get_json()["detail"]
    assert GIT_HOST in response.get_json()["detail"]  # the operator's list, to ask for the right host
    assert http.get(f"/api/v1/courses/{course.course_id}/git", headers=bearer(course.key)).status_code == 404


def test_credentials_in_the_url_are_refused(app, course):
    response = app.test_client().put(f"/api/v1/courses/{course.course_id}/git", headers=bearer(course.key),
                                     json={"url": f"https://teacher:{DEPLOY_TOKEN}@{GIT_HOST}/course.git"})
    assert response.status_code == 422
    assert "user name or password" in response.get_json()["detail"]
    assert DEPLOY_TOKEN not in response.get_data(as_text=True)


def test_git_sync_is_off_without_allowed_hosts(make_app, client_key_for):
    off = make_app()
    key = client_key_for(off, "instructor", role=Role.INSTRUCTOR)
    made = off.test_client().post("/api/v1/courses", headers=bearer(key),
                                  json={"external_id": "off", "title": "No git here"})
    assert made.status_code == 201, made.get_json()
    response = off.test_client().put(f"/api/v1/courses/{made.get_json()['id']}/git", headers=bearer(key),
                                     json={"url": f"https://{GIT_HOST}/course.git"})
    assert response.status_code == 422
    assert "Git sync is off on this server" in response.get_json()["detail"]


def test_sync_now_queues_one_sync_at_a_time(app, course):
    http = app.test_client()
    _configure(http, course)
    first = http.post(f"/api/v1/courses/{course.course_id}/git/sync", headers=bearer(course.key))
    again = http.post(f"/api/v1/courses/{course.course_id}/git/sync", headers=bearer(course.key))
    assert first.status_code == again.status_code == 202
    assert first.get_json()["status"] == "queued" and again.get_json()["id"] == first.get_json()["id"]
    listed = http.get(f"/api/v1/courses/{course.course_id}/git/syncs", headers=bearer(course.key)).get_json()
    assert [s["id"] for s in listed] == [first.get_json()["id"]]


def test_a_push_queues_a_sync_only_when_signed_with_the_course_secret_and_to_its_branch(app, course):
    http = app.test_client()
    secret = _configure(http, course)["webhook_secret"]
    url = f"/api/v1/git-webhooks/{course.course_id}"
    push = json.dumps({"ref": "refs/heads/main", "after": "0" * 40}).encode()

    for headers in ({"Content-Type": "application/json"}, signed("not-the-secret", push),
                    {"X-Gitlab-Token": "not-the-secret", "Content-Type": "application/json"},
                    {**signed(secret, push + b" "), "Content-Type": "application/json"}):
        refused = http.post(url, data=push, headers=headers)
        assert refused.status_code == 401, refused.get_json()
        assert refused.content_type == "application/problem+json"
    assert _syncs(app) == 0

    other_branch = json.dumps({"ref": "refs/heads/drafts"}).encode()
    ignored = http.post(url, data=other_branch, headers=signed(secret, other_branch))
    assert ignored.status_code == 200 and ignored.get_json() == {"queued": False, "sync_id": None}
    assert _syncs(app) == 0

    github = http.post(url, data=push, headers=signed(secret, push))
    assert github.status_code == 202 and github.get_json()["queued"] is True
    gitlab = http.post(url, data=push, headers={"X-Gitlab-Token": secret, "Content-Type": "application/json"})
    assert gitlab.status_code == 202 and gitlab.get_json()["sync_id"] == github.get_json()["sync_id"]
    assert _syncs(app) == 1

    # A rotated secret: the old one signs nothing more.
    rotated = http.post(f"/api/v1/courses/{course.course_id}/git/rotate-secret", headers=bearer(course.key))
    assert rotated.status_code == 200 and rotated.get_json()["webhook_secret"] != secret
    assert http.post(url, data=push, headers=signed(secret, push)).status_code == 401


def test_a_course_without_a_repository_gets_401_for_any_push(app, course):
    push = b'{"ref": "refs/heads/main"}'
    response = app.test_client().post(f"/api/v1/git-webhooks/{course.course_id}", data=push,
                                      headers=signed("", push))
    assert response.status_code == 401


def test_pushes_are_rate_limited_per_course(make_app, course):
    limited = make_app(git_allowed_hosts=(GIT_HOST,), git_webhooks_rate_limit="2/minute")
    http = limited.test_client()
    secret = _configure(http, course)["webhook_secret"]
    push = b'{"ref": "refs/heads/main"}'
    answers = [http.post(f"/api/v1/git-webhooks/{course.course_id}", data=push, headers=signed(secret, push))
               for _ in range(3)]
    assert [answer.status_code for answer in answers] == [202, 202, 429]
    assert answers[2].json["detail"].startswith("Too many git webhooks: at most 2 per 1 minute.")
