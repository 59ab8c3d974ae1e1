"""The assignment's window as the LMS gives it: asked for with custom parameters, read at launch.

The tool asks the platform for the dates with LTI 1.3 substitution variables in custom parameters
(LTI Core 1.3, "Custom properties and variable substitution"; Deep Linking 2.0 points tools to
them for the `available` and `submission` windows' current values): the Deep Linking content
item declares them, and an LMS admin can set them on the registration for links made by hand.
The platform replaces a variable it supports and has a value for; one it does not support, or
has no value for, comes back as written (Canvas: "$ResourceLink.submission.endDateTime" when the
assignment has no due date) or empty.

At each resource link launch the link keeps what the platform sent (service/rules.py reads it:
the LMS's dates win over staff's):

* a date sent (ISO 8601 with a time zone) is stored, in UTC;
* a date not sent (the key missing from the custom claim, its value empty or still the variable)
  is cleared: the instructor removed it;
* a value that is no ISO 8601 date and time with a zone is ignored (logged at info) and the stored
  date kept; the launch goes on;
* a launch without the custom claim changes nothing: the platform said nothing about the link.

Canvas expands these variables for the launching user: a student gets their own due date
(section and student overrides applied), an instructor the latest of all (Canvas's variable
documentation). So on Canvas an instructor's launch sets the link's window (the latest due date:
no learner is held to another's earlier one), and a learner's launch sets that learner's own
window (`LtiLearnerDates`, by the same rules), which the rules put over the link's: a section due
later, or one learner's extension in Canvas, holds for them alone. Other platforms send the link's
own dates (the spec's `ResourceLink.*.user.*` variables are the per-user ones), so every launch
sets the link's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from ..models import LtiLearnerDates, LtiResourceLink
from ..models.base import utcnow
from . import claims as c
from .launch import Launch

log = logging.getLogger(__name__)

AVAILABLE_FROM, DUE_AT = "gradquiz_available_from", "gradquiz_due_at"
# Canvas's own variables for the same dates, for a registration that asks with them instead (or too).
CANVAS_AVAILABLE_FROM, CANVAS_DUE_AT = "gradquiz_canvas_unlock_at", "gradquiz_canvas_due_at"
# What the Deep Linking content item asks for (the spec's variables), and what an admin may paste.
CUSTOM_VARIABLES = {AVAILABLE_FROM: "$ResourceLink.available.startDateTime",
                    DUE_AT: "$ResourceLink.submission.endDateTime"}
CANVAS_VARIABLES = {CANVAS_AVAILABLE_FROM: "$Canvas.assignment.unlockAt.iso8601",
                    CANVAS_DUE_AT: "$Canvas.assignment.dueAt.iso8601"}
# Each column of the link, and the custom keys that may carry it, the first usable one winning.
SOURCES = {"lms_available_from": (AVAILABLE_FROM, CANVAS_AVAILABLE_FROM),
           "lms_due_at": (DUE_AT, CANVAS_DUE_AT)}
CANVAS = "canvas"  # tool_platform.product_family_code


@dataclass(frozen=True)
class _Keep:
    """A value was sent but is no date: keep what the link has."""


KEEP = _Keep()


def parse_date(value: Any) -> datetime | None:
    """An ISO 8601 date and time with a time zone, in UTC; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        return None
    return parsed.astimezone(UTC)


def not_sent(value: Any) -> bool:
    """The platform had no value: nothing, empty, or the variable as the tool wrote it."""
    return value is None or (isinstance(value, str) and (not value.strip() or value.strip().startswith("$")))


def sends_user_dates(launch: Launch) -> bool:
    """Whether this launch's dates are the launching learner's own rather than the link's (Canvas)."""
    platform = launch.claims.get(c.TOOL_PLATFORM)
    family = platform.get("product_family_code") if isinstance(platform, dict) else None
    return isinstance(family, str) and family.lower() == CANVAS and not launch.is_instructor


def read_date(launch: Launch, column: str) -> datetime | None | _Keep:
    """The date for `column` this launch gives: a datetime, None (not sent) or KEEP (unreadable)."""
    custom = launch.custom
    unreadable = False
    for key in SOURCES[column]:
        value = custom.get(key)
        if not_sent(value):
            continue
        parsed = parse_date(value)
        if parsed is not None:
            return parsed
        unreadable = True
        log.info("LTI launch: platform %s, resource link %r: custom %s=%.60r is no ISO 8601 date and time "
                 "with a time zone; ignored", launch.platform.id, _link_id(launch), key, value)
    return KEEP if unreadable else None


def record_dates(session: Session, link: LtiResourceLink, launch: Launch) -> None:
    """Bring the link's LMS dates, or the launching learner's own (Canvas), up to date with a
    resource link launch (see the module's doc)."""
    if not isinstance(launch.claims.get(c.CUSTOM), dict):
        return
    target: LtiResourceLink | LtiLearnerDates = link
    if sends_user_dates(launch):
        learner = launch.claims["sub"]
        if link.id is None:  # a link's first launch
            session.flush()
        own = session.get(LtiLearnerDates, (link.id, learner))
        target = own if own is not None else LtiLearnerDates(link_id=link.id, learner=learner)
        session.add(target)
    for column in SOURCES:
        date = read_date(launch, column)
        attribute = column if target is link else column.removeprefix("lms_")
        if not isinstance(date, _Keep) and getattr(target, attribute) != date:
            setattr(target, attribute, date)
            if isinstance(target, LtiLearnerDates):
                target.updated_at = utcnow()


def _link_id(launch: Launch) -> Any:
    link = launch.claims.get(c.RESOURCE_LINK)
    return link.get("id") if isinstance(link, dict) else None
