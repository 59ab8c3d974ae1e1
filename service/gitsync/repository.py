"""A course's repository settings and its push webhook's signature.

The deploy token and the webhook secret are sealed (service/sealing.py): the token must be sent to
the git host and the secret must compute each push's HMAC, so neither can be a hash. Neither is
ever returned but the webhook secret, once, when it is made.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Protocol

from ..models import CourseGitRepo
from ..models.base import utcnow
from ..sealing import InvalidToken, open_sealed, seal


class Headers(Protocol):
    def get(self, key: str) -> str | None: ...


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


def configure(repo: CourseGitRepo | None, course_id: int, secret_key: str, *, url: str, branch: str, path: str,
              token: str | None, keep_token: bool) -> tuple[CourseGitRepo, str | None]:
    """The course's repository settings, new or changed; and the webhook secret when one was made
    (a new repository: it is shown this once). `keep_token`: the request gave none, the one stored
    stays (a changed URL forgets it: a token is for one repository)."""
    made_secret = None
    if repo is None:
        made_secret = new_webhook_secret()
        repo = CourseGitRepo(course_id=course_id, webhook_secret_sealed=seal(secret_key, made_secret.encode()),
                             created_at=utcnow())
    elif repo.url != url and keep_token:
        keep_token = False
    if not keep_token:
        repo.token_sealed = seal(secret_key, token.encode()) if token else None
    repo.url, repo.branch, repo.path, repo.updated_at = url, branch, path.strip("/"), utcnow()
    return repo, made_secret


def rotate_webhook_secret(repo: CourseGitRepo, secret_key: str) -> str:
    secret = new_webhook_secret()
    repo.webhook_secret_sealed, repo.updated_at = seal(secret_key, secret.encode()), utcnow()
    return secret


def push_signed(repo: CourseGitRepo, secret_key: str, headers: Headers, body: bytes) -> bool:
    """Whether the push comes from the repository's host: GitHub's (and Gitea's) X-Hub-Signature-256,
    the HMAC-SHA256 of the raw body, or GitLab's X-Gitlab-Token, the secret itself; compared in
    constant time."""
    try:
        secret = open_sealed(secret_key, repo.webhook_secret_sealed)
    except InvalidToken:
        return False
    signature = headers.get("X-Hub-Signature-256")
    if signature is not None:
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(signature.strip().encode(), expected.encode())
    gitlab_token = headers.get("X-Gitlab-Token")
    if gitlab_token is not None:
        return hmac.compare_digest(gitlab_token.encode(), secret)
    return False


def pushed_branch(payload: object) -> str | None:
    """The branch a push event names (`ref`: refs/heads/<branch>, GitHub, GitLab and Gitea alike);
    None for another event (a ping) or a tag."""
    if not isinstance(payload, dict):
        return None
    ref = payload.get("ref")
    if isinstance(ref, str) and ref.startswith("refs/heads/"):
        return ref[len("refs/heads/"):]
    return None
