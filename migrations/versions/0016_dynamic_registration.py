"""Dynamic registration of LTI platforms

Revision ID: 0016
Revises: 0015
An LMS registers itself through a registration link an admin made (LTI Dynamic Registration):
the links (their codes stored hashed, one use each, an expiry), and the platforms' approval
(null: pending, registered while LTI_REGISTRATION_APPROVAL is on). Platforms registered before
were registered by an admin: approved when they were made.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0016'
down_revision: str | Sequence[str] | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('lti_platforms') as batch_op:
        batch_op.add_column(sa.Column('approved_at', sa.DateTime(timezone=True), nullable=True))
    op.execute('UPDATE lti_platforms SET approved_at = created_at')
    op.create_table(
        'lti_registration_links',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('code_hash', sa.String(64), nullable=False, unique=True),
        sa.Column('label', sa.String(100), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('used_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('platform_id', sa.Integer(), sa.ForeignKey('lti_platforms.id'), nullable=True),
    )


def downgrade() -> None:
    op.drop_table('lti_registration_links')
    with op.batch_alter_table('lti_platforms') as batch_op:
        batch_op.drop_column('approved_at')
