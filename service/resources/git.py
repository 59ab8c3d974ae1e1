"""A course's exercises from its git repository (issue 34): the repository's settings, "Sync now",
the syncs' records, and the push webhook the git host calls.

Staff of the course only (a course key or staff session of it, an instructor or admin key), but
the webhook: the git host holds no key, it signs the push with the course's webhook secret. No
sync runs here: each is queued, and the workers' supervisor runs it (service/gitsync/sync.py).
"""

from __future__ import annotations

import json
from typing import Any

from flask import current_app, request, url_for
from flask.views import MethodView
from sqlalchemy import select

from ..auth import BEARER, require_staff, staff_actor
from ..config import Settings
from ..errors import VALIDATION_ERROR, problem_abort
from ..extensions import db_session
from ..gitsync.fetch import url_problem
from ..gitsync.repository import configure, push_signed, pushed_branch, rotate_webhook_secret
from ..gitsync.sync import queue_sync, shown_exercises
from ..models import CourseGitRepo, GitSync
from ..ratelimit import refuse_past_limit
from ..schemas.git import GitRepoSchema, GitRepoSetSchema, GitSyncSchema, WebhookAckSchema
from .blueprint import Blueprint
from .course_scope import NO_COURSE, course_asked
from .docs import BODY_PROBLEMS, ROW_ID, STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("git", __name__, url_prefix="/api/v1",
                description="For a course's staff: the course's exercises synced from a git repository (pushes "
                            "to its branch sync it through a signed webhook).")
NO_REPO = (404, "No course with this id (or not the caller's course), or the course names no git repository")
SHOWN_SYNCS = 20
# Pushes of one course's webhook pass the rate limit GIT_WEBHOOKS_RATE_LIMIT.
WEBHOOK_SCOPE = "git_webhooks"


def _settings() -> Settings:
    return current_app.config["SETTINGS"]


def _course_id(course_id: int) -> int:
    asked = course_asked(course_id)
    assert asked is not None  # course_asked answered 404 for a course that does not exist
    return asked


def _repo(course_id: int) -> CourseGitRepo:
    repo = db_session().get(CourseGitRepo, _course_id(course_id))
    if repo is None:
        problem_abort(404, "This course names no git repository: PUT one first.")
    return repo


def _sync_view(sync: GitSync) -> dict[str, Any]:
    return {name: getattr(sync, name) for name in GitSyncSchema().fields} | {
        "exercises": shown_exercises(db_session(), sync)}


def _repo_view(repo: CourseGitRepo, webhook_secret: str | None = None) -> dict[str, Any]:
    last = db_session().scalar(select(GitSync).where(GitSync.course_id == repo.course_id)
                               .order_by(GitSync.id.desc()).limit(1))
    base = _settings().public_url.rstrip("/")
    path = url_for("git.GitWebhook", course_id=repo.course_id)
    view = {"url": repo.url, "branch": repo.branch, "path": repo.path, "has_token": repo.token_sealed is not None,
            "webhook_url": base + path if base else url_for("git.GitWebhook", course_id=repo.course_id, _external=True),
            "last_sync": _sync_view(last) if last is not None else None}
    if webhook_secret is not None:
        view["webhook_secret"] = webhook_secret
    return view


