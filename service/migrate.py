"""Alembic driven from the service: the only way tables come to exist, tests included.

The web process reads the schema's revision for its readiness probe without importing alembic
(with mako and pygments, about 10 MB of a web worker's RSS): the current revision is one row of
`alembic_version`, the head is read from the migration files' `revision` and `down_revision`.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from .config import PROJECT_ROOT

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
VERSION_TABLE = "alembic_version"


def alembic_config(database_url: str) -> Config:
    from alembic.config import Config

    config = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(database_url), revision)


def _revision_ids(path: Path) -> tuple[str | None, str | None]:
    """A migration file's module-level `revision` and `down_revision` (literals, as alembic writes them)."""
    found: dict[str, str | None] = {}
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        target, value = ((node.target, node.value) if isinstance(node, ast.AnnAssign)
                         else (node.targets[0], node.value) if isinstance(node, ast.Assign) and len(node.targets) == 1
                         else (None, None))
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision") and value is not None:
            found[target.id] = ast.literal_eval(value)
    return found.get("revision"), found.get("down_revision")


@functools.cache
def head_revision(versions_dir: Path = MIGRATIONS_DIR / "versions") -> str:
    """The one revision no other migration revises (the history is one line: no branches, no merges)."""
    revisions = {rev: down for rev, down in map(_revision_ids, versions_dir.glob("*.py")) if rev is not None}
    heads = set(revisions) - set(revisions.values())
    if len(heads) != 1:  # none: no migrations found (an unmigrated database would look at head)
        raise RuntimeError(f"the migrations in {versions_dir} have {len(heads)} heads: {sorted(map(str, heads))}")
    return heads.pop()


def current_revision(connection: Connection) -> str | None:
    """The revision the database's schema is at (None: not migrated)."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    return connection.scalar(text(f"SELECT version_num FROM {VERSION_TABLE}"))
