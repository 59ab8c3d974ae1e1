"""LTI 1.3 platforms, tool keys, nonces and resource links; score passbacks; webhooks

Revision ID: 0004
Revises: 0003
Platforms an admin registered, the tool's key pairs, used launch nonces, and the resource links
launches came from (`attempts.lti_link_id` ties an attempt to one). `score_passbacks` and
`webhook_deliveries` are written with each attempt event and sent by the outbound runner.

"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

# revision identifiers, used by Alembic.
revision: str = '0004'
down_revision: str | Sequence[str] | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('lti_tool_keys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kid', sa.String(length=64), nullable=False),
    sa.Column('sealed_private_key', sa.Text(), nullable=False),
    sa.Column('public_jwk', JSON_TYPE, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('retired_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_tool_keys')),
    sa.UniqueConstraint('kid', name=op.f('uq_lti_tool_keys_kid'))
    )
    op.create_table('lti_platforms',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('issuer', sa.String(length=255), nullable=False),
    sa.Column('client_id', sa.String(length=255), nullable=False),
    sa.Column('deployment_ids', JSON_TYPE, nullable=False),
    sa.Column('auth_login_url', sa.String(length=2048), nullable=False),
    sa.Column('auth_token_url', sa.String(length=2048), nullable=False),
    sa.Column('jwks_url', sa.String(length=2048), nullable=False),
    sa.Column('api_client_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('disabled_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['api_client_id'], ['api_clients.id'], name=op.f('fk_lti_platforms_api_client_id_api_clients')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_platforms')),
    sa.UniqueConstraint('api_client_id', name=op.f('uq_lti_platforms_api_client_id')),
    sa.UniqueConstraint('issuer', 'client_id', name=op.f('uq_lti_platforms_issuer_client_id'))
    )
    op.create_table('webhook_endpoints',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('client_id', sa.Integer(), nullable=False),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('sealed_secret', sa.Text(), nullable=False),
    sa.Column('description', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('disabled_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['client_id'], ['api_clients.id'], name=op.f('fk_webhook_endpoints_client_id_api_clients')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_endpoints'))
    )
    with op.batch_alter_table('webhook_endpoints', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_endpoints_client_id'), ['client_id'], unique=False)

    op.create_table('lti_nonces',
    sa.Column('platform_id', sa.Integer(), nullable=False),
    sa.Column('nonce', sa.String(length=255), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], name=op.f('fk_lti_nonces_platform_id_lti_platforms')),
    sa.PrimaryKeyConstraint('platform_id', 'nonce', name=op.f('pk_lti_nonces'))
    )
    with op.batch_alter_table('lti_nonces', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lti_nonces_expires_at'), ['expires_at'], unique=False)

    op.create_table('lti_resource_links',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('platform_id', sa.Integer(), nullable=False),
    sa.Column('deployment_id', sa.String(length=255), nullable=False),
    sa.Column('resource_link_id', sa.String(length=255), nullable=False),
    sa.Column('context_id', sa.String(length=255), nullable=True),
    sa.Column('exercise_id', sa.Integer(), nullable=False),
    sa.Column('lineitem_url', sa.String(length=2048), nullable=True),
    sa.Column('lineitems_url', sa.String(length=2048), nullable=True),
    sa.Column('ags_scopes', JSON_TYPE, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['exercise_id'], ['exercises.id'], name=op.f('fk_lti_resource_links_exercise_id_exercises')),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'], name=op.f('fk_lti_resource_links_platform_id_lti_platforms')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_resource_links')),
    sa.UniqueConstraint('platform_id', 'resource_link_id', name=op.f('uq_lti_resource_links_platform_id_resource_link_id'))
    )
    op.create_table('score_passbacks',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('attempt_id', sa.Uuid(), nullable=False),
    sa.Column('event_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('link_id', sa.Integer(), nullable=False),
    sa.Column('sent_score', JSON_TYPE, nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('tries', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_status_code', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.String(length=500), nullable=True),
    sa.ForeignKeyConstraint(['attempt_id'], ['attempts.id'], name=op.f('fk_score_passbacks_attempt_id_attempts')),
    sa.ForeignKeyConstraint(['event_id'], ['attempt_events.id'], name=op.f('fk_score_passbacks_event_id_attempt_events')),
    sa.ForeignKeyConstraint(['link_id'], ['lti_resource_links.id'], name=op.f('fk_score_passbacks_link_id_lti_resource_links')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_score_passbacks')),
    sa.UniqueConstraint('event_id', name=op.f('uq_score_passbacks_event_id'))
    )
    with op.batch_alter_table('score_passbacks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_score_passbacks_attempt_id'), ['attempt_id'], unique=False)
        batch_op.create_index('ix_score_passbacks_due', ['status', 'next_attempt_at'], unique=False)

    op.create_table('webhook_deliveries',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('endpoint_id', sa.Integer(), nullable=False),
    sa.Column('event_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('tries', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_status_code', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.String(length=500), nullable=True),
    sa.ForeignKeyConstraint(['endpoint_id'], ['webhook_endpoints.id'],
                            name=op.f('fk_webhook_deliveries_endpoint_id_webhook_endpoints')),
    sa.ForeignKeyConstraint(['event_id'], ['attempt_events.id'], name=op.f('fk_webhook_deliveries_event_id_attempt_events')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries')),
    sa.UniqueConstraint('endpoint_id', 'event_id', name=op.f('uq_webhook_deliveries_endpoint_id_event_id'))
    )
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_webhook_deliveries_due', ['status', 'next_attempt_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_event_id'), ['event_id'], unique=False)

    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lti_link_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_attempts_lti_link_id_lti_resource_links'), 'lti_resource_links',
                                    ['lti_link_id'], ['id'])



def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_attempts_lti_link_id_lti_resource_links'), type_='foreignkey')
        batch_op.drop_column('lti_link_id')

    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_event_id'))
        batch_op.drop_index('ix_webhook_deliveries_due')

    op.drop_table('webhook_deliveries')
    with op.batch_alter_table('score_passbacks', schema=None) as batch_op:
        batch_op.drop_index('ix_score_passbacks_due')
        batch_op.drop_index(batch_op.f('ix_score_passbacks_attempt_id'))

    op.drop_table('score_passbacks')
    op.drop_table('lti_resource_links')
    with op.batch_alter_table('lti_nonces', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lti_nonces_expires_at'))

    op.drop_table('lti_nonces')
    with op.batch_alter_table('webhook_endpoints', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_endpoints_client_id'))

    op.drop_table('webhook_endpoints')
    op.drop_table('lti_platforms')
    op.drop_table('lti_tool_keys')
