"""Variant preparations: each learner's reference results of a code exercise version, made before
they submit

Revision ID: 0026
Revises: 0025
A learner's first grade of a code exercise version ran the reference twice on their own hidden
inputs; at a deadline a whole class pays it at once. A learner token or an LTI launch that names
the exercise now queues a job for the grading workers (`variant_preparations`, one per version and
learner), which stores the reference's results in `result`; the learner's grades read them there
(service/services/preparations.py).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = '0026'
down_revision: str | Sequence[str] | None = '0025'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    op.create_table(
        'variant_preparations',
        # a grading job's columns (models.attempt.GradingJob), as in 0022
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
        sa.Column('exercise_version_id', sa.Integer(), sa.ForeignKey('exercise_versions.id'), nullable=False),
        sa.Column('client_id', sa.Integer(), sa.ForeignKey('api_clients.id'), nullable=False),
        sa.Column('learner', sa.String(255), nullable=False),
        sa.UniqueConstraint('exercise_version_id', 'client_id', 'learner', name='uq_variant_preparations_variant'),
    )
    op.create_index('ix_variant_preparations_queue', 'variant_preparations', ['status', 'created_at'])


def downgrade() -> None:
    op.drop_index('ix_variant_preparations_queue', table_name='variant_preparations')
    op.drop_table('variant_preparations')
