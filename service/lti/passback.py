"""Assignment and Grade Services: a learner's score, sent to the line item of the link they
launched, by the outbound runner (off the request path, retried, kept across restarts).

The score sent is the learner's score at that link under the exercise's policy ("best", the
default, or "latest", set as `score_policy` in exercise.toml), computed when it is sent: a
retry after a newer grade sends the newer score. What the LMS reads beside the score (docs/lti.md,
"What a score carries"): `timestamp`, the time of the event that changed the score, never older
than one already sent for this link and learner (Canvas refuses an older one); when the learner
submitted, in AGS `submission.submittedAt` and Canvas's submission extension (`submitted_at`,
and `new_submission` true only for the first accepted send of an attempt's grade); progress
following the attempt; an override's comment for the learner (never its reason) as `comment`.
A passback whose event is older than one already delivered for the link and learner, with the
same score, is superseded: not sent. Access tokens come from the platform's token
endpoint (service/lti/tokens.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import scores
from ..config import Settings
from ..models import (
    GRADED_EVENT,
    OVERRIDDEN_EVENT,
    Attempt,
    AttemptStatus,
    DeliveryStatus,
    GradeOverride,
    LtiResourceLink,
    ScorePassback,
)
from ..outbound.http import HttpError, OutboundPolicy, send
from ..outbound.runner import Outcome, SendStep
from . import assignments, claims as c
from .deep_linking import SCORE_MAXIMUM
from .tokens import TokenRefused, token_request

CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"


def learner_score(session: Session, attempt: Attempt, link_id: int) -> float | None:
    """The score that counts for the attempt's learner at this link under the exercise's policy
    (service/scores.py: as the gradebook export and the statistics count it)."""
    policy = scores.policy_of(attempt.exercise.version.spec)
    return session.scalar(scores.score_query(policy, Attempt.client_id == attempt.client_id,
                                             Attempt.learner == attempt.learner, Attempt.lti_link_id == link_id))


@dataclass(frozen=True)
class LinkScore:
    """What the link's line item gets for a learner now: the score as a fraction of `maximum` (None:
    no graded attempt counts yet), and whether every exercise of the link has a counted score."""

    score: float | None
    maximum: float
    complete: bool


def link_score(session: Session, attempt: Attempt, link: LtiResourceLink) -> LinkScore:
    """The learner's score at the link, read when it is sent: a link of one exercise, its score
    (out of 100); an assignment's, its rule over each exercise's counted score, an exercise not
    tried counting 0 (service/lti/assignments.py)."""
    if link.scoring is None:
        score = learner_score(session, attempt, link.id)
        return LinkScore(score, SCORE_MAXIMUM, score is not None)
    parts = assignments.learner_parts(session, link, attempt.client_id, attempt.learner, link.id)
    return LinkScore(assignments.assignment_score(link.scoring, parts),
                     assignments.score_maximum(link.scoring, [part.points for part in parts]),
                     assignments.all_graded(parts))


def scores_url(lineitem_url: str) -> str:
    """The line item's /scores endpoint (the line item URL may carry a query string)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def _utc(at: datetime) -> datetime:
    """`at` in UTC (a naive time read back from SQLite is UTC)."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _iso(at: datetime) -> str:
    return _utc(at).isoformat(timespec="milliseconds")


def _progress(attempt: Attempt, score: float | None, complete: bool = True) -> tuple[str, str]:
    """(activityProgress, gradingProgress). The learner submitted (attempts are not limited, so
    the activity stays open: Submitted, not Completed). The score sent is fully graded when
    the learner has one that counts; else the attempt says why there is none: still waiting for
    its grade (Pending) or the grader failed on it (Failed). Passbacks are written at graded,
    regraded and overridden events only, so today the first case is the one sent; the others
    keep an LMS that reads them (Canvas ignores scoreGiven and clears its score) from showing a
    grade that is not there.

    An assignment of several exercises (`complete`: every one has a counted score) sends its score
    as FullyGraded as soon as one exercise has one, the others counting 0 (an LMS that reads
    Pending would hide a grade the learner has earned); its activity is InProgress until every
    exercise has a graded attempt, then Submitted."""
    if score is not None:
        return ("Submitted" if complete else "InProgress"), "FullyGraded"
    if attempt.status == AttemptStatus.ERROR.value:
        return "Submitted", "Failed"
    return "Submitted", "Pending"


def delivered_before(session: Session, row: ScorePassback) -> list[tuple[int, dict[str, Any]]]:
    """(event id, body sent) of the passbacks the LMS accepted for this link and learner, but
    this one."""
    attempt = row.attempt
    return [(event_id, sent) for event_id, sent in session.execute(
        select(ScorePassback.event_id, ScorePassback.sent_score).join(Attempt, Attempt.id == ScorePassback.attempt_id)
        .where(ScorePassback.link_id == row.link_id, ScorePassback.id != row.id,
               ScorePassback.status == DeliveryStatus.DELIVERED.value, Attempt.client_id == attempt.client_id,
               Attempt.learner == attempt.learner)) if sent and "timestamp" in sent]


def _override_comment(session: Session, row: ScorePassback) -> str | None:
    """What the override that made this passback's event told the learner (same attempt, same
    instant); None when the instructor wrote nothing for them (the reason is staff's only)."""
    return session.scalar(select(GradeOverride.learner_comment).where(
        GradeOverride.attempt_id == row.attempt_id, GradeOverride.created_at <= row.event.created_at)
        .order_by(GradeOverride.created_at.desc(), GradeOverride.id.desc()).limit(1))


def score_body(session: Session, row: ScorePassback, score: float | None, maximum: float = SCORE_MAXIMUM,
               complete: bool = True) -> dict[str, Any] | None:
    """The AGS score to send for this passback (`score`: a fraction of `maximum`), or None when it
    is superseded: a passback of a newer event for this link and learner was delivered with the
    same score."""
    attempt, event = row.attempt, row.event
    before = delivered_before(session, row)
    newer_sent = [sent for event_id, sent in before if event_id > row.event_id]
    given = None if score is None else round(score * maximum, 4)
    if any(sent.get("scoreGiven") == given for sent in newer_sent):
        return None
    # The time the score changed, never older than a timestamp the LMS already has for this
    # line item and learner (a late commit, or clocks of two processes apart): the latest wins.
    timestamp = max([_utc(event.created_at), *(datetime.fromisoformat(sent["timestamp"]) for _, sent in before)])
    activity, grading = _progress(attempt, score, complete)
    submitted_at = _iso(attempt.created_at)
    # A new LMS submission only for an attempt's grade the LMS has not accepted yet (a retry
    # after a refusal is still the first), and not once a newer event reached it.
    new_submission = event.type == GRADED_EVENT and row.delivered_at is None and not newer_sent
    body: dict[str, Any] = {"userId": attempt.learner, "scoreMaximum": maximum,
                            "activityProgress": activity, "gradingProgress": grading, "timestamp": _iso(timestamp),
                            "submission": {"submittedAt": submitted_at},
                            CANVAS_SUBMISSION: {"new_submission": new_submission, "submitted_at": submitted_at}}
    if given is not None:
        body["scoreGiven"] = given
    # Canvas adds a comment to the submission at each score carrying one: sent once.
    if event.type == OVERRIDDEN_EVENT and row.delivered_at is None and (comment := _override_comment(session, row)):
        body["comment"] = comment
    return body


class ScorePassbacks:
    """The outbound runner's kind for score passbacks."""

    model = ScorePassback

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def prepare(self, session: Session, row: ScorePassback) -> SendStep | Outcome:
        link, attempt = row.link, row.attempt
        platform = link.platform
        if platform.disabled_at is not None:
            return Outcome(False, error="the platform's registration is disabled", permanent=True)
        # A link made with Deep Linking comes with its line item; one added by hand may need
        # one found or made in the course's line item container.
        can_make_lineitem = bool(link.lineitems_url) and c.SCOPE_LINEITEM in link.ags_scopes
        if c.SCOPE_SCORE not in link.ags_scopes or not (link.lineitem_url or can_make_lineitem):
            return Outcome(False, permanent=True, error="the platform's launches grant no line item with the "
                                                        "score scope for this link")
        now = link_score(session, attempt, link)
        if now.score is None and attempt.status == AttemptStatus.GRADED.value:
            return Outcome(False, permanent=True, error="the learner has no graded attempt at this link")
        body = score_body(session, row, now.score, now.maximum, now.complete)
        if body is None:  # the LMS has this score already, with a newer timestamp
            return Outcome(True, error="superseded: a newer event's score, the same, was sent", values={"sent_score": None})
        new_lineitem = {"scoreMaximum": now.maximum, "label": link.title or link.exercise.title,
                        "resourceId": link.exercise.slug, "resourceLinkId": link.resource_link_id}
        lineitem_url, lineitems_url = link.lineitem_url, link.lineitems_url
        scope = c.SCOPE_SCORE if lineitem_url else f"{c.SCOPE_LINEITEM} {c.SCOPE_SCORE}"
        tokens = token_request(session, self.settings, platform, scope)
        policy = tokens.policy

        def post_score() -> Outcome:
            try:
                token = tokens.token()
                headers = {"Authorization": f"Bearer {token}"}
                if lineitem_url:
                    lineitem = lineitem_url
                else:
                    assert lineitems_url  # prepare() sends only for a link with one or the other
                    lineitem = _find_or_make_lineitem(lineitems_url, new_lineitem, headers, policy)
                response = send("POST", scores_url(lineitem), policy, body=json.dumps(body).encode(),
                                headers={**headers, "Content-Type": c.SCORE_MEDIA_TYPE})
            except TokenRefused as exc:
                return Outcome(False, status_code=exc.response.status, error=str(exc))
            except (HttpError, LineItemRefused) as exc:
                return Outcome(False, error=str(exc))
            if response.status == 401:
                tokens.forget()  # revoked or expired early: the next try gets a new one
            return Outcome(response.ok, status_code=response.status, values={"sent_score": body},
                           error=None if response.ok else f"the platform answered {response.status}: "
                                                          f"{response.body[:200]!r}")

        return post_score


class LineItemRefused(Exception):
    pass


def _find_or_make_lineitem(lineitems_url: str, new_lineitem: dict[str, Any], headers: dict[str, str],
                           policy: OutboundPolicy) -> str:
    """The line item of this resource link in the container, made if there is none."""
    parts = urlsplit(lineitems_url)
    query = "&".join(filter(None, [parts.query, urlencode({"resource_link_id": new_lineitem["resourceLinkId"]})]))
    found = send("GET", urlunsplit(parts._replace(query=query)), policy,
                 headers={**headers, "Accept": c.LINEITEMS_MEDIA_TYPE})
    if found.ok and (items := json.loads(found.body)):
        return items[0]["id"]
    made = send("POST", lineitems_url, policy, body=json.dumps(new_lineitem).encode(),
                headers={**headers, "Content-Type": c.LINEITEM_MEDIA_TYPE, "Accept": c.LINEITEM_MEDIA_TYPE})
    if not made.ok:
        raise LineItemRefused(f"the platform refused to make a line item ({made.status}): {made.body[:200]!r}")
    return json.loads(made.body)["id"]
