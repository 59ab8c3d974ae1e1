"""Migrations are the only way tables exist; they match the models and run both ways."""

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from service import migrate
from service.config import Settings
from service.models import Base


def test_upgrade_downgrade_upgrade_matches_the_models(empty_database):
    _backend, url = empty_database
    url = Settings.from_env({}, database_url=url).sqlalchemy_url
    migrate.upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
            assert diff == [], diff
            assert migrate.current_revision(conn) == migrate.head_revision()
        migrate.downgrade(url, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        migrate.upgrade(url)
        assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
        migrate.downgrade(url, "base")
    finally:
        engine.dispose()
