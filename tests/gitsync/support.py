"""What the git sync's tests share (their fixtures are in conftest.py)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
GIT_HOST = "127.0.0.1"
DEPLOY_TOKEN = "deploy-token-0f3c9a7e5d1b"


@dataclass(frozen=True)
class CourseStaff:
    course_id: int
    key: str  # a course key of the course: its staff


def signed(secret: str, body: bytes) -> dict[str, str]:
    """A GitHub push's headers: the HMAC-SHA256 of the body with the webhook's secret."""
    return {"X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json", "X-GitHub-Event": "push"}
