"""Request ids on grading jobs

Revision ID: 0008
Revises: 0007
The X-Request-Id of the request that made an attempt, run or regrade item, so the worker that
grades it logs under the same id. Existing rows keep none.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0008'
down_revision: str | Sequence[str] | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("attempts", "runs", "regrade_items")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch_op:
            batch_op.add_column(sa.Column('request_id', sa.String(length=64), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column('request_id')
