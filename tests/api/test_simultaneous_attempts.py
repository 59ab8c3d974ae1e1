"""Many submissions of one learner at once (issue 33, finding 7: a double-clicked Submit, a
frontend's retries, a frontend using one learner id for everyone, a script): none is answered 5xx
or lost. Each is stored with its own attempt number (1..N, no gap, no duplicate), or refused with a
problem+json that says why, and when to retry (service/services/attempts.py `submit_attempt`). A
stored code attempt is dispatched to the grading workers once."""

from __future__ import annotations

import threading
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.catalog import load_catalog, sync_catalog
from service.extensions import db_session
from service.models import ApiClient, Attempt, AttemptStatus, IdempotencyRecord, Role
from service.services import attempts
from tests.conftest import EXERCISES_DIR
from tests.helpers import bearer, count_rows

QUIZ, RIGHT = "backward-none-for-bounds", "none-each"
CODE = "clamp-function"
REFERENCE = (EXERCISES_DIR / CODE / "reference.py").read_text()
# The race, not the rate limiter, is under test.
NO_RATE_LIMITS = {"attempts_rate_limit": "100000/minute", "runs_rate_limit": "100000/minute"}


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: dict
    retry_after: str | None
    replayed: bool


@dataclass(frozen=True)
class Racing:
    app: object
    key: str
    staff_key: str
    client_id: int


@pytest.fixture
def racing(make_app, client_key_for) -> Racing:
    app = make_app(**NO_RATE_LIMITS)
    app.config["PROPAGATE_EXCEPTIONS"] = False  # an error is answered as a server would (500), not raised here
    exercises, problems = load_catalog(EXERCISES_DIR)
    assert not problems, problems
    with app.app_context():
        sync_catalog(db_session(), exercises)
        db_session().commit()
    key, staff_key = client_key_for(app), client_key_for(app, "prof", Role.INSTRUCTOR)
    with app.app_context():
        client_id = db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))
    return Racing(app, key, staff_key, client_id)


def post(http, key: str, slug: str, body: dict, idempotency_key: str | None = None) -> Answer:
    headers = {**bearer(key), **({"Idempotency-Key": idempotency_key} if idempotency_key else {})}
    response = http.post(f"/api/v1/exercises/{slug}/attempts", headers=headers, json=body)
    return Answer(response.status_code, response.content_type, response.get_json(silent=True) or {},
                  response.headers.get("Retry-After"), response.headers.get("Idempotent-Replayed") == "true")


def at_once(racing: Racing, slug: str, body: dict, times: int, keys: list[str] | None = None) -> list[Answer]:
    """`times` POSTs of `body` sent together, each from its own thread; the n-th (with keys[n]) answered answers[n]."""
    start = threading.Barrier(times)
    answers: list[Answer | None] = [None] * times

    def submit(n: int) -> None:
        own = racing.app.test_client()
        start.wait()
        answers[n] = post(own, racing.key, slug, body, keys[n] if keys else None)

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert None not in answers
    return answers  # type: ignore[return-value]


def stored(racing: Racing, learner: str) -> list[Attempt]:
    with racing.app.app_context():
        return list(db_session().scalars(select(Attempt).where(Attempt.learner == learner)
                                         .order_by(Attempt.attempt_number)))


def assert_told(answers: list[Answer], allowed: set[int]) -> None:
    """No 5xx but a 503 problem with Retry-After; every refusal a problem+json of its own type."""
    statuses = Counter(answer.status for answer in answers)
    assert set(statuses) <= allowed | {503}, statuses
    for answer in answers:
        if answer.status >= 400:
            assert answer.content_type == "application/problem+json", answer
        if answer.status == 503:
            assert answer.body["type"] == "/problems/simultaneous-attempts", answer
            assert answer.retry_after and int(answer.retry_after) > 0, answer
        if answer.status == 409:
            assert answer.body["type"] == "/problems/attempt-refused/no-attempts-left", answer


def test_200_simultaneous_quiz_answers_of_one_learner_are_each_stored_with_their_own_number(racing):
    answers = at_once(racing, QUIZ, {"learner": "ada", "answer": RIGHT}, 200)
    assert_told(answers, {201})
    numbers = [attempt.attempt_number for attempt in stored(racing, "ada")]
    assert numbers == list(range(1, len(numbers) + 1))
    assert sorted(answer.body["attempt_number"] for answer in answers if answer.status == 201) == numbers


def test_simultaneous_answers_at_the_attempt_limit_store_exactly_the_limit(racing):
    http = racing.app.test_client()
    response = http.put(f"/api/v1/admin/exercises/{QUIZ}/clients/{racing.client_id}/rules",
                        headers=bearer(racing.staff_key), json={"max_attempts": 5})
    assert response.status_code == 200, response.json
    answers = at_once(racing, QUIZ, {"learner": "ada", "answer": RIGHT}, 200)
    assert_told(answers, {201, 409})
    assert [attempt.attempt_number for attempt in stored(racing, "ada")] == [1, 2, 3, 4, 5]
    assert Counter(answer.status for answer in answers)[201] == 5


