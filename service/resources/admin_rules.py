"""Staff: the assessment rules of a counting scope (one exercise of an LTI link, or a client's own use
of an exercise: services/rules_admin.py), and extensions for one learner (service/rules.py)."""

from __future__ import annotations

from flask.views import MethodView
from sqlalchemy import or_, select
from sqlalchemy.orm import selectinload

from ..auth import BEARER, require_staff, staff_actor
from ..errors import problem_abort
from ..extensions import db_session
from ..models import ApiClient, Exercise, LtiLinkExercise, LtiResourceLink
from ..rules import rules_json
from ..schemas.rules import (
    ExtensionSetSchema,
    LinksQuerySchema,
    LinkSummarySchema,
    RulesSchema,
    ScopeRulesSchema,
)
from ..services import catalog_admin, rules_admin
from ..services.standing import CountingScope
from .blueprint import Blueprint
from .course_scope import NO_COURSE, course_asked, request_audience
from .docs import BODY_PROBLEMS, ROW_ID, STAFF_ONLY, UNAUTHORIZED, problems
from .pagination import PAGINATION, Query, SelectPage

blp = Blueprint("admin_rules", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: assessment rules per exercise of an LTI resource "
                            "link (each exercise of a link of several has its own), or per client's own use of "
                            "an exercise, and extensions per learner.")
NO_SCOPE = (404, "No such LTI link, or no such exercise of it, or no such exercise or client")
SEVERAL_EXERCISES = (409, "The link has several exercises: name one (/links/{link_id}/exercises/{slug}/...)")


def _link(link_id: int, slug: str | None = None) -> tuple[CountingScope, Exercise]:
    """Exercise `slug` of the link (None: its one exercise)."""
    try:
        found = rules_admin.link_exercise_scope(db_session(), link_id, slug, course_asked(None))
    except rules_admin.SeveralExercises as several:
        problem_abort(409, f"LTI link {link_id} has {len(several.slugs)} exercises ({', '.join(several.slugs)}), "
                           f"each with rules of its own: use /api/v1/admin/links/{link_id}/exercises/{{slug}}/rules.")
    if found is None:
        problem_abort(404, "No LTI resource link with this id." if slug is None
                      else f"No LTI resource link with this id, or {slug!r} is not one of its exercises.")
    return found


def _client_exercise(slug: str, client_id: int) -> tuple[CountingScope, Exercise]:
    session = db_session()
    exercise = catalog_admin.find(session, slug, request_audience())
    if exercise is None:
        problem_abort(404, f"No exercise with slug {slug!r}.")
    if session.get(ApiClient, client_id) is None:
        problem_abort(404, "No client with this id.")
    return CountingScope(client_id, exercise.id, None), exercise


def _describe(counting_scope: CountingScope, exercise: Exercise):
    return rules_admin.describe(db_session(), counting_scope, exercise)


def _put(counting_scope: CountingScope, exercise: Exercise, rules: dict):
    session = db_session()
    rules_admin.set_rules(session, counting_scope, None, rules_json(rules), staff_actor())
    session.commit()
    return _describe(counting_scope, exercise)


def _delete(counting_scope: CountingScope) -> None:
    session = db_session()
    rules_admin.clear_rules(session, counting_scope, None)
    session.commit()


def _put_extension(counting_scope: CountingScope, exercise: Exercise, learner: str, payload: dict):
    session = db_session()
    rules_admin.set_rules(session, counting_scope, learner, rules_json(payload["rules"]), staff_actor(),
                          payload.get("note"))
    session.commit()
    return _describe(counting_scope, exercise)


def _delete_extension(counting_scope: CountingScope, learner: str) -> None:
    session = db_session()
    rules_admin.clear_rules(session, counting_scope, learner)
    session.commit()


RULES_PUT_DOC = ("Replace what staff set here (the keys given; the others come from the exercise's "
                 "defaults, and the LMS's dates win over these). Takes effect at the next attempt; attempts made "
                 "keep the penalties and the scoring policy they were made under.")


@blp.route("/links")
class Links(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(LinksQuerySchema, location="query")
    @blp.response(200, LinkSummarySchema(many=True))
    @blp.paginate(SelectPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_COURSE)
    def get(self, query):
        """The LTI resource links (assignments placed in LMS courses), most recently launched first."""
        stmt = select(LtiResourceLink).options(selectinload(LtiResourceLink.assignment_exercises))
        course_id = course_asked(query.get("course"))
        if course_id is not None:
            stmt = stmt.where(LtiResourceLink.course_id == course_id)
        if "exercise" in query:
            exercise_id = select(Exercise.id).where(Exercise.slug == query["exercise"],
                                                    request_audience().where()).scalar_subquery()
            stmt = stmt.where(or_(LtiResourceLink.exercise_id == exercise_id, LtiResourceLink.id.in_(
                select(LtiLinkExercise.link_id).where(LtiLinkExercise.exercise_id == exercise_id))))
        return Query(db_session(), stmt.order_by(LtiResourceLink.updated_at.desc(), LtiResourceLink.id.desc()))


@blp.route(f"/links/<{ROW_ID}:link_id>/rules")
class LinkRules(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE, SEVERAL_EXERCISES)
    def get(self, link_id: int):
        """The rules of a link of one exercise: each layer, what is in force, and the learners' extensions."""
        return _describe(*_link(link_id))

    @blp.doc(security=BEARER, description=RULES_PUT_DOC)
    @require_staff
    @blp.arguments(RulesSchema)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_SCOPE, SEVERAL_EXERCISES, (422, "A rule is not valid"))
    def put(self, payload, link_id: int):
        """Set the rules of a link of one exercise."""
        return _put(*_link(link_id), payload)

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE, SEVERAL_EXERCISES)
    def delete(self, link_id: int):
        """Remove what staff set for a link of one exercise: the exercise's defaults (and the LMS's dates) apply."""
        _delete(_link(link_id)[0])


