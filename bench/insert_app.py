"""The floors of bench/api_load.py for requests that use the database: what storing one attempt,
and reading one learner's attempts, cost on this stack, and no more.

    DATABASE_URL=... gunicorn -c gunicorn.conf.py bench.insert_app:app

Two routes, under the same gunicorn settings as the API, each checking a bearer token against a
constant. POST /attempts (the insert floor) validates the JSON body with a marshmallow schema (as
the API does), inserts one attempt-shaped row (the columns of a graded quiz attempt) into a table
of its own in the same database, with the same engine settings (service.database), commits, and
answers 201 with a small JSON body: no key lookup, no exercise, no grading, no event, no
idempotency record, no statistics. GET /attempts/<learner> (the read floor) selects a learner's
rows, newest first, at most 20, by an index of a second table (seeded with 5 rows of one learner,
so the inserts do not grow it), and answers them as JSON: no key lookup, no pagination count, no
best scores, no rules.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime

from flask import Flask, jsonify, request
from marshmallow import Schema, ValidationError, fields, validate
from sqlalchemy import JSON, Boolean, Column, DateTime, Float, Index, Integer, MetaData, String, Table, Uuid, func, select

from service.database import DEFAULT_POOL_SIZE, READ_ONLY, engine_for

TOKEN = os.environ.get("FLOOR_TOKEN", "floor")
metadata = MetaData()


def attempt_columns() -> list[Column]:
    """The columns of a graded quiz attempt (new objects: a column belongs to one table)."""
    return [Column("id", Uuid, primary_key=True), Column("client_id", Integer, nullable=False),
            Column("learner", String(255), nullable=False), Column("exercise_id", Integer, nullable=False),
            Column("exercise_version", Integer, nullable=False), Column("answer", JSON),
            Column("status", String(16), nullable=False), Column("score", Float), Column("correct", Boolean),
            Column("created_at", DateTime(timezone=True), nullable=False)]


floor_attempts = Table("bench_floor_attempts", metadata, *attempt_columns())
# The read floor's rows: the same shape, and an index by learner as the API's history has.
floor_history = Table("bench_floor_history", metadata, *attempt_columns(),
                      Index("ix_bench_floor_history_learner", "learner", "created_at"))
HISTORY_LEARNER = "history-learner"


class AnswerSchema(Schema):
    learner = fields.String(required=True, validate=validate.Length(min=1, max=255))
    answer = fields.Raw(required=True)


schema = AnswerSchema()
# The pool the API's web processes get: gunicorn.conf.py sets DATABASE_POOL_SIZE to the threads.
engine = engine_for(os.environ["DATABASE_URL"], int(os.environ.get("DATABASE_POOL_SIZE", DEFAULT_POOL_SIZE)))
# Reads as the API's GETs read (service/database.py): on SQLite a snapshot, without the write lock.
readers = engine.execution_options(**{READ_ONLY: True})
metadata.create_all(engine)
with engine.begin() as conn:
    if conn.execute(select(func.count()).select_from(floor_history)).scalar_one() == 0:
        conn.execute(floor_history.insert(), [
            {"id": uuid.uuid4(), "client_id": 1, "learner": HISTORY_LEARNER, "exercise_id": 1, "exercise_version": 1,
             "answer": "apply", "status": "graded", "score": float(n % 2), "correct": bool(n % 2),
             "created_at": datetime.now(UTC)} for n in range(5)])
app = Flask(__name__)


@app.post("/attempts")
def store_attempt():
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return jsonify(error="unauthorized"), 401
    try:
        body = schema.load(request.get_json())
    except ValidationError as exc:
        return jsonify(errors=exc.messages), 422
    row = {"id": uuid.uuid4(), "client_id": 1, "learner": body["learner"], "exercise_id": 1, "exercise_version": 1,
           "answer": body["answer"], "status": "graded", "score": 1.0, "correct": True,
           "created_at": datetime.now(UTC)}
    with engine.begin() as conn:
        conn.execute(floor_attempts.insert(), row)
    return jsonify(id=str(row["id"]), status="graded"), 201


@app.get("/attempts/<learner>")
def learner_attempts(learner: str):
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return jsonify(error="unauthorized"), 401
    with readers.connect() as conn:
        rows = conn.execute(select(floor_history).where(floor_history.c.learner == learner)
                            .order_by(floor_history.c.created_at.desc()).limit(20)).mappings().all()
    return jsonify(learner=learner, attempts=[{**row, "id": str(row["id"])} for row in rows])
