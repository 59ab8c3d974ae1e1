"""Jobs sent to a broker, and the attempt events outbox

Revision ID: 0003
Revises: 0002
`dispatched_at` records when a job's task was handed to the broker (GRADING_BACKEND=celery), so a
sweeper finds jobs whose task was never sent or was lost. `attempt_events` holds one
`attempt.graded` event per grade, written in the transaction that stores the result.

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: str | Sequence[str] | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    for table in ('attempts', 'runs'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table('attempt_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('attempt_id', sa.Uuid(), nullable=False),
    sa.Column('type', sa.String(length=32), nullable=False),
    sa.Column('data', JSON_TYPE, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['attempt_id'], ['attempts.id'], name=op.f('fk_attempt_events_attempt_id_attempts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_attempt_events'))
    )
    with op.batch_alter_table('attempt_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_attempt_events_attempt_id'), ['attempt_id'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('attempt_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_attempt_events_attempt_id'))
    op.drop_table('attempt_events')
    for table in ('runs', 'attempts'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('dispatched_at')
