"""The write floor in bench/api_load.py: what storing one attempt costs on this stack, and no more.

    DATABASE_URL=... gunicorn -c gunicorn.conf.py bench.insert_app:app

One route, under the same gunicorn settings as the API: it checks a bearer token against a
constant, validates the JSON body with a marshmallow schema (as the API does), inserts one
attempt-shaped row (the columns of a graded quiz attempt) into a table of its own in the same
database, with the same engine settings (service.database), commits, and answers 201 with a small
JSON body. No key lookup, no exercise, no grading, no event, no idempotency record, no statistics.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime

from flask import Flask, jsonify, request
from marshmallow import Schema, ValidationError, fields, validate
from sqlalchemy import JSON, Boolean, Column, DateTime, Float, Integer, MetaData, String, Table, Uuid

from service.database import engine_for

TOKEN = os.environ.get("FLOOR_TOKEN", "floor")
metadata = MetaData()
floor_attempts = Table(
    "bench_floor_attempts", metadata,
    Column("id", Uuid, primary_key=True),
    Column("client_id", Integer, nullable=False),
    Column("learner", String(255), nullable=False),
    Column("exercise_id", Integer, nullable=False),
    Column("exercise_version", Integer, nullable=False),
    Column("answer", JSON),
    Column("status", String(16), nullable=False),
    Column("score", Float),
    Column("correct", Boolean),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


class AnswerSchema(Schema):
    learner = fields.String(required=True, validate=validate.Length(min=1, max=255))
    answer = fields.Raw(required=True)


schema = AnswerSchema()
engine = engine_for(os.environ["DATABASE_URL"])
metadata.create_all(engine)
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
