"""The optional checks a run asks for, beside gradgradcheck

Revision ID: 0025
Revises: 0024
POST /api/v1/runs takes "forward_ad": true to have the run check the Function's jvp (forward mode),
"in_place": true to check a Function that changes its input (called on clones), and "vmap": true
to check it under torch.func.vmap (and backward for a batch of grad_outputs), as it takes
"gradgradcheck" (0010); the worker that runs it reads the flags from here. A run
of an exercise also makes the optional checks the exercise's [code] table asks for.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0025'
down_revision: str | Sequence[str] | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPTIONS = ('forward_ad', 'in_place', 'vmap')


def upgrade() -> None:
    # Added in place, not by a batch (a copy of the table, whose foreign keys SQLite would then
    # refuse to drop in older revisions' downgrades).
    for name in OPTIONS:
        op.add_column('runs', sa.Column(name, sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    for name in OPTIONS:
        if op.get_bind().dialect.name == 'sqlite':
            op.execute(f'ALTER TABLE runs DROP COLUMN {name}')
        else:
            op.drop_column('runs', name)
