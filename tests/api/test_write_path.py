"""A submitted attempt's rows (service/services/attempts.py `insert_new_attempt`; the event and its
deliveries from service/outbound/outbox.py): the attempt, its event, the event's webhook deliveries
and the Idempotency-Key's record, written together: on PostgreSQL in one statement, on SQLite in one
per table; and a stored attempt's later event (a grade, regrade or override: `write_event`) with its
deliveries, by the same statements."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import event, func, select

from service.database import engine_for
from service.extensions import db_session
from service.models import Attempt, AttemptEvent, IdempotencyRecord, WebhookDelivery, WebhookEndpoint
from service.models.base import utcnow
from tests.api.support import recorded_statements, register_webhook
from tests.helpers import bearer
from tests.webhook_receiver import WebhookReceiver

QUIZ, RIGHT = "call-through-apply", "apply"


@pytest.fixture
def receiver():
    with WebhookReceiver() as receiver:
        yield receiver






def counts(app) -> dict[str, int]:
    with app.app_context():
        session = db_session()
        return {model.__tablename__: session.scalar(select(func.count()).select_from(model))
                for model in (Attempt, AttemptEvent, WebhookDelivery, IdempotencyRecord)}


def test_a_quiz_answer_its_event_deliveries_and_record_are_one_statement_on_postgresql(
        app, client, client_key, other_client_key, receiver, database_url):
    active = register_webhook(client, client_key, receiver)
    disabled = register_webhook(client, client_key, receiver)
    register_webhook(client, other_client_key, receiver)  # another client's endpoint hears nothing of ours
    with app.app_context():
        db_session().get(WebhookEndpoint, disabled["id"]).disabled_at = utcnow()
        db_session().commit()
    key = uuid.uuid4().hex
    headers = {**bearer(client_key), "Idempotency-Key": key}
    body = {"learner": "ada", "answer": RIGHT}

    with recorded_statements(database_url) as statements:
        created = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=headers, json=body)
    assert created.status_code == 201, created.json
    inserts = [s for s in statements if "INSERT" in s]
    assert not [s for s in statements if s.lstrip().startswith(("UPDATE", "DELETE"))]
    if database_url.startswith("postgresql"):
        assert len(inserts) == 1, inserts
        # the rules' read and the write are each a transaction of their own: no BEGIN, no COMMIT
        # (the key's lookup before them is the tests' own: they cache no key)
        assert statements.in_transaction == [s for s in statements if s.startswith("SELECT api_clients")]
    else:
        assert [s.split()[2] for s in inserts] == ["attempts", "attempt_events", "webhook_deliveries",
                                                  "idempotency_records"]
        # SQLite's one write lock is taken for the write alone: the rules are read on a snapshot
        write = statements.index(inserts[0])
        rules_read = next(i for i, s in enumerate(statements) if "count(*)" in s and "FROM attempts" in s)
        begins = [(i, s) for i, s in enumerate(statements) if s.startswith("BEGIN")]
        assert [s for i, s in begins if i < rules_read][-1] == "BEGIN"
        assert statements[write - 1] == "BEGIN IMMEDIATE"

    with app.app_context():
        session = db_session()
        attempt = session.get(Attempt, uuid.UUID(created.json["id"]))
        assert (attempt.learner, attempt.score, attempt.correct, attempt.verdict, attempt.attempt_number) == \
            ("ada", 1.0, True, "passed", 1)
        assert (attempt.overridden, attempt.tries, attempt.late, attempt.status) == (False, 0, False, "graded")
        assert attempt.request_id == created.headers["X-Request-Id"]
        (graded,) = session.scalars(select(AttemptEvent).where(AttemptEvent.attempt_id == attempt.id)).all()
        assert (graded.type, graded.data, graded.counted_at) == \
            ("attempt.graded", {"status": "graded", "score": 1.0, "correct": True}, None)
        assert graded.counters["graded"] is True and graded.counters["verdict"] == "passed"
        deliveries = session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == graded.id)).all()
        assert [(d.endpoint_id, d.status, d.tries) for d in deliveries] == [(active["id"], "pending", 0)]
        record = session.scalar(select(IdempotencyRecord).where(IdempotencyRecord.key == key))
        assert (record.response_status, record.response_body, record.location) == \
            (201, created.json, created.headers["Location"])

    before = counts(app)
    again = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=headers, json=body)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json == created.json
    other = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=headers, json={**body, "answer": "call-class"})
    assert other.status_code == 422 and other.content_type == "application/problem+json"
    assert counts(app) == before  # a replay and a refused reuse write nothing


def test_a_stored_attempts_event_and_its_deliveries_are_one_statement_on_postgresql(
        app, client, client_key, other_client_key, receiver, database_url):
    from service.services.events import record_attempt_event

    created = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(client_key),
                          json={"learner": "ada", "answer": RIGHT})
    active = register_webhook(client, client_key, receiver)
    disabled = register_webhook(client, client_key, receiver)
    register_webhook(client, other_client_key, receiver)
    with app.app_context():
        session = db_session()
        session.get(WebhookEndpoint, disabled["id"]).disabled_at = utcnow()
        session.commit()
        attempt = session.get(Attempt, uuid.UUID(created.json["id"]))
        at = utcnow()
        with recorded_statements(database_url) as statements:
            record_attempt_event(session, attempt_id=attempt.id, client_id=attempt.client_id, lti_link_id=None,
                                 type="attempt.overridden", at=at, attempt=attempt,
                                 data={"status": "graded", "score": 0.5, "correct": True})
            session.commit()
        inserts = [s for s in statements if "INSERT" in s]
        if database_url.startswith("postgresql"):
            assert len(inserts) == 1 and len(statements) == 1, statements  # no SELECT of the endpoints first
        else:
            assert [s.split()[2] for s in inserts] == ["attempt_events", "webhook_deliveries"]
        overridden = session.scalar(select(AttemptEvent).where(AttemptEvent.type == "attempt.overridden"))
        assert (overridden.attempt_id, overridden.data["score"], overridden.counted_at) == (attempt.id, 0.5, None)
        deliveries = session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == overridden.id)).all()
        assert [(d.endpoint_id, d.status, d.tries, d.next_attempt_at) for d in deliveries] == \
            [(active["id"], "pending", 0, at)]


def test_queued_code_and_its_record_are_one_statement_on_postgresql(app, client, client_key, database_url):
    key = uuid.uuid4().hex
    with recorded_statements(database_url) as statements:
        queued = client.post("/api/v1/exercises/clamp-function/attempts",
                             headers={**bearer(client_key), "Idempotency-Key": key},
                             json={"learner": "ada", "code": "class ClampFn: pass"})
    assert queued.status_code == 202, queued.json
    inserts = [s for s in statements if "INSERT" in s]
    assert len(inserts) == (1 if database_url.startswith("postgresql") else 2), statements
    assert inserts[0] not in statements.in_transaction
    with app.app_context():
        session = db_session()
        attempt = session.get(Attempt, uuid.UUID(queued.json["id"]))
        assert (attempt.status, attempt.code, attempt.score) == ("queued", "class ClampFn: pass", None)
        assert session.scalars(select(AttemptEvent)).all() == []  # an event comes with its grade
        assert session.scalar(select(IdempotencyRecord.response_status).where(IdempotencyRecord.key == key)) == 202


@pytest.mark.backends("sqlite")
def test_the_history_and_the_standing_read_by_their_indexes_on_sqlite(client, client_key, database_url):
    # SQLite's planner has no statistics: the history read every attempt of the client newest
    # first when its index lacked the id (migration 0020), and the standing every attempt at the
    # exercise when coalesce(lti_link_id, 0) had its 0 as a parameter (standing.link_key); the
    # course's coalesce(course_id, 0) likewise (migration 0021).
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"learner": "ada", "answer": RIGHT},
                       headers=bearer(client_key)).status_code == 201
    statements = []
    engine = engine_for(database_url)
    listener = lambda _conn, _cursor, sql, params, *_rest: statements.append((sql, params))  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        assert client.get("/api/v1/learners/ada/attempts", headers=bearer(client_key)).status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    with engine.connect() as conn:
        plans = {sql.split()[1]: " ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params))
                 for sql, params in statements if sql.startswith("SELECT")}
    page = next(plan for sql, plan in plans.items() if sql == "attempts.id,")
    assert "USING INDEX ix_attempts_learner_history (client_id=? AND learner=?)" in page and "TEMP B-TREE" not in page
    standing = next(plan for plan in plans.values() if "ux_attempts_number" in plan)
    assert "ux_attempts_number (client_id=? AND exercise_id=? AND <expr>=? AND <expr>=? AND learner=?)" in standing


@pytest.mark.backends("postgresql")
def test_a_page_of_attempts_is_planned_once_on_postgresql(app, client, client_key):
    # psycopg prepares a statement at its fifth execution on a connection. With the page's LIMIT
    # and OFFSET as parameters, PostgreSQL planned it afresh at every execution after that (its
    # generic plan, blind to the LIMIT, looked dearer than a custom one): 170 us of the server's CPU
    # for each read of a learner's history. Rendered in the SQL, the generic plan is kept.
    from flask_smorest.pagination import PaginationParameters
    from sqlalchemy import text

    from service.models import ApiClient
    from service.resources.pagination import Query, RowsPage
    from service.services.attempts import history_parameters, learner_attempts

    for answer in (RIGHT, "call-class"):
        assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"learner": "ada", "answer": answer},
                           headers=bearer(client_key)).status_code == 201
    with app.app_context():
        session = db_session()
        api_client = session.scalars(select(ApiClient).where(ApiClient.role == "client")).first()
        page = RowsPage(Query(session, learner_attempts(None), parameters=history_parameters(api_client, "ada", None)),
                        PaginationParameters(1, 20))
        for _ in range(20):
            assert len(page.rows(0, 20)) == 2
        plans = session.execute(text("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                                     "WHERE statement LIKE '%ORDER BY attempts.created_at DESC%'")).all()
    # PostgreSQL tries custom plans for a prepared statement's first five executions.
    assert len(plans) == 1 and plans[0].custom_plans <= 5 and plans[0].generic_plans >= 10, plans
