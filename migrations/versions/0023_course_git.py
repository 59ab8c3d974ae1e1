"""A course's exercises synced from a git repository

Revision ID: 0023
Revises: 0022
course_git_repos holds the repository a course's staff named (URL, branch, folder, the deploy token
and the push webhook's secret sealed); git_syncs records each sync, queued by "Sync now" or a push
and run by the workers' supervisor, with what became of each exercise (service/gitsync/).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0023'
down_revision: str | Sequence[str] | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    op.create_table(
        'course_git_repos',
        sa.Column('course_id', sa.Integer(), sa.ForeignKey('courses.id', ondelete='CASCADE'), primary_key=True),
        sa.Column('url', sa.String(2048), nullable=False),
        sa.Column('branch', sa.String(255), nullable=False),
        sa.Column('path', sa.String(255), nullable=False),
        sa.Column('token_sealed', sa.Text(), nullable=True),
        sa.Column('webhook_secret_sealed', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        'git_syncs',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('course_id', sa.Integer(), sa.ForeignKey('courses.id', ondelete='CASCADE'), nullable=False),
        sa.Column('requested_by', sa.String(100), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('commit', sa.String(64), nullable=True),
        sa.Column('error', sa.String(500), nullable=True),
        sa.Column('queued_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('lease_until', sa.DateTime(timezone=True), nullable=True),
        sa.Column('exercises', JSON_TYPE, nullable=False),
    )
    op.create_index('ix_git_syncs_course_id_id', 'git_syncs', ['course_id', 'id'])
    op.create_index('ix_git_syncs_status_lease_until', 'git_syncs', ['status', 'lease_until'])


def downgrade() -> None:
    op.drop_index('ix_git_syncs_status_lease_until', table_name='git_syncs')
    op.drop_index('ix_git_syncs_course_id_id', table_name='git_syncs')
    op.drop_table('git_syncs')
    op.drop_table('course_git_repos')
