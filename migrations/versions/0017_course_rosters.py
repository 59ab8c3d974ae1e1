"""Course rosters from the Names and Role Provisioning Service

Revision ID: 0017
Revises: 0016
A course of a platform granting NRPS keeps its memberships URL and when its roster is next due,
was last synced, last failed and why; course_members holds who is in each course by name
(service/models/course.py, service/lti/roster.py). Members who left are kept, marked.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0017'
down_revision: str | Sequence[str] | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
COURSE_COLUMNS = ('memberships_url', 'roster_sync_due_at', 'roster_synced_at', 'roster_failed_at', 'roster_error')


def upgrade() -> None:
    # Nullable columns without a foreign key: a plain ALTER TABLE ADD COLUMN on SQLite too.
    op.add_column('courses', sa.Column('memberships_url', sa.String(2048), nullable=True))
    op.add_column('courses', sa.Column('roster_sync_due_at', sa.DateTime(timezone=True), nullable=True))
    op.add_column('courses', sa.Column('roster_synced_at', sa.DateTime(timezone=True), nullable=True))
    op.add_column('courses', sa.Column('roster_failed_at', sa.DateTime(timezone=True), nullable=True))
    op.add_column('courses', sa.Column('roster_error', sa.String(500), nullable=True))
    op.create_index('ix_courses_roster_sync_due_at', 'courses', ['roster_sync_due_at'])
    op.create_table(
        'course_members',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('course_id', sa.Integer(), sa.ForeignKey('courses.id'), nullable=False),
        sa.Column('learner', sa.String(255), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('given_name', sa.String(255), nullable=True),
        sa.Column('family_name', sa.String(255), nullable=True),
        sa.Column('email', sa.String(320), nullable=True),
        sa.Column('roles', JSON_TYPE, nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('first_seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('left_at', sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint('course_id', 'learner'),
    )
    op.create_index('ix_course_members_learner', 'course_members', ['learner'])


def downgrade() -> None:
    op.drop_index('ix_course_members_learner', table_name='course_members')
    op.drop_table('course_members')
    op.drop_index('ix_courses_roster_sync_due_at', table_name='courses')
    for column in reversed(COURSE_COLUMNS):
        op.drop_column('courses', column)  # SQLite 3.35+ drops a plain column in place
