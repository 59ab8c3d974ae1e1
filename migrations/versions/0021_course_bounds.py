"""A course's bounds: its attempts numbered and its runs counted apart, its links its own; a
registration link's failed tries

Revision ID: 0021
Revises: 0020
A learner's attempts count against an assignment's rules within the course they were made in
(issue 33): a course key's learner token used up a learner's attempts of the client's own use of an
exercise, and of every other course without a link. The attempts' number sequence gains the course
(no existing row breaks it: the old key was a part of the new one), runs record their course, and
a resource link belongs to the course it was first launched in: the same link id launched from
another course (an LMS's course copy keeps link ids) makes a link of that course, where it moved
the first one before. A registration link counts its failed tries, and its last uses it up: a
leaked code probed the service's own network for as long as the link lasted.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0021'
down_revision: str | Sequence[str] | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_NUMBER_KEY = [sa.text('client_id'), sa.text('exercise_id'), sa.text('coalesce(lti_link_id, 0)'), sa.text('learner'),
                  sa.text('attempt_number')]
NUMBER_KEY = [sa.text('client_id'), sa.text('exercise_id'), sa.text('coalesce(lti_link_id, 0)'),
              sa.text('coalesce(course_id, 0)'), sa.text('learner'), sa.text('attempt_number')]


def upgrade() -> None:
    # Plain statements, not batches, on `attempts` and `runs`: a copy of `attempts` on SQLite would
    # lose its expression index (0015).
    op.drop_index('ux_attempts_number', table_name='attempts')
    op.create_index('ux_attempts_number', 'attempts', NUMBER_KEY, unique=True)
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE runs ADD COLUMN course_id INTEGER '
                   'CONSTRAINT fk_runs_course_id_courses REFERENCES courses (id)')
    else:
        op.add_column('runs', sa.Column('course_id', sa.Integer(), nullable=True))
        op.create_foreign_key('fk_runs_course_id_courses', 'runs', 'courses', ['course_id'], ['id'])
    with op.batch_alter_table('lti_resource_links') as batch_op:
        batch_op.drop_constraint('uq_lti_resource_links_platform_id_resource_link_id', type_='unique')
        batch_op.create_unique_constraint('uq_lti_resource_links_platform_id_course_id_resource_link_id',
                                          ['platform_id', 'course_id', 'resource_link_id'])
    with op.batch_alter_table('lti_registration_links') as batch_op:
        batch_op.add_column(sa.Column('failed_tries', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('lti_registration_links') as batch_op:
        batch_op.drop_column('failed_tries')
    with op.batch_alter_table('lti_resource_links') as batch_op:
        batch_op.drop_constraint('uq_lti_resource_links_platform_id_course_id_resource_link_id', type_='unique')
        batch_op.create_unique_constraint('uq_lti_resource_links_platform_id_resource_link_id',
                                          ['platform_id', 'resource_link_id'])
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE runs DROP COLUMN course_id')
    else:
        op.drop_constraint('fk_runs_course_id_courses', 'runs', type_='foreignkey')
        op.drop_column('runs', 'course_id')
    op.drop_index('ux_attempts_number', table_name='attempts')
    op.create_index('ux_attempts_number', 'attempts', OLD_NUMBER_KEY, unique=True)
