"""Initial schema

Revision ID: 0001
Revises:
Tables for API clients, exercises and their versions, attempts and idempotency records.

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# Migrations keep their own copy of column types: later model changes must not rewrite history.
JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('api_clients',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('key_prefix', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_clients')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_clients_key_hash')),
    sa.UniqueConstraint('name', name=op.f('uq_api_clients_name'))
    )
    op.create_table('exercises',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('difficulty', sa.Integer(), nullable=False),
    sa.Column('published', sa.Boolean(), nullable=False),
    sa.Column('current_version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_exercises')),
    sa.UniqueConstraint('slug', name=op.f('uq_exercises_slug'))
    )
    with op.batch_alter_table('exercises', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_exercises_kind'), ['kind'], unique=False)

    op.create_table('exercise_topics',
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('topic', sa.String(length=40), nullable=False),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_exercise_topics_exercise_id_exercises'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('exercise_id', 'topic', name=op.f('pk_exercise_topics'))
    )
    with op.batch_alter_table('exercise_topics', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_exercise_topics_topic'), ['topic'], unique=False)

    op.create_table('exercise_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('digest', sa.String(length=64), nullable=False),
    sa.Column('content', JSON_TYPE, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_exercise_versions_exercise_id_exercises')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_exercise_versions')),
    sa.UniqueConstraint('exercise_id', 'digest', name=op.f('uq_exercise_versions_exercise_id_digest')),
    sa.UniqueConstraint('exercise_id', 'number', name=op.f('uq_exercise_versions_exercise_id_number'))
    )
    op.create_table('idempotency_records',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('client_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('request_digest', sa.String(length=64), nullable=False),
    sa.Column('response_status', sa.Integer(), nullable=False),
    sa.Column('response_body', JSON_TYPE, nullable=False),
    sa.Column('location', sa.String(length=255), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['client_id'], ['api_clients.id'], name=op.f('fk_idempotency_records_client_id_api_clients')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_records')),
    sa.UniqueConstraint('client_id', 'key', name=op.f('uq_idempotency_records_client_id_key'))
    )
    op.create_table('attempts',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('client_id', sa.Integer(), nullable=False),
    sa.Column('learner', sa.String(length=255), nullable=False),
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('exercise_version_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('answer', JSON_TYPE, nullable=False),
    sa.Column('score', sa.Double(), nullable=True),
    sa.Column('correct', sa.Boolean(), nullable=True),
    sa.Column('result', JSON_TYPE, nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('graded_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['client_id'], ['api_clients.id'], name=op.f('fk_attempts_client_id_api_clients')),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_attempts_exercise_id_exercises')),
    sa.ForeignKeyConstraint(['exercise_version_id'], ['exercise_versions.id'],
                            name=op.f('fk_attempts_exercise_version_id_exercise_versions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_attempts'))
    )
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.create_index('ix_attempts_exercise_created', ['exercise_id', 'created_at'], unique=False)
        batch_op.create_index('ix_attempts_learner_history', ['client_id', 'learner', 'created_at'], unique=False)



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_index('ix_attempts_learner_history')
        batch_op.drop_index('ix_attempts_exercise_created')

    op.drop_table('attempts')
    op.drop_table('idempotency_records')
    op.drop_table('exercise_versions')
    with op.batch_alter_table('exercise_topics', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_exercise_topics_topic'))

    op.drop_table('exercise_topics')
    with op.batch_alter_table('exercises', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_exercises_kind'))

    op.drop_table('exercises')
    op.drop_table('api_clients')
