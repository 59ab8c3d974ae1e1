"""The learner history's index in the history's whole order

Revision ID: 0020
Revises: 0019
A learner's history is read newest first, ties by id (service/services/attempts.py
learner_attempts). `ix_attempts_learner_history` (client, learner, created_at) left the id out,
and SQLite's planner (no statistics) read the history by `ix_attempts_client_created` instead, for
its order: every attempt of the client, newest first, until it had found a page of the learner's
(after 3,000 attempts a history cost 4.9 ms of CPU, growing with the table). With the id the index
gives the order and the learner both. A plain DROP and CREATE INDEX, as 0019's.
"""
from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0020'
down_revision: str | Sequence[str] | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Not a batch on SQLite: a copy of `attempts` would lose ux_attempts_number.
    op.drop_index('ix_attempts_learner_history', table_name='attempts')
    op.create_index('ix_attempts_learner_history', 'attempts', ['client_id', 'learner', 'created_at', 'id'])


def downgrade() -> None:
    op.drop_index('ix_attempts_learner_history', table_name='attempts')
    op.create_index('ix_attempts_learner_history', 'attempts', ['client_id', 'learner', 'created_at'])