@blp.route(f"/courses/<{ROW_ID}:course_id>/git")
class CourseGit(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(GitRepoSetSchema)
    @blp.response(200, GitRepoSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE, *BODY_PROBLEMS,
              (422, "Not an https:// URL, a host the server does not allow (GIT_ALLOWED_HOSTS), credentials in "
                    "the URL, or a bad branch or folder"))
    def put(self, payload, course_id: int):
        """Name the course's repository (or change it). The first time, the answer holds the push
        webhook's secret: the only time it is shown. Nothing is fetched until a sync."""
        course_id = _course_id(course_id)
        problem = url_problem(payload["url"], _settings())
        if problem is not None:
            problem_abort(422, problem, title="Validation failed", type=VALIDATION_ERROR,
                          errors=[{"field": "json.url", "message": problem}])
        session = db_session()
        repo, secret = configure(session.get(CourseGitRepo, course_id), course_id, _settings().secret_key,
                                 url=payload["url"], branch=payload["branch"], path=payload["path"],
                                 token=payload.get("token"), keep_token="token" not in payload)
        session.add(repo)
        session.commit()
        return _repo_view(repo, secret)

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, GitRepoSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_REPO)
    def get(self, course_id: int):
        """The course's repository (never its token nor its webhook secret) and its last sync."""
        return _repo_view(_repo(course_id))

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE)
    def delete(self, course_id: int):
        """Forget the course's repository (its token and webhook secret with it; done already: 204
        too). The exercises it made stay, as they are; the syncs' records stay readable."""
        session = db_session()
        repo = session.get(CourseGitRepo, _course_id(course_id))
        if repo is not None:
            session.delete(repo)
            session.commit()


@blp.route(f"/courses/<{ROW_ID}:course_id>/git/sync")
class CourseGitSync(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(202, GitSyncSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_REPO)
    def post(self, course_id: int):
        """Sync now: the sync is queued (the one already waiting, if any) and a worker runs it within
        seconds; GET .../git/syncs shows what became of each exercise."""
        repo = _repo(course_id)
        sync = queue_sync(db_session(), repo.course_id, staff_actor())
        db_session().commit()
        return _sync_view(sync)


@blp.route(f"/courses/<{ROW_ID}:course_id>/git/syncs")
class CourseGitSyncs(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, GitSyncSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE)
    def get(self, course_id: int):
        """The course's latest syncs, newest first, each with what became of each exercise (a version
        still proving shows what its proof became since)."""
        course_id = _course_id(course_id)
        syncs = db_session().scalars(select(GitSync).where(GitSync.course_id == course_id)
                                     .order_by(GitSync.id.desc()).limit(SHOWN_SYNCS))
        return [_sync_view(sync) for sync in syncs]


@blp.route(f"/courses/<{ROW_ID}:course_id>/git/rotate-secret")
class CourseGitRotateSecret(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, GitRepoSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_REPO)
    def post(self, course_id: int):
        """A new webhook secret, shown this once; the old one signs nothing more (set the new one on
        the git host's webhook)."""
        repo = _repo(course_id)
        secret = rotate_webhook_secret(repo, _settings().secret_key)
        db_session().commit()
        return _repo_view(repo, secret)


@blp.route(f"/git-webhooks/<{ROW_ID}:course_id>")
class GitWebhook(MethodView):
    @blp.doc(security=[])
    @blp.response(202, WebhookAckSchema)
    @blp.alt_response(200, schema=WebhookAckSchema, description="Acknowledged and ignored: a push to another "
                                                                "branch, a tag, or another event (a ping)")
    @problems(blp, (401, "Not signed with the course's webhook secret (or the course names no repository)"),
              (404, "Not a course id (a negative or too large number)"),
              (413, "The body is larger than MAX_REQUEST_BYTES"),
              (429, "Too many signed pushes for this course (GIT_WEBHOOKS_RATE_LIMIT)"))
    def post(self, course_id: int):
        """The git host's push webhook (no API key): signed with the course's webhook secret, as
        GitHub and Gitea sign (`X-Hub-Signature-256: sha256=` the HMAC-SHA256 of the body) or GitLab
        sends it (`X-Gitlab-Token`). A push to the course's branch queues a sync (202)."""
        body = request.get_data(cache=False)
        repo = db_session().get(CourseGitRepo, course_id)
        if repo is None or not push_signed(repo, _settings().secret_key, request.headers, body):
            problem_abort(401, "The push is not signed with this course's webhook secret.")
        # Signed pushes alone are counted: unsigned ones, refused above, cannot use up the course's.
        refuse_past_limit(WEBHOOK_SCOPE, f"course:{course_id}")
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if pushed_branch(payload) != repo.branch:
            return {"queued": False, "sync_id": None}, 200
        sync = queue_sync(db_session(), course_id, "webhook")
        db_session().commit()
        return {"queued": True, "sync_id": sync.id}
