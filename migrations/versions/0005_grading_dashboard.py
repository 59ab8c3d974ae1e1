"""The grading dashboard: searchable grade columns, overrides with their audit log, regrades

Revision ID: 0005
Revises: 0004
`attempts` gains `grader_score` (what the grader gave, kept under an override), `overridden`,
and `verdict` and `likely_cause` copied out of the result so searches use indexes; existing
attempts get them from their stored results. `grade_overrides` is the audit log of overrides;
`regrades` and `regrade_items` (graded by the workers like any job) hold regrades.
`exercises.unpublished_by` keeps an instructor's unpublish through catalog syncs.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: str | Sequence[str] | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('grade_overrides',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('attempt_id', sa.Uuid(), nullable=False),
    sa.Column('client_id', sa.Integer(), nullable=False),
    sa.Column('actor', sa.String(length=100), nullable=False),
    sa.Column('old_score', sa.Double(), nullable=True),
    sa.Column('new_score', sa.Double(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['attempt_id'], ['attempts.id'], name=op.f('fk_grade_overrides_attempt_id_attempts')),
    sa.ForeignKeyConstraint(['client_id'], ['api_clients.id'], name=op.f('fk_grade_overrides_client_id_api_clients')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_grade_overrides'))
    )
    with op.batch_alter_table('grade_overrides', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_grade_overrides_attempt_id'), ['attempt_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_grade_overrides_created_at'), ['created_at'], unique=False)

    op.create_table('regrades',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('exercise_version_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('requested_by', sa.String(length=100), nullable=False),
    sa.Column('attempt_id', sa.Uuid(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('applied_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('applied_by', sa.String(length=100), nullable=True),
    sa.Column('applied_through', sa.Uuid(), nullable=True),
    sa.ForeignKeyConstraint(['attempt_id'], ['attempts.id'], name=op.f('fk_regrades_attempt_id_attempts')),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_regrades_exercise_id_exercises')),
    sa.ForeignKeyConstraint(['exercise_version_id'], ['exercise_versions.id'],
                            name=op.f('fk_regrades_exercise_version_id_exercise_versions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_regrades'))
    )
    with op.batch_alter_table('regrades', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_regrades_exercise_id'), ['exercise_id'], unique=False)

    op.create_table('regrade_items',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('regrade_id', sa.Uuid(), nullable=False),
    sa.Column('attempt_id', sa.Uuid(), nullable=False),
    sa.Column('old_score', sa.Double(), nullable=True),
    sa.Column('new_score', sa.Double(), nullable=True),
    sa.Column('new_correct', sa.Boolean(), nullable=True),
    sa.Column('applied_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', JSON_TYPE, nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('graded_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('tries', sa.Integer(), nullable=False),
    sa.Column('lease_owner', sa.String(length=64), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['attempt_id'], ['attempts.id'], name=op.f('fk_regrade_items_attempt_id_attempts')),
    sa.ForeignKeyConstraint(['regrade_id'], ['regrades.id'], name=op.f('fk_regrade_items_regrade_id_regrades')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_regrade_items')),
    sa.UniqueConstraint('regrade_id', 'attempt_id', name=op.f('uq_regrade_items_regrade_id_attempt_id'))
    )
    with op.batch_alter_table('regrade_items', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_regrade_items_attempt_id'), ['attempt_id'], unique=False)
        batch_op.create_index('ix_regrade_items_queue', ['status', 'created_at'], unique=False)
        batch_op.create_index('ix_regrade_items_regrade_status', ['regrade_id', 'status'], unique=False)

    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('grader_score', sa.Double(), nullable=True))
        batch_op.add_column(sa.Column('overridden', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('verdict', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('likely_cause', sa.String(length=64), nullable=True))
    _backfill_grade_columns()

    with op.batch_alter_table('exercises', schema=None) as batch_op:
        batch_op.add_column(sa.Column('unpublished_by', sa.String(length=100), nullable=True))



def _backfill_grade_columns() -> None:
    if op.get_bind().dialect.name == "postgresql":
        status, first_cause = "result->>'status'", "result->'likely_causes'->>0"
    else:
        status, first_cause = "json_extract(result, '$.status')", "json_extract(result, '$.likely_causes[0]')"
    op.execute("UPDATE attempts SET grader_score = score")
    op.execute(f"UPDATE attempts SET verdict = {status}, likely_cause = {first_cause} "
               "WHERE code IS NOT NULL AND result IS NOT NULL")
    op.execute("UPDATE attempts SET verdict = CASE WHEN correct THEN 'passed' ELSE 'failed' END "
               "WHERE code IS NULL AND correct IS NOT NULL")


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('exercises', schema=None) as batch_op:
        batch_op.drop_column('unpublished_by')

    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_column('likely_cause')
        batch_op.drop_column('verdict')
        batch_op.drop_column('overridden')
        batch_op.drop_column('grader_score')

    with op.batch_alter_table('regrade_items', schema=None) as batch_op:
        batch_op.drop_index('ix_regrade_items_regrade_status')
        batch_op.drop_index('ix_regrade_items_queue')
        batch_op.drop_index(batch_op.f('ix_regrade_items_attempt_id'))

    op.drop_table('regrade_items')
    with op.batch_alter_table('regrades', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_regrades_exercise_id'))

    op.drop_table('regrades')
    with op.batch_alter_table('grade_overrides', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_grade_overrides_created_at'))
        batch_op.drop_index(batch_op.f('ix_grade_overrides_attempt_id'))

    op.drop_table('grade_overrides')
