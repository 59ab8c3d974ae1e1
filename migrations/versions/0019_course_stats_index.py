"""An index for a course's statistics

Revision ID: 0019
Revises: 0018
A course's statistics are counted from its attempts when asked (service/services/stats.py). Their
statements read the course's attempts at an exercise grouped by learner in submission order:
`ix_attempts_course_exercise` (course, exercise, client, learner, created_at, id) with the grade's
columns included on PostgreSQL is an index-only scan for each of them. Without it each attempt
read is a heap page (a course's attempts are spread over the table): a course of 3,000 learners
took 10 times longer (docs/performance.md). Built with a plain CREATE INDEX, like 0015's (writes
to attempts wait for it: about 3 s a million attempts).
"""
from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0019'
down_revision: str | Sequence[str] | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ['course_id', 'exercise_id', 'client_id', 'learner', 'created_at', 'id']
INCLUDE = ['status', 'verdict', 'score', 'grader_score', 'likely_cause']


def upgrade() -> None:
    # Not a batch on SQLite: a plain CREATE INDEX (a copy of `attempts` would lose ux_attempts_number).
    op.create_index('ix_attempts_course_exercise', 'attempts', COLUMNS, postgresql_include=INCLUDE)


def downgrade() -> None:
    op.drop_index('ix_attempts_course_exercise', table_name='attempts')
