"""Assignments of several exercises

Revision ID: 0018
Revises: 0017
An LTI resource link made by Deep Linking may be an assignment of several exercises, in order, with
one gradebook column: `lti_link_exercises` lists them (position, exercise, points), and the link's
`scoring` says how their scores make the assignment's (mean, or sum of points; null: a link of one
exercise, as before). `exercise_id` stays the link's first exercise. The link's `title` is the one the
LMS sends at launch (the title the instructor gave it).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0018'
down_revision: str | Sequence[str] | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns: a plain ADD COLUMN on every database, no copy of the table.
    op.add_column('lti_resource_links', sa.Column('scoring', sa.String(8), nullable=True))
    op.add_column('lti_resource_links', sa.Column('title', sa.String(255), nullable=True))
    op.create_table(
        'lti_link_exercises',
        sa.Column('link_id', sa.Integer(), sa.ForeignKey('lti_resource_links.id'), primary_key=True),
        sa.Column('position', sa.Integer(), primary_key=True),
        sa.Column('exercise_id', sa.Integer(), sa.ForeignKey('exercises.id'), nullable=False),
        sa.Column('points', sa.Double(), nullable=False),
        sa.UniqueConstraint('link_id', 'exercise_id'),
    )


def downgrade() -> None:
    op.drop_table('lti_link_exercises')
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE lti_resource_links DROP COLUMN title')
        op.execute('ALTER TABLE lti_resource_links DROP COLUMN scoring')
    else:
        op.drop_column('lti_resource_links', 'title')
        op.drop_column('lti_resource_links', 'scoring')
