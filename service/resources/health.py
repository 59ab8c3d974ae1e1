from __future__ import annotations

from flask import current_app
from flask.views import MethodView
from marshmallow import Schema, fields

from ..errors import problem_response
from ..extensions import db_session
from ..migrate import current_revision, head_revision
from .blueprint import Blueprint
from .docs import problems

blp = Blueprint("health", __name__, description="Probes for load balancers and orchestrators.")


class HealthSchema(Schema):
    status = fields.String(required=True)
    database = fields.String()
    revision = fields.String(allow_none=True)


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200, HealthSchema)
    def get(self):
        """The process is up (says nothing about its dependencies)."""
        return {"status": "ok"}


@blp.route("/readyz")
class Ready(MethodView):
    @blp.response(200, HealthSchema)
    @problems(blp, (503, "Database unreachable or not migrated to head"))
    def get(self):
        """Ready to serve: the database answers and its schema is at the latest migration."""
        try:
            revision = current_revision(db_session().connection())
        except Exception as exc:  # any failure to reach the database means not ready
            current_app.logger.warning("readiness: database unreachable: %s", type(exc).__name__)
            return problem_response(503, "Service Unavailable", "The database is unreachable.",
                                    headers={"Retry-After": "5"})
        head = head_revision()
        if revision != head:
            return problem_response(503, "Service Unavailable",
                                    f"The database schema is at {revision or 'no revision'}, not {head}: run the migrations.",
                                    headers={"Retry-After": "5"})
        return {"status": "ok", "database": "ok", "revision": revision}
