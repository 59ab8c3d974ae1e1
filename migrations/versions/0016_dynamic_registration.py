"""Dynamic registration of LTI platforms

Revision ID: 0016
Revises: 0015
(Being written.)
"""
from collections.abc import Sequence

# revision identifiers, used by Alembic.
revision: str = '0016'
down_revision: str | Sequence[str] | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
