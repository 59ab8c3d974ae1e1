"""The SQLAlchemy engine and the request-scoped session, without Flask-SQLAlchemy.

Plain SQLAlchemy keeps the models and the migrations usable outside the app (workers, Alembic).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import threading
import weakref
from typing import Any

from sqlalchemy import BindParameter, Select, Table, bindparam, create_engine, event, literal, make_url, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

CONNECT_TIMEOUT_SECONDS = 5
# How long a SQLite writer waits for the write lock before "database is locked".
SQLITE_BUSY_SECONDS = 15


DEFAULT_POOL_SIZE = 5
# Connections a pool opens past its size when all are in use (closed again when returned).
POOL_OVERFLOW = 5


def make_engine(url: str, pool_size: int = DEFAULT_POOL_SIZE, **kwargs: Any) -> Engine:
    """An engine with the connection settings each backend needs to behave transactionally, keeping
    up to `pool_size` connections open."""
    if url.startswith("sqlite"):
        if make_url(url).database not in (None, "", ":memory:"):  # an in-memory database has no pool
            kwargs = {"pool_size": pool_size, "max_overflow": POOL_OVERFLOW, **kwargs}
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_SECONDS}, **kwargs)
        _make_sqlite_transactional(engine)
        return engine
    # libpq waits without limit for a server that does not answer (a crashed host, a partition, a
    # frozen postmaster): each request opening a connection would hang. A URL may set its own.
    connect_args = {} if "connect_timeout=" in url else {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
    return create_engine(url, pool_pre_ping=True, pool_size=pool_size, max_overflow=POOL_OVERFLOW,
                         connect_args=connect_args, **kwargs)


class WriterTurns:
    """SQLite's writers of one process take turns here before they ask SQLite for its write lock.

    A writer that finds SQLite's lock taken waits in SQLite's busy handler, which sleeps 1, 2, 5,
    10 ... up to 100 ms between looks, whether the lock was freed a millisecond later or not:
    with a web process's 16 threads writing at once, much of a write's wait was that sleep, with
    the CPU idle. Here a thread waits on a lock that wakes it when the writer before it ends; only
    writers of other processes (the other web workers, a grading worker) meet the busy handler.
    A thread holds its turn from its BEGIN IMMEDIATE to its COMMIT or ROLLBACK; a thread that
    begins a second writer while it holds one passes without waiting, as before. The wait is
    bounded as SQLite's is: past it, "database is locked". A forked child starts with no turn
    taken (its parent's writers are not its own). Measured under load: a third of the p99, about
    a seventh fewer writes a second (docs/performance.md, issue 19's sixth round)."""

    HOLDS = "gradquiz_holds_writer_turn"  # in a pooled connection's info while it holds the turn

    def __init__(self, timeout: float = SQLITE_BUSY_SECONDS) -> None:
        self._timeout = timeout
        self._forget()
        _all_turns.add(self)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._holder: int | None = None
        self._depth = 0

    def listen(self, engine: Engine) -> None:
        event.listen(engine, "commit", lambda conn: self._end_on(conn, "COMMIT"))
        event.listen(engine, "rollback", lambda conn: self._end_on(conn, "ROLLBACK"))
        # A connection given back to the pool, or dropped, with its transaction still open.
        event.listen(engine.pool, "reset", lambda dbapi, record, _state: self.end(dbapi, record.info, "ROLLBACK"))
        event.listen(engine.pool, "invalidate", lambda _dbapi, record, _exc: self.drop(record.info))

    def begin(self, connection: Any) -> None:
        """BEGIN IMMEDIATE on `connection` in this thread's turn."""
        me = threading.get_ident()
        if self._holder == me:
            self._depth += 1
        elif self._lock.acquire(timeout=self._timeout):
            self._holder, self._depth = me, 1
        else:  # as SQLite says it, as SQLAlchemy raises it (the API answers 503, retry)
            raise OperationalError("BEGIN IMMEDIATE", None, sqlite3.OperationalError("database is locked"))
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            self._give_back()
            raise
        connection.info[self.HOLDS] = True

    def end(self, dbapi_connection: Any, info: dict[str, Any], statement: str) -> None:
        """End the transaction with `statement` and pass the turn on. It runs before SQLAlchemy's
        own COMMIT or ROLLBACK, which then find no transaction open and do nothing."""
        if info.pop(self.HOLDS, False):
            try:
                if dbapi_connection.in_transaction:
                    dbapi_connection.execute(statement)
            except sqlite3.Error as exc:  # raised as SQLAlchemy raises what its own statements meet
                raise DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc
            finally:
                self._give_back()

    def _end_on(self, connection: Any, statement: str) -> None:
        if not connection.invalidated:  # an invalidated one gave its turn back as it was dropped
            self.end(connection.connection.dbapi_connection, connection.info, statement)

    def drop(self, info: dict[str, Any]) -> None:
        if info.pop(self.HOLDS, False):
            self._give_back()

    def _give_back(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._holder = None
            self._lock.release()


_all_turns: weakref.WeakSet[WriterTurns] = weakref.WeakSet()


def _forget_turns() -> None:
    # In a forked child the threads that held turns do not exist: a held turn would never come back.
    for turns in _all_turns:
        turns._forget()


os.register_at_fork(after_in_child=_forget_turns)


def _make_sqlite_transactional(engine: Engine) -> None:
    # pysqlite opens transactions lazily and only before DML, which breaks SAVEPOINT and lets
    # a read-then-write transaction fail with "database is locked" instead of waiting. The
    # SQLAlchemy-documented fix: turn off its own handling and emit BEGIN ourselves.
    # IMMEDIATE takes the write lock up front, so concurrent writers queue: a process's own
    # writers on WriterTurns, other processes' on busy_timeout.
    turns = WriterTurns()
    turns.listen(engine)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        options = connection.get_execution_options()
        # An AUTOCOMMIT connection (a status poll) reads outside any transaction and lock.
        if options.get("isolation_level") == "AUTOCOMMIT":
            return
        # A read-only session (a GET) reads a WAL snapshot beside the writers; only writers
        # take the write lock, so reads never make a worker's claim or result wait.
        if options.get(READ_ONLY):
            connection.exec_driver_sql("BEGIN")
        else:
            turns.begin(connection)


def window(statement: Select, size: int, offset: int = 0) -> Select:
    """`statement`'s rows from `offset`, at most `size`: the two numbers written in the SQL, not
    bound. As parameters, PostgreSQL planned such a statement afresh at each execution, even once
    prepared: its generic plan, blind to the LIMIT, looked dearer than a custom one (170 us of the
    server's CPU for a page of a learner's history). A page size or offset not seen before is a
    new statement to prepare, as any statement is."""
    statement = statement.limit(literal(size, literal_execute=True))
    return statement.offset(literal(offset, literal_execute=True)) if offset else statement


# A page of a statement built once per process, kept too (bounded: `?page=` is the caller's).
window_of_built_once = functools.lru_cache(maxsize=512)(window)


def upsert_insert(dialect: str, model: Any) -> Any:
    """An INSERT into `model` that takes ON CONFLICT clauses, in the dialect's own form (both of
    ours have one)."""
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(model)


def bound_values(table: Table, prefix: str, names: tuple[str, ...]) -> dict[str, BindParameter[Any]]:
    """The values of an INSERT of `table`'s columns `names`, as parameters named `prefix` + name:
    inserts of several tables in one statement (a data-modifying WITH) share its parameters."""
    return {name: bindparam(prefix + name, type_=table.c[name].type) for name in names}


# Execution option of the engine behind read-only sessions (see Database.read_session_factory).
READ_ONLY = "gradquiz_read_only"

_engines: dict[str, Engine] = {}


def engine_for(url: str, pool_size: int = DEFAULT_POOL_SIZE) -> Engine:
    """One engine (one pool) per database URL per process: apps built for tests share it. Its
    first caller sizes its pool (in a web process, the app: DATABASE_POOL_SIZE)."""
    engine = _engines.get(url)
    if engine is None:
        engine = _engines[url] = make_engine(url, pool_size)
    return engine


def dispose_engines() -> None:
    """Drop pooled connections; a forked process must not reuse its parent's sockets."""
    for engine in _engines.values():
        engine.dispose(close=False)


def serialize_transactions(session: Session, *key: object) -> None:
    """Make the session's transaction wait, until its end, for any other that called this with the
    same `key`: for a check that must see the other's insert (a learner's last allowed run). On
    PostgreSQL a transaction-level advisory lock on a 64-bit hash of the key; on SQLite nothing,
    as a writer holds the one write lock from its BEGIN IMMEDIATE to its end."""
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        digest = hashlib.blake2b("\x1f".join(map(str, key)).encode(), digest_size=8).digest()
        connection.execute(_ADVISORY_LOCK, {"key": int.from_bytes(digest, "big", signed=True)})


_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def outside_transaction(session: Session) -> None:
    """On PostgreSQL, run the session's statements until its next commit or rollback outside any
    transaction (autocommit): each statement is its own, and no BEGIN or COMMIT goes to the server.
    For work that writes in one statement, after reads that need no common snapshot (at READ
    COMMITTED each statement sees its own anyway). Nothing if the session is in a transaction
    already, or on SQLite (whose writers need their BEGIN IMMEDIATE). Under load each round trip
    saved is worth more than its own cost: docs/performance.md, issue 19's seventh round."""
    if not session.in_transaction() and session.get_bind().dialect.name == "postgresql":
        session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


class ReadOnlySession(Session):
    """A session whose transactions PostgreSQL runs READ ONLY, and which ends them with COMMIT.

    For a transaction that cannot write, COMMIT is ROLLBACK; but psycopg forgets every prepared
    statement of its connection at a ROLLBACK (and has the server DEALLOCATE ALL), so GETs that
    ended in one left each pooled connection planning every statement again, for ever: the
    learner history cost the database 2.96 ms of CPU a request, 1.24 ms ending in COMMIT
    (bench/profile_post.py --request history)."""

    def close(self) -> None:
        transaction = self.get_transaction()
        if transaction is not None and transaction.is_active:
            try:
                self.commit()
            except SQLAlchemyError:
                pass  # a lost connection: close() below rolls back or discards it
        super().close()


class Database:
    """The app's engine and its session factories; one session per app context (request)."""

    def __init__(self, url: str, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        self.engine = engine_for(url, pool_size)
        self.session_factory = sessionmaker(bind=self.engine, expire_on_commit=False)
        # For requests that only read (GET, HEAD): on SQLite their transactions take no write lock;
        # on PostgreSQL they are READ ONLY (a GET cannot write) and end in COMMIT (ReadOnlySession).
        self.read_session_factory: sessionmaker[Session]
        if self.engine.dialect.name == "postgresql":
            readers = self.engine.execution_options(**{READ_ONLY: True, "postgresql_readonly": True})
            self.read_session_factory = sessionmaker(bind=readers, class_=ReadOnlySession, expire_on_commit=False)
        else:
            self.read_session_factory = sessionmaker(bind=self.engine.execution_options(**{READ_ONLY: True}),
                                                     expire_on_commit=False)
