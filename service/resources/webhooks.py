"""Webhook endpoints of API clients, and their delivery logs."""

from __future__ import annotations

from typing import Any

from flask import current_app, url_for
from flask.views import MethodView
from sqlalchemy import func, select
from sqlalchemy.orm import joinedload

from ..auth import BEARER, current_client, require_client
from ..errors import VALIDATION_ERROR, problem_abort
from ..extensions import db_session
from ..models import WebhookDelivery, WebhookEndpoint
from ..outbound.http import HttpError, outbound_policy
from ..outbound.runner import resend
from ..outbound.webhooks import disable_endpoint, register_endpoint
from ..schemas.webhooks import (
    DeliveryQuerySchema,
    WebhookCreatedSchema,
    WebhookCreateSchema,
    WebhookDeliverySchema,
    WebhookEndpointSchema,
)
from .blueprint import Blueprint
from .docs import BIG_ROW_ID, BODY_PROBLEMS, ROW_ID, UNAUTHORIZED, problems
from .pagination import PAGINATION, Query, SelectPage

blp = Blueprint("webhooks", __name__, url_prefix="/api/v1/webhooks",
                description="Endpoints that receive signed attempt events (attempt.graded), and what was sent "
                            "to them. Needs an API key; a client sees only its own (an admin key sees all).")
NOT_FOUND = (404, "No webhook endpoint with this id is visible to the caller")
LEARNER_TOKEN = (403, "A learner token cannot manage webhooks")
# Each event fans out to every endpoint of its client: a cap keeps one client's fan-out bounded.
MAX_ACTIVE_ENDPOINTS = 10


def _visible_endpoint(endpoint_id: int) -> WebhookEndpoint:
    endpoint = db_session().get(WebhookEndpoint, endpoint_id)
    client = current_client()
    if endpoint is None or (endpoint.client_id != client.id and not client.is_admin):
        problem_abort(404, "No webhook endpoint with this id.")
    return endpoint


def _check_reachable(url: str) -> None:
    """The outbound policy's check now, so a URL it would refuse at every delivery is refused here."""
    try:
        outbound_policy(current_app.config["SETTINGS"]).check(url)
    except HttpError as exc:
        problem_abort(422, f"This URL cannot receive webhooks: {exc}.", title="Validation failed",
                      type=VALIDATION_ERROR, errors=[{"field": "json.url", "message": str(exc)}])


def _with_secret(endpoint: WebhookEndpoint, secret: str) -> dict[str, Any]:
    return {name: getattr(endpoint, name) for name in WebhookEndpointSchema().fields} | {"secret": secret}


@blp.route("")
class Webhooks(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @blp.arguments(WebhookCreateSchema)
    @blp.response(201, WebhookCreatedSchema, headers={"Location": {"schema": {"type": "string"}}})
    @problems(blp, UNAUTHORIZED, LEARNER_TOKEN, *BODY_PROBLEMS,
              (409, f"The client has {MAX_ACTIVE_ENDPOINTS} endpoints already: delete one first"),
              (422, "Not an http(s) URL, or (in production) not https on a public address"))
    def post(self, payload):
        """Register an endpoint. The response holds its signing secret: the only time it is shown.

        Every later `attempt.graded` event of the caller's attempts is POSTed to it, signed per
        Standard Webhooks."""
        _check_reachable(payload["url"])
        session = db_session()
        active = session.scalars(select(func.count()).select_from(WebhookEndpoint).where(
            WebhookEndpoint.client_id == current_client().id, WebhookEndpoint.disabled_at.is_(None))).one()
        if active >= MAX_ACTIVE_ENDPOINTS:
            problem_abort(409, f"This client has {active} webhook endpoints, the most it may have: delete one first.")
        settings = current_app.config["SETTINGS"]
        endpoint, secret = register_endpoint(session, current_client().id, payload["url"],
                                             payload["description"], settings.secret_key)
        session.commit()
        return _with_secret(endpoint, secret), {"Location": url_for("webhooks.WebhookDetail", endpoint_id=endpoint.id)}

    @blp.doc(security=BEARER)
    @require_client
    @blp.response(200, WebhookEndpointSchema(many=True))
    @blp.paginate(SelectPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, LEARNER_TOKEN)
    def get(self):
        """The caller's endpoints, deleted ones included, newest first (an admin: every client's)."""
        client = current_client()
        stmt = select(WebhookEndpoint)
        if not client.is_admin:
            stmt = stmt.where(WebhookEndpoint.client_id == client.id)
        return Query(db_session(), stmt.order_by(WebhookEndpoint.id.desc()))


@blp.route(f"/<{ROW_ID}:endpoint_id>")
class WebhookDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @blp.response(200, WebhookEndpointSchema)
    @problems(blp, UNAUTHORIZED, LEARNER_TOKEN, NOT_FOUND)
    def get(self, endpoint_id: int):
        """One endpoint (never its secret)."""
        return _visible_endpoint(endpoint_id)

    @blp.doc(security=BEARER)
    @require_client
    @blp.response(204)
    @problems(blp, UNAUTHORIZED, LEARNER_TOKEN, NOT_FOUND)
    def delete(self, endpoint_id: int):
        """Delete an endpoint: nothing more is sent to it, and deliveries still waiting fail. Its
        delivery log stays readable."""
        disable_endpoint(db_session(), _visible_endpoint(endpoint_id))
        db_session().commit()


@blp.route(f"/<{ROW_ID}:endpoint_id>/deliveries")
class WebhookDeliveryLog(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @blp.arguments(DeliveryQuerySchema, location="query")
    @blp.response(200, WebhookDeliverySchema(many=True))
    @blp.paginate(SelectPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, LEARNER_TOKEN, NOT_FOUND)
    def get(self, query, endpoint_id: int):
        """The endpoint's delivery log, newest first: each event, its tries and the last answer."""
        endpoint = _visible_endpoint(endpoint_id)
        stmt = select(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint.id)
        if "status" in query:
            stmt = stmt.where(WebhookDelivery.status == query["status"])
        stmt = stmt.options(joinedload(WebhookDelivery.event)).order_by(WebhookDelivery.id.desc())
        return Query(db_session(), stmt)


@blp.route(f"/<{ROW_ID}:endpoint_id>/deliveries/<{BIG_ROW_ID}:delivery_id>/resend")
class ResendDelivery(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @blp.response(202, WebhookDeliverySchema)
    @problems(blp, UNAUTHORIZED, LEARNER_TOKEN, (404, "No such endpoint, or no such delivery of it"),
              (409, "The endpoint was deleted"))
    def post(self, endpoint_id: int, delivery_id: int):
        """Send an event to the endpoint again, as soon as possible, with its tries counted afresh.

        It carries the same event id: a receiver that already has it can tell."""
        endpoint = _visible_endpoint(endpoint_id)
        session = db_session()
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.endpoint_id != endpoint.id:
            problem_abort(404, "This endpoint has no delivery with this id.")
        if endpoint.disabled_at is not None:
            problem_abort(409, "The endpoint was deleted: nothing is sent to it any more.")
        resend(session, delivery)
        session.commit()
        return delivery
