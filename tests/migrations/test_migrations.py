"""Migrations are the only way tables exist; they match the models and run both ways."""

import warnings

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from service import migrate
from service.config import Settings
from service.models import Base

# Unique indexes over expressions (coalesce: a null link or learner is one scope), which neither
# database's reflection reads back: checked by name instead.
EXPRESSION_INDEXES = {"ux_attempts_number", "ux_assessment_rules_scope"}


def _expression_index_missing(change) -> bool:
    return change[0] == "add_index" and change[1].name in EXPRESSION_INDEXES


def _index_names(conn) -> set[str]:
    if conn.dialect.name == "sqlite":
        return set(conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index'").scalars())
    return set(conn.exec_driver_sql("SELECT indexname FROM pg_indexes").scalars())


def test_upgrade_downgrade_upgrade_matches_the_models(empty_database):
    _backend, url = empty_database
    url = Settings.from_env({}, database_url=url).sqlalchemy_url
    migrate.upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn, warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
            warnings.filterwarnings("ignore", "autogenerate skipping metadata-specified expression-based index")
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
            assert [change for change in diff if not _expression_index_missing(change)] == [], diff
            assert EXPRESSION_INDEXES <= _index_names(conn)
            assert migrate.current_revision(conn) == migrate.head_revision()
        migrate.downgrade(url, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        with engine.connect() as conn:
            assert migrate.current_revision(conn) is None
        migrate.upgrade(url)
        assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
        migrate.downgrade(url, "base")
    finally:
        engine.dispose()


def test_the_head_read_from_the_files_is_alembics(tmp_path):
    from alembic.script import ScriptDirectory

    assert migrate.head_revision() == ScriptDirectory.from_config(migrate.alembic_config("")).get_current_head()
    # Two migrations revising the same one: two heads, refused rather than one picked; and none.
    two, one = tmp_path / "two", tmp_path / "one"
    for folder, files in ((two, {"0001": "None", "a": "'0001'", "b": "'0001'"}), (one, {"0001": "None", "a": "'0001'"})):
        folder.mkdir()
        for name, down in files.items():
            (folder / f"{name}.py").write_text(f"revision: str = '{name}'\ndown_revision = {down}\n")
    with pytest.raises(RuntimeError, match="2 heads"):
        migrate.head_revision(two)
    with pytest.raises(RuntimeError, match="0 heads"):
        migrate.head_revision(tmp_path)
    assert migrate.head_revision(one) == "a"


def test_runs_made_before_0011_stay_the_client_keys_runs(empty_database):
    """0011 adds a run's learner and exercise: runs already made (with API keys, outside any
    exercise) keep every value and have neither; a downgrade keeps them too."""
    import uuid

    from sqlalchemy import Column, MetaData, Table, Uuid, select

    from service.models.base import utcnow

    _backend, url = empty_database
    url = Settings.from_env({}, database_url=url).sqlalchemy_url
    migrate.downgrade(url, "base")
    migrate.upgrade(url, "0010")
    engine = create_engine(url)
    try:
        # The tables as they are at 0010, not as the models have them now.
        clients = Table("api_clients", MetaData(), autoload_with=engine)
        runs = Table("runs", MetaData(), Column("id", Uuid, primary_key=True), autoload_with=engine)
        run_id, now = uuid.uuid4(), utcnow()
        with engine.begin() as conn:
            client_id = conn.execute(clients.insert().values(
                name="lms", role="client", key_hash="0" * 64, key_prefix="gq_x", created_at=now)).inserted_primary_key[0]
            conn.execute(runs.insert().values(id=run_id, client_id=client_id, code="print(1)", status="graded",
                                              result={"output": {"stdout": "1\n"}}, created_at=now, tries=1))
        migrate.upgrade(url, "0011")
        upgraded = Table("runs", MetaData(), Column("id", Uuid, primary_key=True), autoload_with=engine)
        with engine.connect() as conn:
            row = conn.execute(select(upgraded).where(upgraded.c.id == run_id)).one()
        assert (row.learner, row.exercise_id, row.client_id, row.code, row.status) == (
            None, None, client_id, "print(1)", "graded")
        migrate.downgrade(url, "0010")
        with engine.connect() as conn:
            assert conn.execute(select(runs.c.code).where(runs.c.id == run_id)).scalar_one() == "print(1)"
            assert "learner" not in {c["name"] for c in inspect(engine).get_columns("runs")}
    finally:
        engine.dispose()
        migrate.downgrade(url, "base")


def test_versions_before_0022_are_the_catalogs_proven_and_the_current_published(empty_database):
    """0022: existing versions came from the catalog and are proven; a published exercise's current
    version was published when it was made, an older one or an unpublished exercise's never was."""
    from datetime import timedelta

    from sqlalchemy import MetaData, Table, select

    from service.models.base import utcnow

    _backend, url = empty_database
    url = Settings.from_env({}, database_url=url).sqlalchemy_url
    migrate.downgrade(url, "base")
    migrate.upgrade(url, "0021")
    engine = create_engine(url)
    try:
        exercises = Table("exercises", MetaData(), autoload_with=engine)
        versions = Table("exercise_versions", MetaData(), autoload_with=engine)
        made = utcnow() - timedelta(days=3)
        with engine.begin() as conn:
            for exercise_id, slug, published in ((1, "live", True), (2, "gone", False)):
                conn.execute(exercises.insert().values(id=exercise_id, slug=slug, kind="code", title=slug, difficulty=1,
                                                       published=published, current_version=2, created_at=made,
                                                       updated_at=made))
                for number in (1, 2):
                    conn.execute(versions.insert().values(exercise_id=exercise_id, number=number, digest=f"{slug}{number}",
                                                          content={"spec": {}, "files": {}},
                                                          created_at=made + timedelta(hours=number)))
        migrate.upgrade(url, "0022")
        upgraded = Table("exercise_versions", MetaData(), autoload_with=engine)
        with engine.connect() as conn:
            rows = conn.execute(select(upgraded).order_by(upgraded.c.exercise_id, upgraded.c.number)).all()
        assert {(row.source, row.proof_status, row.publish_when_proven) for row in rows} == {("catalog", "passed", False)}
        published = [(row.exercise_id, row.number) for row in rows if row.published_at is not None]
        assert published == [(1, 2)]
        assert next(row for row in rows if row.published_at).published_at.replace(tzinfo=None) == \
            (made + timedelta(hours=2)).replace(tzinfo=None)
        migrate.downgrade(url, "0021")
        assert "proof_status" not in {c["name"] for c in inspect(engine).get_columns("exercise_versions")}
    finally:
        with engine.begin() as conn:  # the older migrations' downgrades expect no exercises
            conn.execute(versions.delete())
            conn.execute(exercises.delete())
        engine.dispose()
        migrate.downgrade(url, "base")


def test_attempts_made_before_0024_have_no_scoring_policy(empty_database):
    """0024 adds the scoring policy an attempt was submitted under: attempts already made keep every
    value and have none (null: partial, what they were graded under); a downgrade keeps them."""
    import uuid

    from sqlalchemy import MetaData, Table, select

    from service.models.base import utcnow

    _backend, url = empty_database
    url = Settings.from_env({}, database_url=url).sqlalchemy_url
    migrate.downgrade(url, "base")
    migrate.upgrade(url, "0023")
    engine = create_engine(url)
    attempt_id, now = uuid.uuid4(), utcnow()
    try:
        clients, exercises, versions = (Table(name, MetaData(), autoload_with=engine)
                                        for name in ("api_clients", "exercises", "exercise_versions"))
        attempts = _attempts_table(engine)
        with engine.begin() as conn:
            client_id = conn.execute(clients.insert().values(
                name="lms", role="client", key_hash="0" * 64, key_prefix="gq_x", created_at=now)).inserted_primary_key[0]
            conn.execute(exercises.insert().values(id=1, slug="clamp", kind="code", title="clamp", difficulty=1,
                                                   published=True, current_version=1, created_at=now, updated_at=now))
            version_id = conn.execute(versions.insert().values(
                exercise_id=1, number=1, digest="d1", content={"spec": {}, "files": {}},
                created_at=now)).inserted_primary_key[0]
            conn.execute(attempts.insert().values(
                id=attempt_id, client_id=client_id, learner="ada", exercise_id=1, exercise_version_id=version_id,
                code="pass", status="graded", result={"score": 0.58}, score=0.58, grader_score=0.58, correct=False,
                overridden=False, late=False, attempt_number=1, created_at=now, tries=1))
        migrate.upgrade(url, "0024")
        upgraded = _attempts_table(engine)
        with engine.connect() as conn:
            row = conn.execute(select(upgraded).where(upgraded.c.id == attempt_id)).one()
        assert (row.scoring, row.grader_score, row.score, row.learner) == (None, 0.58, 0.58, "ada")
        migrate.downgrade(url, "0023")
        with engine.connect() as conn:
            assert conn.execute(select(attempts.c.score).where(attempts.c.id == attempt_id)).scalar_one() == 0.58
        assert "scoring" not in {c["name"] for c in inspect(engine).get_columns("attempts")}
    finally:
        with engine.begin() as conn:  # the older migrations' downgrades expect no rows
            conn.execute(_attempts_table(engine).delete())
            for table in ("exercise_versions", "exercises", "api_clients"):
                conn.execute(Table(table, MetaData(), autoload_with=engine).delete())
        engine.dispose()
        migrate.downgrade(url, "base")


def _attempts_table(engine):
    """attempts as the database has it now (its expression index, which reflection skips, left out)."""
    from sqlalchemy import Column, MetaData, Table, Uuid

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
        return Table("attempts", MetaData(), Column("id", Uuid, primary_key=True), autoload_with=engine)
