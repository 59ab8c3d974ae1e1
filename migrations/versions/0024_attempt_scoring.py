"""The scoring policy an attempt was submitted under

Revision ID: 0024
Revises: 0023
attempts.scoring holds the `scoring` rule (and its `scoring_cap`) in force when the attempt was made
({"policy", "cap"}; service/scoring.py), as attempts.penalties holds its penalties: a regrade scores
the attempt under it, not under today's rules. Existing attempts keep null, which is `partial`: the
sum of the passed checks' weights they were graded under.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0024'
down_revision: str | Sequence[str] | None = '0023'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    # Added in place, not by a batch (a copy of the table): events, deliveries and regrade items
    # reference the attempts.
    op.add_column('attempts', sa.Column('scoring', JSON_TYPE, nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE attempts DROP COLUMN scoring')
    else:
        op.drop_column('attempts', 'scoring')
