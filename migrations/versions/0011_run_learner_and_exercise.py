"""A run's learner and exercise

Revision ID: 0011
Revises: 0010
Runs made with a learner token record their learner, who alone (with the client's key) sees
them; a run that names an exercise records it (it ran with that exercise's entry point and
sample inputs). Existing runs were made with API keys outside any exercise: both stay null.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: str | Sequence[str] | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.add_column(sa.Column('learner', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('exercise_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(op.f('fk_runs_exercise_id_exercises'), 'exercises', ['exercise_id'], ['id'])


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.drop_constraint(op.f('fk_runs_exercise_id_exercises'), type_='foreignkey')
        batch_op.drop_column('exercise_id')
        batch_op.drop_column('learner')
