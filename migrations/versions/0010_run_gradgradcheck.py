"""A run's request to check double backward

Revision ID: 0010
Revises: 0009
POST /api/v1/runs takes "gradgradcheck": true to have the run check double backward
(torch.autograd.gradgradcheck) as well; the worker that runs it reads the flag from here.
Existing runs did not ask: false.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0010'
down_revision: str | Sequence[str] | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.add_column(sa.Column('gradgradcheck', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.drop_column('gradgradcheck')