@blp.route(f"/links/<{ROW_ID}:link_id>/extensions/<learner:learner>")
class LinkExtension(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(ExtensionSetSchema)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_SCOPE, SEVERAL_EXERCISES, (422, "A rule is not valid"))
    def put(self, payload, link_id: int, learner: str):
        """Give one learner an extension at a link of one exercise (a later due date, more attempts): it
        wins over every other layer."""
        return _put_extension(*_link(link_id), learner, payload)

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE, SEVERAL_EXERCISES)
    def delete(self, link_id: int, learner: str):
        """Remove a learner's extension (none there: nothing to do)."""
        _delete_extension(_link(link_id)[0], learner)


@blp.route(f"/links/<{ROW_ID}:link_id>/exercises/<slug:slug>/rules")
class LinkExerciseRules(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE)
    def get(self, link_id: int, slug: str):
        """The rules of one exercise of a link (of one exercise or several): each layer, what is in force,
        and the learners' extensions."""
        return _describe(*_link(link_id, slug))

    @blp.doc(security=BEARER, description=RULES_PUT_DOC)
    @require_staff
    @blp.arguments(RulesSchema)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_SCOPE, (422, "A rule is not valid"))
    def put(self, payload, link_id: int, slug: str):
        """Set the rules of one exercise of a link."""
        return _put(*_link(link_id, slug), payload)

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE)
    def delete(self, link_id: int, slug: str):
        """Remove what staff set for one exercise of a link: its defaults (and the LMS's dates) apply."""
        _delete(_link(link_id, slug)[0])


@blp.route(f"/links/<{ROW_ID}:link_id>/exercises/<slug:slug>/extensions/<learner:learner>")
class LinkExerciseExtension(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.arguments(ExtensionSetSchema)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_SCOPE, (422, "A rule is not valid"))
    def put(self, payload, link_id: int, slug: str, learner: str):
        """Give one learner an extension at one exercise of a link: it wins over every other layer."""
        return _put_extension(*_link(link_id, slug), learner, payload)

    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE)
    def delete(self, link_id: int, slug: str, learner: str):
        """Remove a learner's extension (none there: nothing to do)."""
        _delete_extension(_link(link_id, slug)[0], learner)


@blp.route(f"/exercises/<slug:slug>/clients/<{ROW_ID}:client_id>/rules")
class ClientRules(MethodView):
    @blp.doc(security=BEARER)
    @require_staff(every_course=True)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE)
    def get(self, slug: str, client_id: int):
        """The rules of a client's own use of an exercise (its learners' attempts through the REST API)."""
        return _describe(*_client_exercise(slug, client_id))

    @blp.doc(security=BEARER, description=RULES_PUT_DOC)
    @require_staff(every_course=True)
    @blp.arguments(RulesSchema)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_SCOPE, (422, "A rule is not valid"))
    def put(self, payload, slug: str, client_id: int):
        """Set the rules of a client's own use of an exercise."""
        return _put(*_client_exercise(slug, client_id), payload)

    @blp.doc(security=BEARER)
    @require_staff(every_course=True)
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE)
    def delete(self, slug: str, client_id: int):
        """Remove what staff set for a client's use of an exercise: the exercise's defaults apply."""
        _delete(_client_exercise(slug, client_id)[0])


@blp.route(f"/exercises/<slug:slug>/clients/<{ROW_ID}:client_id>/extensions/<learner:learner>")
class ClientExtension(MethodView):
    @blp.doc(security=BEARER)
    @require_staff(every_course=True)
    @blp.arguments(ExtensionSetSchema)
    @blp.response(200, ScopeRulesSchema)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, *BODY_PROBLEMS, NO_SCOPE, (422, "A rule is not valid"))
    def put(self, payload, slug: str, client_id: int, learner: str):
        """Give one of a client's learners an extension at an exercise."""
        return _put_extension(*_client_exercise(slug, client_id), learner, payload)

    @blp.doc(security=BEARER)
    @require_staff(every_course=True)
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, STAFF_ONLY, NO_SCOPE)
    def delete(self, slug: str, client_id: int, learner: str):
        """Remove a learner's extension (none there: nothing to do)."""
        _delete_extension(_client_exercise(slug, client_id)[0], learner)
