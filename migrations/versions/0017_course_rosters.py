"""Course rosters from the Names and Role Provisioning Service

Revision ID: 0017
Revises: 0016
(Being written.)
"""
from collections.abc import Sequence

# revision identifiers, used by Alembic.
revision: str = '0017'
down_revision: str | Sequence[str] | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
