"""A run's request to check double backward

Revision ID: 0010
Revises: 0009
POST /api/v1/runs takes "gradgradcheck": true to have the run check double backward
(torch.autograd.gradgradcheck) as well; the worker that runs it reads the flag from here.
Existing runs did not ask: false.
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.add_column(sa.Column('gradgradcheck', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.drop_column('gradgradcheck')
