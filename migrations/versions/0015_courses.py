"""Courses: attempts, links and keys belong to a course

Revision ID: 0015
Revises: 0014
A course is an LTI context of a platform, or a client's own course made through the API
(service/models/course.py). Existing links get the course of their context (a link launched
without one is a course of its own), and existing attempts the course of their link. Course keys
are keys of one course's staff, stored hashed. A regrade by a course's staff regrades that course's
attempts only.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0015'
down_revision: str | Sequence[str] | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _add_course_column(table: str) -> None:
    if op.get_bind().dialect.name == 'sqlite':
        # Not a batch (a copy of the table): reflecting `attempts`, itself or through a foreign key,
        # would lose its expression index ux_attempts_number.
        op.execute(f'ALTER TABLE {table} ADD COLUMN course_id INTEGER '
                   f'CONSTRAINT fk_{table}_course_id_courses REFERENCES courses (id)')
    else:
        op.add_column(table, sa.Column('course_id', sa.Integer(), nullable=True))
        op.create_foreign_key(f'fk_{table}_course_id_courses', table, 'courses', ['course_id'], ['id'])


def _drop_course_column(table: str) -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.execute(f'ALTER TABLE {table} DROP COLUMN course_id')
    else:
        op.drop_constraint(f'fk_{table}_course_id_courses', table, type_='foreignkey')
        op.drop_column(table, 'course_id')


def upgrade() -> None:
    op.create_table(
        'courses',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('client_id', sa.Integer(), sa.ForeignKey('api_clients.id'), nullable=False),
        sa.Column('platform_id', sa.Integer(), sa.ForeignKey('lti_platforms.id'), nullable=True),
        sa.Column('external_id', sa.String(255), nullable=False),
        sa.Column('title', sa.String(255), nullable=False),
        sa.Column('label', sa.String(255), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint('client_id', 'external_id'),
    )
    op.create_table(
        'course_keys',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('course_id', sa.Integer(), sa.ForeignKey('courses.id'), nullable=False),
        sa.Column('name', sa.String(100), nullable=False),
        sa.Column('key_hash', sa.String(64), nullable=False, unique=True),
        sa.Column('key_prefix', sa.String(16), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('created_by', sa.String(100), nullable=False),
        sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index('ix_course_keys_course_id', 'course_keys', ['course_id'])
    with op.batch_alter_table('lti_resource_links') as batch_op:
        batch_op.add_column(sa.Column('course_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_lti_resource_links_course_id_courses', 'courses', ['course_id'], ['id'])
    _add_course_column('attempts')
    op.create_index('ix_attempts_course_created', 'attempts', ['course_id', 'created_at', 'id'])
    _add_course_column('regrades')
    # Existing links' courses: one per platform and context, or per link launched without one.
    op.execute(
        "INSERT INTO courses (client_id, platform_id, external_id, title, created_at, updated_at) "
        "SELECT p.api_client_id, p.id, coalesce(l.context_id, 'resource-link:' || l.resource_link_id), "
        "coalesce(l.context_id, 'resource-link:' || l.resource_link_id), min(l.created_at), max(l.updated_at) "
        "FROM lti_resource_links AS l JOIN lti_platforms AS p ON p.id = l.platform_id "
        "GROUP BY p.api_client_id, p.id, coalesce(l.context_id, 'resource-link:' || l.resource_link_id)")
    op.execute(
        "UPDATE lti_resource_links SET course_id = (SELECT c.id FROM courses AS c JOIN lti_platforms AS p "
        "ON p.api_client_id = c.client_id WHERE p.id = lti_resource_links.platform_id AND c.external_id = "
        "coalesce(lti_resource_links.context_id, 'resource-link:' || lti_resource_links.resource_link_id))")
    op.execute(
        "UPDATE attempts SET course_id = (SELECT l.course_id FROM lti_resource_links AS l "
        "WHERE l.id = attempts.lti_link_id) WHERE lti_link_id IS NOT NULL")


def downgrade() -> None:
    op.drop_index('ix_attempts_course_created', table_name='attempts')
    _drop_course_column('attempts')
    _drop_course_column('regrades')
    with op.batch_alter_table('lti_resource_links') as batch_op:
        batch_op.drop_constraint('fk_lti_resource_links_course_id_courses', type_='foreignkey')
        batch_op.drop_column('course_id')
    op.drop_index('ix_course_keys_course_id', table_name='course_keys')
    op.drop_table('course_keys')
    op.drop_table('courses')
