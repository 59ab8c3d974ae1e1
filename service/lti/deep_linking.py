"""Deep Linking: the instructor picks exercises; they go back to the LMS as resource links, one
per exercise, or one link for an assignment of several (service/lti/assignments.py).

The request's settings travel to the picker and back in a signed, short-lived token, so the
tool keeps no session; the response is a JWT signed with the tool's key, posted by the
browser to the platform's deep_link_return_url. The token works once: its nonce is spent, as a
launch's is (lti_nonces, with a "picker:" prefix), by the post that answers the platform.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy.orm import Session

from ..config import Settings
from ..models import Exercise, LtiPlatform
from . import claims as c, keys
from .assignments import AssignmentSpec
from .dates import CUSTOM_VARIABLES
from .launch import Launch, LaunchRejected, spend_nonce

PICKER_SECONDS = 1800
# Line items are out of 100 points: the score sent back is the exercise's score (0 to 1) x 100.
SCORE_MAXIMUM = 100


def _serializer(secret_key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt="gradquiz-lti-deep-linking")


def picker_token(secret_key: str, launch: Launch, course_id: int | None = None) -> str:
    """The picker's settings, signed: `course_id` the course the picker is shown in (its own
    exercises are offered beside the catalog's, and may be picked there alone)."""
    settings = launch.claims[c.DEEP_LINKING_SETTINGS]
    return _serializer(secret_key).dumps({
        "course": course_id,
        "platform": launch.platform.id, "deployment_id": launch.deployment_id,
        "return_url": settings["deep_link_return_url"], "data": settings.get("data"),
        "accept_multiple": settings.get("accept_multiple", True) is not False,
        "nonce": secrets.token_urlsafe(16),
    })


def read_picker_token(secret_key: str, token: str) -> dict[str, Any]:
    """The picker's settings, with `expires_at`: when the token stops working."""
    try:
        picked, issued = _serializer(secret_key).loads(token, max_age=PICKER_SECONDS, return_timestamp=True)
    except BadData:
        picked = None
    if not isinstance(picked, dict) or not isinstance(picked.get("nonce"), str):
        raise LaunchRejected("The exercise picker expired or was altered: open it again from the LMS.")
    return {**picked, "expires_at": issued.astimezone(UTC) + timedelta(seconds=PICKER_SECONDS)}


def use_picker(session: Session, picked: dict[str, Any]) -> None:
    """Spend the picker token's nonce: a second post of the same token (another tab, a replay from
    another browser within its 30 minutes) is refused, and writes nothing."""
    expires_at: datetime = picked["expires_at"]
    if not spend_nonce(session, picked["platform"], "picker:" + picked["nonce"], expires_at):
        raise LaunchRejected("This exercise picker was used already: open it again from the LMS to add more.")


def content_item(exercise: Exercise, launch_url: str) -> dict[str, Any]:
    """An ltiResourceLink for the exercise. Its custom parameters name the exercise and ask the
    platform for the assignment's window at every launch (service/lti/dates.py); the picker sets
    no dates, so the item carries no `available` or `submission` window of its own."""
    return {
        "type": "ltiResourceLink",
        "title": exercise.title,
        "url": launch_url,
        "custom": {"exercise": exercise.slug, **CUSTOM_VARIABLES},
        "lineItem": {"scoreMaximum": SCORE_MAXIMUM, "label": exercise.title, "resourceId": exercise.slug},
    }


def assignment_item(title: str, spec: AssignmentSpec, launch_url: str) -> dict[str, Any]:
    """One ltiResourceLink for an assignment of several exercises (service/lti/assignments.py): its
    custom parameters name the exercises in order, the scoring rule and the points, signed with the
    response so that only the instructor's picker sets them; its line item is out of the rule's
    maximum (100 for a mean, the points for a sum)."""
    return {
        "type": "ltiResourceLink",
        "title": title,
        "url": launch_url,
        "custom": {**spec.custom(), **CUSTOM_VARIABLES},
        "lineItem": {"scoreMaximum": spec.score_maximum, "label": title, "resourceId": "assignment:" + spec.slugs[0]},
    }


def response_jwt(session: Session, settings: Settings, platform: LtiPlatform, picked: dict[str, Any],
                 exercises: list[Exercise], launch_url: str, items: list[dict[str, Any]] | None = None) -> str:
    """The LtiDeepLinkingResponse for the exercises picked, one link each (none: the instructor
    cancelled), or for the content `items` given (an assignment's)."""
    claims: dict[str, Any] = {
        "iss": platform.client_id, "aud": platform.issuer, "nonce": secrets.token_urlsafe(16),
        c.MESSAGE_TYPE: c.DEEP_LINKING_RESPONSE, c.VERSION: c.LTI_VERSION, c.DEPLOYMENT_ID: picked["deployment_id"],
        c.CONTENT_ITEMS: items if items is not None else [content_item(exercise, launch_url) for exercise in exercises],
    }
    if picked.get("data") is not None:
        claims[c.DEEP_LINKING_DATA] = picked["data"]
    return keys.sign(session, settings, claims)
