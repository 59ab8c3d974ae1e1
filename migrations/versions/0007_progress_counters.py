"""Pre-aggregated counters for statistics

Revision ID: 0007
Revises: 0006
`learner_progress` (one row per client, learner and exercise), `exercise_progress` (totals per
exercise), `exercise_daily_counts` and `exercise_outcome_counts` (failing checks and likely
causes), kept up to date by service/services/progress.py with every attempt event; filled here
from the attempts that already exist. The backfill SQL is a frozen copy of progress.rebuild's, so
this migration keeps working when the service's code moves on.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0007'
down_revision: str | Sequence[str] | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('exercise_daily_counts',
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('passed', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_exercise_daily_counts_exercise_id_exercises')),
    sa.PrimaryKeyConstraint('exercise_id', 'day', name=op.f('pk_exercise_daily_counts'))
    )
    op.create_table('exercise_outcome_counts',
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_exercise_outcome_counts_exercise_id_exercises')),
    sa.PrimaryKeyConstraint('exercise_id', 'kind', 'name', name=op.f('pk_exercise_outcome_counts'))
    )
    op.create_table('exercise_progress',
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('passed_attempts', sa.Integer(), nullable=False),
    sa.Column('learners', sa.Integer(), nullable=False),
    sa.Column('passed_learners', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_exercise_progress_exercise_id_exercises')),
    sa.PrimaryKeyConstraint('exercise_id', name=op.f('pk_exercise_progress'))
    )
    op.create_table('learner_progress',
    sa.Column('client_id', sa.Integer(), nullable=False),
    sa.Column('learner', sa.String(length=255), nullable=False),
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('best_score', sa.Double(), nullable=True),
    sa.Column('latest_score', sa.Double(), nullable=True),
    sa.Column('passed', sa.Boolean(), nullable=False),
    sa.Column('first_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('first_passed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('attempts_to_first_pass', sa.Integer(), nullable=True),
    sa.Column('last_graded_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['client_id'], ['api_clients.id'], name=op.f('fk_learner_progress_client_id_api_clients')),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_learner_progress_exercise_id_exercises')),
    sa.PrimaryKeyConstraint('client_id', 'learner', 'exercise_id', name=op.f('pk_learner_progress'))
    )
    with op.batch_alter_table('learner_progress', schema=None) as batch_op:
        batch_op.create_index('ix_learner_progress_exercise', ['exercise_id', 'passed', 'best_score',
                              'attempts_to_first_pass', 'first_attempt_at', 'first_passed_at'], unique=False)
        batch_op.create_index('ix_learner_progress_learner', ['learner'], unique=False)
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.create_index('ix_attempts_not_graded', ['exercise_id'], unique=False,
                              postgresql_where=sa.text("status <> 'graded'"), sqlite_where=sa.text("status <> 'graded'"))
    _backfill()


# A frozen copy of service/services/progress.py's rebuild SQL (see there for the definitions).
_LEARNERS = """
INSERT INTO learner_progress (client_id, learner, exercise_id, attempts, best_score, latest_score, passed,
                              first_attempt_at, first_passed_at, attempts_to_first_pass, last_graded_at)
SELECT client_id, learner, exercise_id, count(*), max(score), max(latest_score),
       sum(CASE WHEN verdict = 'passed' THEN 1 ELSE 0 END) > 0,
       min(created_at), min(CASE WHEN verdict = 'passed' THEN created_at END),
       min(CASE WHEN verdict = 'passed' THEN n END), max(graded_at)
FROM (SELECT client_id, learner, exercise_id, score, verdict, created_at, graded_at,
             row_number() OVER w AS n,
             last_value(score) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS latest_score
      FROM attempts WHERE status = 'graded'
      WINDOW w AS (PARTITION BY client_id, learner, exercise_id ORDER BY created_at, id)) AS ranked
GROUP BY client_id, learner, exercise_id
"""
_DAYS = """
INSERT INTO exercise_daily_counts (exercise_id, day, attempts, passed)
SELECT exercise_id, {day}, count(*), sum(CASE WHEN verdict = 'passed' THEN 1 ELSE 0 END)
FROM attempts WHERE status = 'graded' GROUP BY exercise_id, {day}
"""
_DAY = {"postgresql": "CAST(created_at AT TIME ZONE 'UTC' AS date)", "sqlite": "date(created_at)"}
_EXERCISES = """
INSERT INTO exercise_progress (exercise_id, attempts, passed_attempts, learners, passed_learners)
SELECT p.exercise_id, p.attempts, coalesce(d.passed, 0), p.learners, p.passed_learners
FROM (SELECT exercise_id, sum(attempts) AS attempts, count(*) AS learners,
             sum(CASE WHEN passed THEN 1 ELSE 0 END) AS passed_learners
      FROM learner_progress GROUP BY exercise_id) AS p
LEFT JOIN (SELECT exercise_id, sum(passed) AS passed FROM exercise_daily_counts GROUP BY exercise_id) AS d
       ON d.exercise_id = p.exercise_id
"""
_CAUSES = """
INSERT INTO exercise_outcome_counts (exercise_id, kind, name, count)
SELECT exercise_id, 'cause', substr(likely_cause, 1, 100), count(*)
FROM attempts WHERE status = 'graded' AND likely_cause IS NOT NULL AND likely_cause <> ''
GROUP BY exercise_id, substr(likely_cause, 1, 100)
"""
_CHECKS = {
    "postgresql": """
INSERT INTO exercise_outcome_counts (exercise_id, kind, name, count)
SELECT a.exercise_id, 'check', substr(c.value->>'name', 1, 100), count(*)
FROM attempts AS a
CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(a.result->'checks') = 'array' THEN a.result->'checks' ELSE '[]'::jsonb END) AS c(value)
WHERE a.status = 'graded' AND c.value->'passed' = 'false'::jsonb AND jsonb_typeof(c.value->'name') = 'string'
GROUP BY a.exercise_id, substr(c.value->>'name', 1, 100)
""",
    "sqlite": """
INSERT INTO exercise_outcome_counts (exercise_id, kind, name, count)
SELECT a.exercise_id, 'check', substr(json_extract(c.value, '$.name'), 1, 100), count(*)
FROM attempts AS a, json_each(CASE WHEN json_type(a.result, '$.checks') = 'array' THEN a.result ELSE '{"checks": []}' END,
                              '$.checks') AS c
WHERE a.status = 'graded' AND c.type = 'object'
  AND (CASE WHEN c.type = 'object' THEN json_type(c.value, '$.passed') END) = 'false'
  AND (CASE WHEN c.type = 'object' THEN json_type(c.value, '$.name') END) = 'text'
GROUP BY a.exercise_id, substr(json_extract(c.value, '$.name'), 1, 100)
""",
}


def _backfill() -> None:
    dialect = op.get_bind().dialect.name
    for statement in (_LEARNERS, _DAYS.format(day=_DAY[dialect]), _EXERCISES, _CAUSES, _CHECKS[dialect]):
        op.execute(sa.text(statement))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_attempts_not_graded')

    with op.batch_alter_table('learner_progress', schema=None) as batch_op:
        batch_op.drop_index('ix_learner_progress_learner')
        batch_op.drop_index('ix_learner_progress_exercise')

    op.drop_table('learner_progress')
    op.drop_table('exercise_progress')
    op.drop_table('exercise_outcome_counts')
    op.drop_table('exercise_daily_counts')
