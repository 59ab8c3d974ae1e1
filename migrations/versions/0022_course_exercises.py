"""Course exercises: an exercise owned by a course; versions with their author, source, proof and
publication; proof jobs and preview attempts

Revision ID: 0022
Revises: 0021
A course's staff write exercises of their own (issue 34): `exercises.course_id` names the owner (null:
the built-in catalog). A version records who wrote it and how (`source`), its proof (queued, running,
passed, failed, with the report) and when it last became the published one. Existing versions are
the catalog's, proven (the catalog's tests proved them); each published exercise's current version
was published when it was made. A code version's proof is a job of the grading workers
(`exercise_proofs`), as is a staff member's preview attempt (`preview_attempts`).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0022'
down_revision: str | Sequence[str] | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def _job_columns() -> list[sa.Column]:
    """The columns of a job claimed by the grading workers (models.attempt.GradingJob)."""
    return [
        sa.Column('id', sa.Uuid(), primary_key=True),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('result', JSON_TYPE, nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('graded_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('tries', sa.Integer(), nullable=False),
        sa.Column('lease_owner', sa.String(64), nullable=True),
        sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('request_id', sa.String(64), nullable=True),
    ]


def _version_columns() -> list[sa.Column]:
    return [
        sa.Column('author', sa.String(100), nullable=True),
        sa.Column('source', sa.String(16), nullable=False, server_default='catalog'),
        sa.Column('proof_status', sa.String(16), nullable=False, server_default='passed'),
        sa.Column('proof', JSON_TYPE, nullable=True),
        sa.Column('proven_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('published_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('publish_when_proven', sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column('note', sa.String(255), nullable=True),
    ]


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        # Not a batch (a copy of the table): `exercises` is referenced by most tables.
        op.execute('ALTER TABLE exercises ADD COLUMN course_id INTEGER '
                   'CONSTRAINT fk_exercises_course_id_courses REFERENCES courses (id)')
    else:
        op.add_column('exercises', sa.Column('course_id', sa.Integer(), nullable=True))
        op.create_foreign_key('fk_exercises_course_id_courses', 'exercises', 'courses', ['course_id'], ['id'])
    op.create_index('ix_exercises_course_id', 'exercises', ['course_id'])
    # Added in place, not by a batch (a copy of the table, then DROP TABLE): attempts, runs and
    # regrades reference the versions, so on SQLite the drop fails once they hold rows.
    for column in _version_columns():
        op.add_column('exercise_versions', column)
    op.execute(
        "UPDATE exercise_versions SET published_at = created_at WHERE EXISTS (SELECT 1 FROM exercises AS e "
        "WHERE e.id = exercise_versions.exercise_id AND e.published AND e.current_version = exercise_versions.number)")
    op.create_table(
        'exercise_proofs',
        *_job_columns(),
        sa.Column('exercise_version_id', sa.Integer(), sa.ForeignKey('exercise_versions.id'), nullable=False),
        sa.Column('course_id', sa.Integer(), sa.ForeignKey('courses.id'), nullable=False),
        sa.Column('client_id', sa.Integer(), sa.ForeignKey('api_clients.id'), nullable=False),
        sa.Column('requested_by', sa.String(100), nullable=False),
    )
    op.create_index('ix_exercise_proofs_queue', 'exercise_proofs', ['status', 'created_at'])
    op.create_index('ix_exercise_proofs_course_created', 'exercise_proofs', ['course_id', 'created_at'])
    op.create_index('ix_exercise_proofs_exercise_version_id', 'exercise_proofs', ['exercise_version_id'])
    op.create_table(
        'preview_attempts',
        *_job_columns(),
        sa.Column('course_id', sa.Integer(), sa.ForeignKey('courses.id'), nullable=False),
        sa.Column('client_id', sa.Integer(), sa.ForeignKey('api_clients.id'), nullable=False),
        sa.Column('exercise_version_id', sa.Integer(), sa.ForeignKey('exercise_versions.id'), nullable=False),
        sa.Column('actor', sa.String(255), nullable=False),
        sa.Column('answer', JSON_TYPE, nullable=True),
        sa.Column('code', sa.Text(), nullable=True),
        sa.Column('score', sa.Double(), nullable=True),
        sa.Column('correct', sa.Boolean(), nullable=True),
    )
    op.create_index('ix_preview_attempts_queue', 'preview_attempts', ['status', 'created_at'])
    op.create_index('ix_preview_attempts_course_id', 'preview_attempts', ['course_id'])


def downgrade() -> None:
    op.drop_index('ix_preview_attempts_course_id', table_name='preview_attempts')
    op.drop_index('ix_preview_attempts_queue', table_name='preview_attempts')
    op.drop_table('preview_attempts')
    op.drop_index('ix_exercise_proofs_exercise_version_id', table_name='exercise_proofs')
    op.drop_index('ix_exercise_proofs_course_created', table_name='exercise_proofs')
    op.drop_index('ix_exercise_proofs_queue', table_name='exercise_proofs')
    op.drop_table('exercise_proofs')
    for column in reversed(_version_columns()):
        if op.get_bind().dialect.name == 'sqlite':
            op.execute(f'ALTER TABLE exercise_versions DROP COLUMN {column.name}')
        else:
            op.drop_column('exercise_versions', column.name)
    op.drop_index('ix_exercises_course_id', table_name='exercises')
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE exercises DROP COLUMN course_id')
    else:
        op.drop_constraint('fk_exercises_course_id_courses', 'exercises', type_='foreignkey')
        op.drop_column('exercises', 'course_id')
