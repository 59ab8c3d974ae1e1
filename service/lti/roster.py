"""Course rosters from the LTI Names and Role Provisioning Service (NRPS 2.0): who is in a course,
by name, so that the dashboard and the exports show people instead of opaque LTI user ids.

Where it comes from:

* A launch whose platform grants NRPS carries the claim `NAMES_ROLE_SERVICE` with the context's
  `context_memberships_url`: the course keeps it (`note_launch`, called by links.course_of).
  Every launch also keeps the launching user's own name and e-mail from the id_token's `name`,
  `given_name`, `family_name` and `email` claims (those the platform sends), so names show even
  where the platform grants no NRPS.
* A sync reads the whole roster: GET the memberships URL with a bearer token for the scope
  contextmembership.readonly (service/lti/tokens.py), following the `Link: <...>; rel="next"`
  pages, and applies it (`apply_roster`): members are added or brought up to date; one missing
  from the complete roster, or Inactive or Deleted in it, is marked left (`status`, `left_at`),
  never deleted; one who comes back is active again. A failed fetch changes no member: it records
  the error on the course (`roster_error`, never a token) and is tried again later.

When: a course's `roster_sync_due_at` says when its next sync is due. The first launch that
brings the memberships URL makes it due at once, an instructor's launch and staff's
POST .../roster/sync make it due again (`queue_sync`: the launch never waits on the LMS), and each
sync makes the next one due ROSTER_SYNC_SECONDS later. `RosterSyncer`, a thread of
`flask worker` and `flask outbound` beside the outbound runner, claims due courses and syncs them;
claiming pushes the due time past a sync's longest run, so several syncers share the work and a
syncer that dies leaves the course due again.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy import CursorResult, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from .. import background
from ..config import Settings
from ..database import engine_for
from ..models import Course, CourseMember, LtiPlatform, MemberStatus
from ..models.base import utcnow
from ..outbound.http import HttpError, UnreadableJson, send
from . import claims as c
from .launch import Launch
from .tokens import TokenRefused, TokenRequest, token_request

log = logging.getLogger("gradquiz.roster")

# Members a page asks for (NRPS's `limit`; a platform may send fewer, or ignore it).
PAGE_LIMIT = 200
# A roster page's body may be this long (the outbound client's default cap is for small answers).
MAX_PAGE_BYTES = 8 * 1024 * 1024
# Pages one sync follows at most: a `next` link that never ends is an error, not a loop.
MAX_PAGES = 1000
# An instructor's launch queues no new sync within this long of the last one (a class of launches).
LAUNCH_SYNC_GAP = timedelta(minutes=1)
# A failed sync is tried again after this long (or ROSTER_SYNC_SECONDS, if shorter).
RETRY_AFTER_FAILURE = timedelta(minutes=15)
# How often a syncer looks for due courses (a queued sync starts within this long).
POLL_SECONDS = 2.0
# Courses a syncer claims at once; each is synced in turn.
CLAIM_BATCH = 10
# Longest a syncer may hold a course (its due time pushed this far ahead): a syncer that died
# leaves the course due again after it.
LEASE = timedelta(minutes=10)
# NRPS member statuses that mean "in the course" (absent: Active).
ACTIVE_STATUSES = ("Active",)
LINK_PART = re.compile(r'<([^>]*)>((?:\s*;\s*[^;,]+)*)')

NAME_LENGTH, EMAIL_LENGTH, LEARNER_LENGTH = 255, 320, 255


class RosterFetchFailed(Exception):
    """The roster could not be read in full; the message says why (and holds no token)."""


@dataclass(frozen=True)
class Member:
    """One member as the platform describes them; None where it says nothing."""

    learner: str
    name: str | None
    given_name: str | None
    family_name: str | None
    email: str | None
    roles: tuple[str, ...]
    active: bool


def _text(value: Any, length: int) -> str | None:
    """A string claim or field, trimmed and cut to its column; None when absent or not text."""
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:length]


def _shown_name(name: str | None, given_name: str | None, family_name: str | None) -> str | None:
    """The name to show: the full name, else given and family names together."""
    return name or " ".join(part for part in (given_name, family_name) if part) or None


def member_of(raw: Any) -> Member | None:
    """A roster entry as a Member; None for one without a usable user_id (nothing joins on it)."""
    if not isinstance(raw, dict):
        return None
    learner = raw.get("user_id")
    if not isinstance(learner, str) or not learner or len(learner) > LEARNER_LENGTH:
        return None
    given, family = _text(raw.get("given_name"), NAME_LENGTH), _text(raw.get("family_name"), NAME_LENGTH)
    roles = raw.get("roles")
    return Member(learner=learner, name=_shown_name(_text(raw.get("name"), NAME_LENGTH), given, family),
                  given_name=given, family_name=family, email=_text(raw.get("email"), EMAIL_LENGTH),
                  roles=tuple(r for r in roles if isinstance(r, str)) if isinstance(roles, list) else (),
                  active=raw.get("status", "Active") in ACTIVE_STATUSES)


# ------------------------------------------------------------------------------------------ fetching

def next_page(link_header: str | None) -> str | None:
    """The URL of `rel="next"` in a Link header (RFC 8288), or None."""
    for url, params in LINK_PART.findall(link_header or ""):
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "rel" and "next" in value.strip().strip('"').lower().split():
                return url.strip()
    return None


def first_page(memberships_url: str) -> str:
    """The memberships URL asking for pages of PAGE_LIMIT members (unless it names a limit)."""
    parts = urlsplit(memberships_url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(name == "limit" for name, _ in query):
        return memberships_url
    return urlunsplit(parts._replace(query=urlencode([*query, ("limit", str(PAGE_LIMIT))])))


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def fetch_roster(memberships_url: str, tokens: TokenRequest) -> list[Member]:
    """Every member of the context, page after page; no database session is open meanwhile.
    Raises RosterFetchFailed unless every page was read."""
    members: dict[str, Member] = {}
    url: str | None = first_page(memberships_url)
    try:
        token = tokens.token()
        for number in range(1, MAX_PAGES + 1):
            assert url is not None
            # The token goes to the platform that granted it, never elsewhere: a next page on
            # another origin is refused, not followed.
            if _origin(url) != _origin(memberships_url):
                raise RosterFetchFailed("a next page is on another origin than the memberships URL")
            entries, url = _page(url, token, tokens, number)
            for raw in entries:
                member = member_of(raw)
                if member is not None:
                    members[member.learner] = member
            if url is None:
                return list(members.values())
    except (TokenRefused, HttpError) as exc:
        raise RosterFetchFailed(str(exc)) from None
    raise RosterFetchFailed(f"the roster has more than {MAX_PAGES} pages")


def _page(url: str, token: str, tokens: TokenRequest, number: int) -> tuple[list[Any], str | None]:
    """One page's member entries and the next page's URL (None: the last page)."""
    response = send("GET", url, tokens.policy, max_bytes=MAX_PAGE_BYTES,
                    headers={"Authorization": f"Bearer {token}", "Accept": c.MEMBERSHIPS_MEDIA_TYPE})
    if response.status == 401:
        tokens.forget()  # revoked or expired early: the next sync gets a new one
    if not response.ok:
        raise RosterFetchFailed(f"the platform answered {response.status} to page {number}: {response.body[:200]!r}")
    try:
        body = response.json_object()
    except UnreadableJson as exc:
        reason = {"too_large": f"is larger than {MAX_PAGE_BYTES} bytes", "not_json": "is not JSON",
                  "not_object": "is not a membership container (no members list)"}[exc.kind]
        raise RosterFetchFailed(f"page {number} {reason}") from None
    if not isinstance(body.get("members"), list):
        raise RosterFetchFailed(f"page {number} is not a membership container (no members list)")
    headers = {name.lower(): value for name, value in response.headers.items()}
    return body["members"], next_page(headers.get("link"))


# ------------------------------------------------------------------------------------------ storing

@dataclass(frozen=True)
class RosterChange:
    """What applying a roster did."""

    added: int = 0
    updated: int = 0
    left: int = 0
    returned: int = 0


def _set_details(row: CourseMember, member: Member) -> bool:
    """Bring the row's name, e-mail and roles to the member's; whether anything changed. What the
    roster leaves out (a platform may share names or e-mail in launches only) keeps what was known."""
    values = {"name": member.name, "given_name": member.given_name, "family_name": member.family_name,
              "email": member.email, "roles": list(member.roles) or None}
    changed = False
    for column, value in values.items():
        if value is not None and getattr(row, column) != value:
            setattr(row, column, value)
            changed = True
    return changed


def apply_roster(session: Session, course: Course, members: list[Member], now: datetime) -> RosterChange:
    """Make the course's member rows say what the complete roster `members` says (not committed)."""
    rows = {row.learner: row for row in session.scalars(select(CourseMember).where(CourseMember.course_id == course.id))}
    added = updated = left = returned = 0
    for member in members:
        row = rows.pop(member.learner, None)
        if row is None:
            row = CourseMember(course_id=course.id, learner=member.learner, first_seen_at=now, updated_at=now, roles=[],
                               status=MemberStatus.ACTIVE if member.active else MemberStatus.LEFT,
                               left_at=None if member.active else now)
            _set_details(row, member)
            session.add(row)
            added += 1
            continue
        changed = _set_details(row, member)
        if member.active and row.status == MemberStatus.LEFT:
            row.status, row.left_at, changed = MemberStatus.ACTIVE, None, True
            returned += 1
        elif not member.active and row.status == MemberStatus.ACTIVE:
            row.status, row.left_at, changed = MemberStatus.LEFT, now, True
            left += 1
        if changed:
            row.updated_at = now
            updated += 1
    # Not in the complete roster any more: they left the course (their attempts stay theirs).
    for row in rows.values():
        if row.status == MemberStatus.ACTIVE:
            row.status, row.left_at, row.updated_at = MemberStatus.LEFT, now, now
            left += 1
    course.roster_synced_at, course.roster_error, course.roster_failed_at = now, None, None
    return RosterChange(added, updated, left, returned)


