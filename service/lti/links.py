"""Resource links: which exercise a placement in a course opens, and where its scores go."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..models import Course, Exercise, LtiResourceLink
from ..models.base import utcnow
from ..services.exercise_access import of_course
from . import claims as c
from .assignments import BadAssignment, record_assignment, spec_from_custom
from .dates import record_dates
from .launch import Launch
from .roster import note_launch

log = logging.getLogger("gradquiz.lti")


class LinkWithoutExercise(Exception):
    pass


def _named_exercise(launch: Launch) -> str | None:
    """The exercise a launch names: the custom parameter `exercise` (set by Deep Linking, or by
    hand as exercise=<slug>), else ?exercise=<slug> on the target link URI."""
    slug = launch.custom.get("exercise")
    if slug:
        return str(slug)
    query = parse_qs(urlsplit(launch.claims.get(c.TARGET_LINK_URI, "")).query)
    return query.get("exercise", [None])[0]


def record_link(session: Session, launch: Launch) -> LtiResourceLink:
    """The launch's resource link, made or brought up to date (exercise, AGS endpoints, the LMS's
    dates: service/lti/dates.py)."""
    claims = launch.claims
    link_id = claims[c.RESOURCE_LINK]["id"]
    context_claim = claims.get(c.CONTEXT)
    context: dict[str, Any] = context_claim if isinstance(context_claim, dict) else {}
    course = course_of(session, launch, context, link_id)
    link = _course_link(session, launch, link_id, course)
    try:  # an assignment of several exercises (service/lti/assignments.py): its first is the link's exercise
        assignment = spec_from_custom(launch.custom)
    except BadAssignment as exc:
        raise LinkWithoutExercise(f"This link's assignment is not valid: {exc}") from None
    assigned = _published(session, assignment.slugs, course) if assignment is not None else {}
    slug = assignment.slugs[0] if assignment is not None else _named_exercise(launch)
    exercise = None
    if slug is not None:
        # The catalog's, or this course's own (services/exercise_access.py): a link to another
        # course's exercise (a course copy, a forged link) opens nothing, as an unknown slug.
        exercise = session.scalar(select(Exercise).where(Exercise.slug == slug, Exercise.published.is_(True),
                                                         of_course(course.id).where()))
        if exercise is None:
            raise LinkWithoutExercise(f"This link opens exercise {slug!r}, which is not published.")
    elif link is not None:
        exercise = link.exercise
    if exercise is None:
        raise LinkWithoutExercise("This link does not name an exercise: add it to the course with the tool's "
                                  "exercise picker (Deep Linking), or set the custom parameter exercise=<slug>.")
    now = utcnow()
    if link is None:
        link = _new_link(session, launch, link_id, course, exercise, now)
        elsewhere = session.scalars(select(LtiResourceLink.course_id).where(
            LtiResourceLink.platform_id == launch.platform.id, LtiResourceLink.resource_link_id == link_id,
            LtiResourceLink.id != link.id).limit(1)).first()
        if elsewhere is not None:
            log.warning("resource link id of course %s launched in course %s (platform %s): a link of its own made, "
                        "the first left as it was", elsewhere, course.id, launch.platform.id)
    ags: dict[str, Any] = claims.get(c.AGS_ENDPOINT) or {}
    link.exercise, link.deployment_id, link.updated_at = exercise, launch.deployment_id, now
    link.context_id = context.get("id")
    link.course = course  # a link's own, or one made before courses, adopted once
    link.lineitem_url, link.lineitems_url = ags.get("lineitem"), ags.get("lineitems")
    link.ags_scopes = list(ags.get("scope") or [])
    record_dates(session, link, launch)
    link.title = str(claims[c.RESOURCE_LINK].get("title") or "")[:255] or None
    record_assignment(session, link, assignment, assigned)
    session.flush()
    return link


def _course_link(session: Session, launch: Launch, resource_link_id: str, course: Course) -> LtiResourceLink | None:
    """The link `resource_link_id` of the platform in `course`, or one made before links had a
    course. Never another course's: a link belongs to the course it was first launched in, and a
    launch of its id from another course (an LMS's course copy keeps the ids; or a forged launch)
    is another assignment, with its own rules, extensions, attempts and line item."""
    return session.scalars(
        select(LtiResourceLink)
        .where(LtiResourceLink.platform_id == launch.platform.id, LtiResourceLink.resource_link_id == resource_link_id,
               or_(LtiResourceLink.course_id == course.id, LtiResourceLink.course_id.is_(None)))
        .order_by(LtiResourceLink.course_id.is_(None))  # the course's own first
        .limit(1)).first()


def _new_link(session: Session, launch: Launch, resource_link_id: str, course: Course, exercise: Exercise,
              now: Any) -> LtiResourceLink:
    """The link of a first launch in its course. A class opening a new link at once makes one: the
    insert is in a savepoint and its unique key (platform, course, link id) decides; the launches that
    lose find the winner's."""
    try:
        with session.begin_nested():
            link = LtiResourceLink(platform_id=launch.platform.id, resource_link_id=resource_link_id, course=course,
                                   exercise=exercise, deployment_id=launch.deployment_id, created_at=now,
                                   updated_at=now)
            session.add(link)
        return link
    except IntegrityError:
        return session.scalars(select(LtiResourceLink).where(
            LtiResourceLink.platform_id == launch.platform.id, LtiResourceLink.resource_link_id == resource_link_id,
            LtiResourceLink.course_id == course.id).execution_options(populate_existing=True)).one()


def _published(session: Session, slugs: tuple[str, ...], course: Course) -> dict[str, Exercise]:
    """The assignment's exercises by slug; every one must be published, the catalog's or `course`'s own."""
    found = {e.slug: e for e in session.scalars(select(Exercise).where(Exercise.slug.in_(slugs),
                                                                      Exercise.published.is_(True),
                                                                      of_course(course.id).where()))}
    missing = [slug for slug in slugs if slug not in found]
    if missing:
        raise LinkWithoutExercise(f"This link opens exercise {missing[0]!r}, which is not published.")
    return found


def _external_id(context: dict[str, Any], resource_link_id: str | None) -> str:
    return str(context.get("id") or f"resource-link:{resource_link_id}")[:255]


def known_course(session: Session, launch: Launch) -> Course | None:
    """The course of a launch's context if a launch made it before (a Deep Linking request, which
    makes no course: its picker offers the course's own exercises when there is one)."""
    context = launch.claims.get(c.CONTEXT)
    if not isinstance(context, dict) or not context.get("id"):
        return None
    return session.scalar(select(Course).where(Course.client_id == launch.platform.api_client_id,
                                               Course.external_id == _external_id(context, None)))


def course_of(session: Session, launch: Launch, context: dict[str, Any], resource_link_id: str | None) -> Course:
    """The course of a launch's context, made at its first launch and kept up to date (title,
    label, and its roster: service/lti/roster.py). A launch without a context (allowed by LTI) is a
    course of its own per link."""
    external_id = _external_id(context, resource_link_id)
    client_id = launch.platform.api_client_id
    named = select(Course).where(Course.client_id == client_id, Course.external_id == external_id)
    course = session.scalar(named)
    title = str(context.get("title") or context.get("label") or external_id)[:255]
    label = str(context["label"])[:255] if context.get("label") else None
    now = utcnow()
    if course is None:
        # A class opening a new course's first link at once: one launch makes the course, the others
        # find it (the insert in a savepoint, its unique key deciding).
        try:
            with session.begin_nested():
                course = Course(client_id=client_id, platform_id=launch.platform.id, external_id=external_id,
                                title=title, label=label, created_at=now, updated_at=now)
                session.add(course)
        except IntegrityError:
            course = session.scalars(named.execution_options(populate_existing=True)).one()
    if (course.title, course.label) != (title, label):
        course.title, course.label, course.updated_at = title, label, now
    note_launch(session, course, launch)  # its roster: the NRPS URL, the launching user's name
    return course
