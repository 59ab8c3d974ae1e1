"""Helpers of the LTI tests: a login and a launch at the test platform, the page's handoff, the
passback runner, the scores an LMS should receive, a registration link and the LMS opening it."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import uuid
from datetime import UTC, timedelta

from sqlalchemy import select

from service.extensions import db_session
from service.lti import claims as c
from service.lti.passback import ScorePassbacks
from service.models import Attempt, AttemptEvent, ScorePassback
from service.models.base import utcnow
from service.outbound.runner import OutboundRunner
from tests.helpers import bearer

from .platform import TestPlatform

QUIZ = "backward-none-for-bounds"
RIGHT, WRONG = "none-each", "zero-number"
LAUNCH_URL = "http://localhost/lti/launch"
# As a browser asks, in the LMS's dialog.
PAGE = {"Accept": "text/html,application/xhtml+xml"}


def trust_tool_keys(client, platform: TestPlatform) -> None:
    tool_jwks = client.get("/lti/jwks").json  # fetched here: the platform calls it from its own thread
    platform.tool_jwks = lambda: tool_jwks


def lti_login(client, platform: TestPlatform, target: str = LAUNCH_URL) -> str:
    response = client.get("/lti/login", query_string=platform.login_initiation(target))
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def lti_launch(client, platform: TestPlatform, **claims):
    auth = platform.authorize(lti_login(client, platform), **claims)
    assert auth.redirect_uri == LAUNCH_URL
    return client.post("/lti/launch", data=auth.form)


def launch_handoff(response) -> dict:
    assert response.status_code == 200, response.get_data(as_text=True)
    page = response.get_data(as_text=True)
    match = re.search(r'<script type="application/json" id="gradquiz-launch">(.*?)</script>', page, re.S)
    return json.loads(html.unescape(match.group(1)))


def passback_runner(app) -> OutboundRunner:
    settings = dataclasses.replace(app.config["SETTINGS"], outbound_retry_seconds=0.01)
    return OutboundRunner(settings, kinds=[ScorePassbacks(settings)])


def context_claim(context_id: str) -> dict:
    """The launch's context claim for another course of the same platform."""
    return {c.CONTEXT: {"id": context_id, "label": context_id.upper(), "title": f"Course {context_id}"}}


def rejection(response) -> str:
    assert response.status_code == 401, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    assert response.json["type"] == "/problems/lti-launch-rejected"
    assert "token" not in response.get_data(as_text=True).lower().replace("id_token", "")
    return response.json["detail"]


def iso_millis(at) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds")


def submitted_hours_ago(app, attempt_id: str, hours: float) -> tuple[str, str]:
    """Move an attempt, its events and passbacks `hours` back (the learner submitted then, the
    passback waited since); (submitted_at, event time) as the LMS should read them."""
    shift = timedelta(hours=hours)
    with app.app_context():
        session = db_session()
        attempt = session.get(Attempt, uuid.UUID(attempt_id))
        attempt.created_at -= shift
        attempt.graded_at -= shift
        events = session.scalars(select(AttemptEvent).where(AttemptEvent.attempt_id == attempt.id)).all()
        for event in events:
            event.created_at -= shift
        session.commit()
        return iso_millis(attempt.created_at), iso_millis(max(event.created_at for event in events))


def make_passbacks_due(app) -> None:
    with app.app_context():
        db_session().execute(ScorePassback.__table__.update().where(ScorePassback.status == "pending")
                             .values(next_attempt_at=utcnow()))
        db_session().commit()


def delivered_after_one_failure(app, platform: TestPlatform) -> None:
    """The LMS refuses the first score sent (a 500); the retry, made due at once, is delivered."""
    platform.fail_next_scores = 1
    runner = passback_runner(app)
    runner.run_once()
    assert platform.scores == []
    make_passbacks_due(app)
    runner.run_once()


def expected_score(learner: str, given: float, timestamp: str, submitted: str, new_submission: bool, **extra) -> dict:
    return {"userId": learner, "scoreGiven": given, "scoreMaximum": 100, "activityProgress": "Submitted",
            "gradingProgress": "FullyGraded", "timestamp": timestamp, "submission": {"submittedAt": submitted},
            "https://canvas.instructure.com/lti/submission": {"new_submission": new_submission,
                                                              "submitted_at": submitted}, **extra}


def registration_link(client, admin_key: str, label: str = "Test LMS's admin", **body) -> dict:
    response = client.post("/api/v1/admin/lti/registration-links", headers=bearer(admin_key),
                           json={"label": label, **body})
    assert response.status_code == 201, response.json
    return response.json


def open_registration(client, platform: TestPlatform, link_url: str, headers: dict | None = None):
    """What the LMS does with the pasted URL: opens it with its parameters added, in its dialog."""
    return client.get(platform.registration_url(link_url), headers=PAGE if headers is None else headers)