def queue_sync(course: Course, now: datetime) -> None:
    """Make the course's roster sync due now (no-op without NRPS); the syncer takes it soon."""
    if course.memberships_url is not None and (course.roster_sync_due_at is None or course.roster_sync_due_at > now):
        course.roster_sync_due_at = now


def note_launch(session: Session, course: Course, launch: Launch) -> None:
    """What a launch tells of the course's roster: the memberships URL when the platform grants
    NRPS (its first arrival makes a sync due; an instructor's launch queues one), and the
    launching user's own name, e-mail and roles as a member row."""
    now = utcnow()
    service = launch.claims.get(c.NAMES_ROLE_SERVICE)
    url = service.get("context_memberships_url") if isinstance(service, dict) else None
    if isinstance(url, str) and url.startswith(("https://", "http://")) and len(url) <= 2048 \
            and url != course.memberships_url:
        course.memberships_url = url
        queue_sync(course, now)
    elif launch.is_instructor and (course.roster_synced_at is None or course.roster_synced_at < now - LAUNCH_SYNC_GAP):
        queue_sync(course, now)
    _record_launching_member(session, course, launch, now)


def _record_launching_member(session: Session, course: Course, launch: Launch, now: datetime) -> None:
    claims = launch.claims
    learner = claims.get("sub")
    if not isinstance(learner, str) or not learner or len(learner) > LEARNER_LENGTH:
        return
    if course.id is None:
        session.flush()  # a course made by this launch: its id
    row = session.scalar(select(CourseMember).where(CourseMember.course_id == course.id,
                                                    CourseMember.learner == learner))
    given, family = _text(claims.get("given_name"), NAME_LENGTH), _text(claims.get("family_name"), NAME_LENGTH)
    name = _shown_name(_text(claims.get("name"), NAME_LENGTH), given, family)
    roles = [r for r in claims.get(c.ROLES) or [] if isinstance(r, str)]
    if row is None:
        try:
            with session.begin_nested():  # the user's launch in another tab, or a sync, may add them first
                row = CourseMember(course_id=course.id, learner=learner, first_seen_at=now, roles=roles,
                                   status=MemberStatus.ACTIVE, updated_at=now)
                session.add(row)
        except IntegrityError:
            row = session.scalar(select(CourseMember).where(CourseMember.course_id == course.id,
                                                            CourseMember.learner == learner))
            if row is None:
                return
    # A launch names only what its id_token carries (a platform may withhold any of them): what it
    # leaves out keeps what the roster said. Launching means being in the course.
    for column, value in (("name", name), ("given_name", given), ("family_name", family),
                          ("email", _text(claims.get("email"), EMAIL_LENGTH))):
        if value is not None:
            setattr(row, column, value)
    if roles:
        row.roles = roles
    row.status, row.left_at, row.updated_at = MemberStatus.ACTIVE, None, now