def test_simultaneous_retries_with_idempotency_keys_store_each_key_once(racing):
    # 50 submissions, each sent twice at once with its key (a frontend's retry racing the first).
    keys = [f"submit-{n % 50}" for n in range(100)]
    answers = at_once(racing, QUIZ, {"learner": "ada", "answer": RIGHT}, 100, keys)
    assert_told(answers, {201})
    by_key: dict[str, list[Answer]] = defaultdict(list)
    for key, answer in zip(keys, answers, strict=True):
        by_key[key].append(answer)
    numbers = [attempt.attempt_number for attempt in stored(racing, "ada")]
    assert numbers == list(range(1, len(numbers) + 1))
    stored_keys = 0
    for pair in by_key.values():
        created = [answer for answer in pair if answer.status == 201]
        assert len({answer.body["id"] for answer in created}) <= 1, pair  # a retry is the first, replayed
        assert sum(not answer.replayed for answer in created) <= 1, pair
        stored_keys += bool(created)
    assert stored_keys == len(numbers) == count_rows(racing.app, IdempotencyRecord)


class RecordingDispatcher:
    def __init__(self) -> None:
        self.sent: list[uuid.UUID] = []
        self._lock = threading.Lock()

    def dispatch(self, _session, _model, job_id: uuid.UUID) -> None:
        with self._lock:
            self.sent.append(job_id)


def test_simultaneous_code_attempts_are_each_stored_numbered_and_dispatched_once(racing):
    dispatcher = racing.app.extensions["gradquiz.dispatcher"] = RecordingDispatcher()
    answers = at_once(racing, CODE, {"learner": "ada", "code": REFERENCE}, 40)
    assert_told(answers, {202})
    rows = stored(racing, "ada")
    assert [attempt.attempt_number for attempt in rows] == list(range(1, len(rows) + 1))
    assert {attempt.status for attempt in rows} == {AttemptStatus.QUEUED.value}
    queued = sorted(uuid.UUID(answer.body["id"]) for answer in answers if answer.status == 202)
    assert sorted(dispatcher.sent) == queued == sorted(attempt.id for attempt in rows)


@pytest.mark.backends("postgresql")  # on SQLite a submission in its turn holds the write lock: no one can take its number
def test_a_submission_whose_number_is_taken_in_every_turn_is_answered_503_with_retry_after(racing, monkeypatch):
    engine = racing.app.extensions["gradquiz.db"].engine
    insert = attempts.insert_new_attempt
    rivals: list[int] = []

    def a_rival_takes_the_number_first(session, rows) -> None:
        # Another request of the learner, from another process (no turn of ours holds it back).
        with Session(engine) as rival:
            insert(rival, attempts.NewAttemptRows(replace(rows.attempt, id=uuid.uuid4()), None, None))
            rival.commit()
        rivals.append(rows.attempt.attempt_number)
        insert(session, rows)

    monkeypatch.setattr(attempts, "insert_new_attempt", a_rival_takes_the_number_first)
    http = racing.app.test_client()
    lost = post(http, racing.key, QUIZ, {"learner": "ada", "answer": RIGHT}, "once")
    assert (lost.status, lost.content_type, lost.body["type"]) == (503, "application/problem+json",
                                                                   "/problems/simultaneous-attempts")
    assert lost.retry_after == "1" and "retry" in lost.body["detail"].lower()
    assert rivals == list(range(1, attempts.NUMBER_RACE_TURNS + 2))  # the first try, then each turn
    assert count_rows(racing.app, IdempotencyRecord) == 0  # nothing of it stored: its key is unused
    monkeypatch.undo()
    again = post(http, racing.key, QUIZ, {"learner": "ada", "answer": RIGHT}, "once")
    assert (again.status, again.body["attempt_number"], again.replayed) == (201, len(rivals) + 1, False)


def test_a_lone_submission_takes_no_turn_and_one_whose_learner_waits_in_this_process_takes_its_turn(racing,
                                                                                                  monkeypatch):
    turns: list[tuple] = []
    serialize = attempts.serialize_transactions

    def recorded(session, *key) -> None:
        turns.append(key)
        serialize(session, *key)

    monkeypatch.setattr(attempts, "serialize_transactions", recorded)
    http = racing.app.test_client()
    assert post(http, racing.key, QUIZ, {"learner": "ada", "answer": RIGHT}).status == 201
    assert turns == []  # the uncontended path: optimistic, no lock and no round trip more
    with racing.app.app_context():
        exercise_id = db_session().scalar(select(Attempt.exercise_id))
    waiting = ("attempts", racing.client_id, exercise_id, "ada")
    attempts._TAKING_TURNS.join(waiting)  # another request of ada's waits for its turn
    try:
        second = post(http, racing.key, QUIZ, {"learner": "ada", "answer": RIGHT})
        assert (second.status, second.body["attempt_number"]) == (201, 2)
        assert turns == [waiting]
        assert post(http, racing.key, QUIZ, {"learner": "bob", "answer": RIGHT}).status == 201
        assert turns == [waiting]  # bob's first try is his own
    finally:
        attempts._TAKING_TURNS.leave(waiting)
    assert waiting not in attempts._TAKING_TURNS
