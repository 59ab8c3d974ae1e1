"""The score rule (service/scores.py): its Python and SQL forms give the same score, on each database.

The forms: `keep`/`score_that_counts` over scores in submission order (the progress counters,
the gradebook export), `score_query` (the LMS passback), `best_of_group` (a learner's summary)
and the SQL text of the counters' rebuild.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text

from service import scores
from service.auth import create_client
from service.extensions import db_session
from service.models import Attempt, Exercise, Role

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
EXERCISES = ("backward-none-for-bounds", "call-through-apply")


def test_best_is_the_highest_graded_score_and_latest_the_last():
    assert scores.score_that_counts(scores.BEST, [0.2, 0.9, 0.5]) == 0.9
    assert scores.score_that_counts(scores.LATEST, [0.2, 0.9, 0.5]) == 0.5
    assert scores.score_that_counts(scores.BEST, []) is None
    assert scores.score_that_counts(scores.LATEST, []) is None
    # Read one by one, as the gradebook streams them: the same.
    kept = None
    for score in (0.2, 0.9, 0.5):
        kept = scores.keep(scores.BEST, kept, score)
    assert kept == 0.9
    assert scores.policy_of({}) == scores.DEFAULT_POLICY == scores.BEST
    assert scores.policy_of({"score_policy": "latest"}) == scores.LATEST
    with pytest.raises(ValueError):
        scores.score_that_counts("average", [1.0])
    with pytest.raises(ValueError):
        scores.score_query("average")


def add_population(app, seed: int = 20) -> list[Attempt]:
    """Attempts of every status for 3 clients x 3 learners x 2 exercises, several submitted at the
    same instant (then the id decides which is the latest), some with an override."""
    rng = random.Random(seed)
    with app.app_context():
        session = db_session()
        exercises = [session.scalar(select(Exercise).where(Exercise.slug == slug)) for slug in EXERCISES]
        owners = [create_client(session, f"lms-{n}", Role.CLIENT)[0] for n in range(3)]
        session.flush()
        rows = []
        for owner in owners:
            for learner in ("ada", "bob", "chen"):
                for exercise in exercises:
                    for _ in range(rng.randint(0, 7)):
                        status = rng.choice(["graded"] * 5 + ["error", "queued"])
                        score = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) if status == "graded" else None
                        overridden = status == "graded" and rng.random() < 0.2
                        attempt = Attempt(
                            id=uuid.UUID(int=rng.getrandbits(128), version=4), client_id=owner.id, learner=learner,
                            exercise_id=exercise.id, exercise_version_id=exercise.version.id, status=status,
                            score=rng.choice([0.1, 0.6]) if overridden else score, grader_score=score,
                            overridden=overridden,
                            # Few distinct instants: ties are common.
                            created_at=T0 + timedelta(minutes=rng.randint(0, 3)))
                        session.add(attempt)
                        rows.append(attempt)
        session.commit()
        return [(a.client_id, a.learner, a.exercise_id, a.status, a.score, a.created_at, a.id) for a in rows]


def test_the_python_and_sql_forms_of_the_rule_agree(app):
    rows = add_population(app)
    groups = sorted({row[:3] for row in rows})
    assert len(groups) > 10 and any(r[3] != "graded" for r in rows)
    with app.app_context():
        session = db_session()
        rebuilt = {(c, learner, e): (best, latest) for c, learner, e, best, latest in session.execute(text(f"""
            SELECT client_id, learner, exercise_id, {scores.SQL_BEST}, max(latest)
            FROM (SELECT client_id, learner, exercise_id, score, {scores.SQL_LATEST.format(window="w")} AS latest
                  FROM attempts WHERE {scores.SQL_COUNTED}
                  WINDOW w AS (PARTITION BY client_id, learner, exercise_id ORDER BY {scores.SQL_SUBMISSION_ORDER}))
                  AS ranked
            GROUP BY client_id, learner, exercise_id"""))}
        grouped = {(c, learner, e): best for c, learner, e, best in session.execute(
            select(Attempt.client_id, Attempt.learner, Attempt.exercise_id, scores.best_of_group())
            .group_by(Attempt.client_id, Attempt.learner, Attempt.exercise_id))}
        checked = 0
        for group in groups:
            # In Python, from the rows as made (not as a database orders them).
            counted = sorted((r for r in rows if r[:3] == group and r[3] == "graded"), key=lambda r: (r[5], r[6]))
            in_python = {policy: scores.score_that_counts(policy, [r[4] for r in counted])
                         for policy in scores.POLICIES}
            where = (Attempt.client_id == group[0], Attempt.learner == group[1], Attempt.exercise_id == group[2])
            in_sql = {policy: session.scalar(scores.score_query(policy, *where)) for policy in scores.POLICIES}
            assert in_sql == in_python, group
            assert grouped[group] == in_python[scores.BEST], group
            assert rebuilt.get(group, (None, None)) == (in_python[scores.BEST], in_python[scores.LATEST]), group
            # The rows as SQL orders them give the same in Python.
            ordered = session.scalars(select(Attempt.score).where(scores.counted(), *where)
                                      .order_by(*scores.SUBMISSION_ORDER)).all()
            assert [scores.score_that_counts(p, ordered) for p in scores.POLICIES] == list(in_python.values())
            checked += bool(counted)
        assert checked > 10
        # Ties of submission time decided by id did happen.
        assert any(len({r[5] for r in rows if r[:3] == g and r[3] == "graded"})
                   < len([r for r in rows if r[:3] == g and r[3] == "graded"]) for g in groups)
