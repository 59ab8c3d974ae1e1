"""Statistics counters folded from the attempt events by the workers

Revision ID: 0012
Revises: 0011
Each attempt event carries what the counters take from it (`counters`) and, once the workers
have folded it into them, when (`counted_at`); the request that grades an attempt no longer
updates the counters itself. Events written before this revision were counted in their own
transaction: they are marked counted as of their own time. A partial index holds the events not
yet counted (the workers' queue).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: str | Sequence[str] | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('attempt_events') as batch_op:
        batch_op.add_column(sa.Column('counters', JSON_TYPE, nullable=True))
        batch_op.add_column(sa.Column('counted_at', sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE attempt_events SET counted_at = created_at")
    with op.batch_alter_table('attempt_events') as batch_op:
        batch_op.create_index('ix_attempt_events_not_counted', ['id'], unique=False,
                              postgresql_where=sa.text('counted_at IS NULL'),
                              sqlite_where=sa.text('counted_at IS NULL'))


def downgrade() -> None:
    with op.batch_alter_table('attempt_events') as batch_op:
        batch_op.drop_index('ix_attempt_events_not_counted', postgresql_where=sa.text('counted_at IS NULL'),
                            sqlite_where=sa.text('counted_at IS NULL'))
        batch_op.drop_column('counted_at')
        batch_op.drop_column('counters')
