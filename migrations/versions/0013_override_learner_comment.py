"""An override's comment for the learner

Revision ID: 0013
Revises: 0012
An override's `reason` is for the audit log, which staff read; `learner_comment`, when the
instructor writes one, is what the learner is told, and goes to the LMS with the score (AGS
`comment`). Existing overrides have none: their reasons were never meant for learners.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0013'
down_revision: str | Sequence[str] | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('grade_overrides') as batch_op:
        batch_op.add_column(sa.Column('learner_comment', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('grade_overrides') as batch_op:
        batch_op.drop_column('learner_comment')
