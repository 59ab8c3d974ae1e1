"""Code attempts and runs graded by workers

Revision ID: 0002
Revises: 0001
Attempts at code exercises are queued and graded by workers that claim them with a lease;
runs are the sandboxed "try it yourself" executions.

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('runs',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('client_id', sa.Integer(), nullable=False),
    sa.Column('code', sa.Text(), nullable=False),
    sa.Column('entry_point', sa.String(length=100), nullable=True),
    sa.Column('inputs', JSON_TYPE, nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', JSON_TYPE, nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('graded_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('tries', sa.Integer(), nullable=False),
    sa.Column('lease_owner', sa.String(length=64), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['client_id'], ['api_clients.id'], name=op.f('fk_runs_client_id_api_clients')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs'))
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_runs_client_id'), ['client_id'], unique=False)
        batch_op.create_index('ix_runs_queue', ['status', 'created_at'], unique=False)

    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('code', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('started_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('tries', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('lease_owner', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.alter_column('answer',
               existing_type=JSON_TYPE,
               nullable=True)
        batch_op.create_index('ix_attempts_queue', ['status', 'created_at'], unique=False)



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_attempts_queue')
        batch_op.alter_column('answer',
               existing_type=JSON_TYPE,
               nullable=False)
        batch_op.drop_column('lease_expires_at')
        batch_op.drop_column('lease_owner')
        batch_op.drop_column('tries')
        batch_op.drop_column('started_at')
        batch_op.drop_column('code')

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_queue')
        batch_op.drop_index(batch_op.f('ix_runs_client_id'))

    op.drop_table('runs')
