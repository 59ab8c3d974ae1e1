"""Assignments of several exercises

Revision ID: 0018
Revises: 0017
(Being written.)
"""
from collections.abc import Sequence

# revision identifiers, used by Alembic.
revision: str = '0018'
down_revision: str | Sequence[str] | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
