"""SQLite's writers of one process take turns (service/database.py WriterTurns) before they ask
SQLite for its write lock, and every way a writer's transaction ends passes the turn on."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine, RootTransaction
from sqlalchemy.exc import OperationalError

from service.database import READ_ONLY, WriterTurns, make_engine

# How long a writer that should get through may take here: far below SQLite's busy timeout (15 s),
# which a turn never given back would make it wait.
GETS_THROUGH_SECONDS = 5


@pytest.fixture
def engine(tmp_path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'writers.sqlite3'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE rows (n INTEGER)"))
    yield engine
    engine.dispose()


def in_thread(work: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def write(engine: Engine, n: int) -> None:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO rows VALUES (:n)"), {"n": n})


def test_a_writer_asks_sqlite_for_the_lock_only_once_the_writer_before_it_ended(engine):
    sent: list[tuple[str, str]] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _conn, _cursor, statement, *_: sent.append((threading.current_thread().name, statement)))
    second_starts = threading.Event()

    def second() -> None:
        second_starts.set()
        write(engine, 2)

    with engine.begin() as conn:
        conn.execute(text("INSERT INTO rows VALUES (1)"))
        thread = threading.Thread(target=second, name="second", daemon=True)
        thread.start()
        second_starts.wait()
        time.sleep(0.2)  # time for the second writer to reach its BEGIN, where it waits
        sent.append(("first", "ends"))
    thread.join(GETS_THROUGH_SECONDS)
    assert not thread.is_alive()
    # Without the turns the second writer's BEGIN IMMEDIATE went to SQLite at once, and waited
    # in its busy handler, which sleeps between looks at the lock.
    assert sent.index(("second", "BEGIN IMMEDIATE")) > sent.index(("first", "ends"))
    with engine.connect() as conn:
        assert sorted(conn.execute(text("SELECT n FROM rows")).scalars()) == [1, 2]


def _commit(_conn: Connection, transaction: RootTransaction) -> None:
    transaction.commit()


def _roll_back(_conn: Connection, transaction: RootTransaction) -> None:
    transaction.rollback()


def _close(conn: Connection, _transaction: RootTransaction) -> None:
    conn.close()  # closed with its transaction open, which the close rolls back


def _invalidate(conn: Connection, transaction: RootTransaction) -> None:
    conn.invalidate()  # the connection is dropped, and SQLite's lock with it
    transaction.rollback()  # what SQLAlchemy asks of an invalidated connection's transaction


@pytest.mark.parametrize("end", [_commit, _roll_back, _close, _invalidate])
def test_every_end_of_a_writer_gives_its_turn_back(engine, end):
    conn = engine.connect()
    transaction = conn.begin()
    conn.execute(text("INSERT INTO rows VALUES (1)"))
    end(conn, transaction)
    conn.close()
    thread = in_thread(lambda: write(engine, 2))
    thread.join(GETS_THROUGH_SECONDS)
    assert not thread.is_alive(), "the next writer still waits for a turn nobody holds"


@pytest.mark.filterwarnings("ignore:The garbage collector is trying to clean up")
def test_a_writer_left_to_the_garbage_collector_gives_its_turn_back(engine):
    def leave_open() -> None:
        conn = engine.connect()
        conn.begin()
        conn.execute(text("INSERT INTO rows VALUES (1)"))

    leave_open()
    gc.collect()  # the pool takes the connection back and resets it: its transaction rolls back
    thread = in_thread(lambda: write(engine, 2))
    thread.join(GETS_THROUGH_SECONDS)
    assert not thread.is_alive()


def test_a_writer_that_fails_gives_its_turn_back(engine):
    with pytest.raises(ZeroDivisionError), engine.begin() as conn:
        conn.execute(text("INSERT INTO rows VALUES (1)"))
        1 / 0  # noqa: B018
    thread = in_thread(lambda: write(engine, 2))
    thread.join(GETS_THROUGH_SECONDS)
    assert not thread.is_alive()
    with engine.connect() as conn:
        assert list(conn.execute(text("SELECT n FROM rows")).scalars()) == [2]


def test_a_reader_does_not_wait_for_the_writers_turn(engine):
    readers = engine.execution_options(**{READ_ONLY: True})
    counted: list[int] = []

    def read() -> None:
        with readers.connect() as conn:
            counted.append(conn.execute(text("SELECT count(*) FROM rows")).scalar_one())

    with engine.begin() as conn:
        conn.execute(text("INSERT INTO rows VALUES (1)"))
        thread = in_thread(read)
        thread.join(GETS_THROUGH_SECONDS)
        assert not thread.is_alive()
    assert counted == [0]  # its snapshot, from before the writer's commit




class FakeConnection:
    """What WriterTurns.begin uses of a connection: SQLite itself is left out, whose own state
    after a fork with a transaction open is not this test's matter."""

    def __init__(self) -> None:
        self.info: dict[str, object] = {}

    def exec_driver_sql(self, _statement: str) -> None:
        pass


def test_a_forked_child_starts_with_no_turn_taken():
    turns = WriterTurns(timeout=2)
    taken, done = threading.Event(), threading.Event()
    holder = in_thread(lambda: (turns.begin(FakeConnection()), taken.set(), done.wait()))
    taken.wait()
    pid = os.fork()
    if pid == 0:  # the child: the thread holding its copy of the turn is not in it
        try:
            turns.begin(FakeConnection())
        except sqlite3.OperationalError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child waited for a turn its parent's thread held"
    assert holder.is_alive()  # the parent's turn is still taken
    done.set()


def test_a_writer_that_waits_too_long_for_its_turn_is_told_the_database_is_locked():
    turns = WriterTurns(timeout=0.2)
    taken, done = threading.Event(), threading.Event()
    holder = in_thread(lambda: (turns.begin(FakeConnection()), taken.set(), done.wait()))
    taken.wait()
    # SQLAlchemy's error, as SQLite's own busy timeout gives: the API answers it 503 with Retry-After
    with pytest.raises(OperationalError, match="database is locked"):
        turns.begin(FakeConnection())
    done.set()
    holder.join(GETS_THROUGH_SECONDS)
