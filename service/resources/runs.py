from __future__ import annotations

import uuid

from flask import Response, jsonify, url_for
from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import select

from ..auth import BEARER, current_client, require_client
from ..errors import VALIDATION_ERROR, problem_abort
from ..extensions import db_session, dispatch_job
from .docs import BODY_PROBLEMS, UNAUTHORIZED, problems
from ..grading.spec import validate_run_inputs
from ..models import AttemptStatus, Run
from ..ratelimit import rate_limited
from ..schemas.attempts import WaitQuerySchema
from ..schemas.runs import RunCreateSchema, RunSchema
from ..services.attempts import wait_until_finished

blp = Blueprint("runs", __name__, url_prefix="/api/v1/runs",
                description="'Try it yourself': run code in the grading sandbox, outside any exercise.")


def _visible(run_id: uuid.UUID):
    client = current_client()
    stmt = select(Run).where(Run.id == run_id)
    return stmt if client.is_admin else stmt.where(Run.client_id == client.id)


@blp.route("")
class Runs(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @rate_limited("runs")
    @blp.arguments(RunCreateSchema)
    @blp.response(200, RunSchema, description="The run finished within `wait` seconds")
    @blp.alt_response(202, schema=RunSchema, headers={"Location": {"schema": {"type": "string"}}},
                      description="Still queued or running: follow Location")
    @problems(blp, UNAUTHORIZED, *BODY_PROBLEMS, (429, "Too many runs; see Retry-After"))
    def post(self, payload):
        """Run code in the sandbox; with a Function name and inputs, gradcheck it too."""
        client = current_client()
        entry_point, inputs = payload.get("entry_point"), payload.get("inputs")
        if (entry_point is None) != (inputs is None):
            missing = "inputs" if inputs is None else "entry_point"
            problem_abort(422, "Give both entry_point and inputs, or neither.", type=VALIDATION_ERROR,
                          errors=[{"field": f"json.{missing}", "message": "required with the other"}])
        if inputs is not None:
            problems = validate_run_inputs(inputs)
            if problems:
                problem_abort(422, "The input specs are not valid.", type=VALIDATION_ERROR,
                              errors=[{"field": f"json.{f}", "message": m} for f, m in problems])
        session = db_session()
        run = Run(id=uuid.uuid4(), client_id=client.id, code=payload["code"], entry_point=entry_point,
                  inputs=inputs, gradgradcheck=payload["gradgradcheck"], status=AttemptStatus.QUEUED.value)
        session.add(run)
        session.commit()
        dispatch_job(Run, run.id)
        run = wait_until_finished(session, Run, _visible(run.id), payload["wait"])
        return _run_response(run)


@blp.route("/<uuid:run_id>")
class RunDetail(MethodView):
    @blp.doc(security=BEARER)
    @require_client
    @blp.arguments(WaitQuerySchema, location="query")
    @blp.response(200, RunSchema)
    @problems(blp, UNAUTHORIZED, (404, "No run with this id is visible to the caller"))
    def get(self, query, run_id: uuid.UUID):
        """One run and its result; `?wait=N` holds the answer until it has finished."""
        run = wait_until_finished(db_session(), Run, _visible(run_id), query["wait"])
        if run is None:
            problem_abort(404, "No such run.")
        return run


def _run_response(run: Run) -> Response:
    response = jsonify(RunSchema().dump(run))
    response.status_code = 200 if run.finished else 202
    response.headers["Location"] = url_for("runs.RunDetail", run_id=run.id)
    return response
