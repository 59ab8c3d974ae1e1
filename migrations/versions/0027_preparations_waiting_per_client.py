"""A client's waiting variant preparations, indexed

Revision ID: 0027
Revises: 0026
A token or launch that queues preparations first counts the client's waiting ones (at most
MAX_QUEUED_PER_CLIENT wait, service/services/preparations.py). Without this index the count read
every waiting preparation of every client, which is when the queue is deepest.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0027'
down_revision: str | Sequence[str] | None = '0026'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WAITING = sa.text("status = 'queued'")


def upgrade() -> None:
    op.create_index('ix_variant_preparations_client_waiting', 'variant_preparations', ['client_id'],
                    postgresql_where=WAITING, sqlite_where=WAITING)


def downgrade() -> None:
    op.drop_index('ix_variant_preparations_client_waiting', table_name='variant_preparations')