# ------------------------------------------------------------------------------------------ syncing

@dataclass(frozen=True)
class SyncOutcome:
    course_id: int
    synced: bool
    change: RosterChange | None = None
    error: str | None = None


class RosterSyncer:
    """Syncs the rosters that are due, until stopped: a thread of `flask worker` and
    `flask outbound` (service/deliveries.py starts it beside the outbound runner)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.interval = timedelta(seconds=settings.roster_sync_seconds)
        self.sessions = sessionmaker(bind=engine_for(settings.sqlalchemy_url), expire_on_commit=False)

    def claim_due(self, now: datetime) -> list[tuple[int, datetime]]:
        """Claim up to CLAIM_BATCH due courses (their due time pushed to the lease's end), committed;
        (course id, lease end) of each claimed."""
        lease_end = now + LEASE
        claimed = []
        with self.sessions() as session:
            ids = list(session.scalars(
                select(Course.id).where(Course.roster_sync_due_at <= now, Course.memberships_url.is_not(None))
                .order_by(Course.roster_sync_due_at).limit(CLAIM_BATCH)))
            for course_id in ids:
                # Taken only if still due: another syncer may have claimed it meanwhile.
                result = cast(CursorResult[Any], session.execute(
                    update(Course).where(Course.id == course_id, Course.roster_sync_due_at <= now)
                    .values(roster_sync_due_at=lease_end)))
                if result.rowcount == 1:
                    claimed.append((course_id, lease_end))
            session.commit()
        return claimed

    def run_once(self) -> list[SyncOutcome]:
        """Sync every course due now; what became of each."""
        outcomes = []
        while claimed := self.claim_due(utcnow()):
            outcomes += [self.sync(course_id, lease_end) for course_id, lease_end in claimed]
        return outcomes

    def sync(self, course_id: int, lease_end: datetime) -> SyncOutcome:
        """Fetch and apply one claimed course's roster (the fetch with no session open)."""
        with self.sessions() as session:
            course = session.get(Course, course_id)
            platform = session.get(LtiPlatform, course.platform_id) if course and course.platform_id else None
            if course is None or course.memberships_url is None:
                return SyncOutcome(course_id, False, error="no memberships URL")
            url = course.memberships_url
            tokens: TokenRequest | None = None
            if platform is not None and platform.disabled_at is None:
                tokens = token_request(session, self.settings, platform, c.SCOPE_MEMBERSHIPS)
            session.commit()  # signing may have made the tool's first key; no transaction stays open
        try:
            if tokens is None:
                raise RosterFetchFailed("the platform's registration is disabled")
            members = fetch_roster(url, tokens)
        except RosterFetchFailed as exc:
            return self._failed(course_id, lease_end, str(exc))
        except Exception as exc:  # a bug or bad data must not stop the other courses
            log.exception("roster fetch of course %s failed", course_id)
            return self._failed(course_id, lease_end, f"could not read the roster: {type(exc).__name__}")
        with self.sessions() as session:
            course = session.get(Course, course_id)
            if course is None:
                return SyncOutcome(course_id, False, error="the course is gone")
            now = utcnow()
            change = apply_roster(session, course, members, now)
            self._next_due(session, course, lease_end, now + self.interval)
            try:
                session.commit()
            except IntegrityError:  # a launch (or another sync) added one of these members first
                session.rollback()
                return self._failed(course_id, lease_end, "a member was added meanwhile (a launch or another sync): "
                                                          "the roster is read again later")
        log.info("roster of course %s synced: %d members, %d added, %d updated, %d left, %d back", course_id,
                 len(members), change.added, change.updated, change.left, change.returned)
        return SyncOutcome(course_id, True, change=change)

    def _next_due(self, session: Session, course: Course, lease_end: datetime, due: datetime) -> None:
        """The next sync's due time, unless the course was queued or claimed again meanwhile (its due
        time is no longer this claim's lease end): that request stands."""
        if course.roster_sync_due_at == lease_end:
            course.roster_sync_due_at = due

    def _failed(self, course_id: int, lease_end: datetime, error: str) -> SyncOutcome:
        """Record why the sync failed; the roster stays as it was."""
        now = utcnow()
        with self.sessions() as session:
            course = session.get(Course, course_id)
            if course is not None:
                course.roster_error, course.roster_failed_at = error[:500], now
                self._next_due(session, course, lease_end, now + min(RETRY_AFTER_FAILURE, self.interval))
                session.commit()
        log.warning("roster of course %s not synced: %s", course_id, error)
        return SyncOutcome(course_id, False, error=error)

    def start_thread(self, stop: threading.Event) -> threading.Thread:
        return background.start_thread("roster-syncer", self.run_once, stop, POLL_SECONDS)
