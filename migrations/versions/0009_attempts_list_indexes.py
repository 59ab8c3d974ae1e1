"""Indexes for the attempt list filtered by client or by exercise

Revision ID: 0009
Revises: 0008
The admin attempt list (GET /api/v1/admin/attempts) pages with `WHERE <filter> AND (created_at,
id) < (:at, :id) ORDER BY created_at DESC, id DESC LIMIT n`. For ?client= no index led with
client_id and went on with (created_at, id); for ?exercise= the index stopped at created_at, so
a sort was needed. Either way PostgreSQL may walk ix_attempts_created backwards and drop the
rows that do not match, which costs what the filter's share of the table predicts while its
attempts are recent; but a client that stopped sending attempts (a school after its term), or an
exercise no longer given, has every newer row in front of its first page, and that grows with
the table. Measured at 1,000,000 attempts (bench/growth.py): such a client's first page skipped
about 900,000 rows (890,911 buffer pages, 1.7 s of SQL, p50 1.5 s through the API); with
(client_id, created_at, id), 89 pages and 0.4 ms. An 8%-share exercise last attempted before
the newest 214,000 rows: 376 ms; with (exercise_id, created_at, id), 0.1 ms.
"""
from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: str | Sequence[str] | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.create_index('ix_attempts_client_created', ['client_id', 'created_at', 'id'], unique=False)
        batch_op.drop_index('ix_attempts_exercise_created')
        batch_op.create_index('ix_attempts_exercise_created', ['exercise_id', 'created_at', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_attempts_exercise_created')
        batch_op.create_index('ix_attempts_exercise_created', ['exercise_id', 'created_at'], unique=False)
        batch_op.drop_index('ix_attempts_client_created')
