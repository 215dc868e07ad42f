"""The embedded database's checkpoints are the worker's thread's, not a committing request's."""

import os
import signal
import sqlite3
import threading
import time

import pytest
from django.conf import settings
from django.db import connection

from hilbench_annotate import celery as celery_module
from hilbench_annotate.toolkit import sqlitewal
from hilbench_annotate.toolkit.sqlitewal import AUTOCHECKPOINT_PAGES, checkpoint, start_checkpointer


def _rows_in_the_database_file(path) -> int:
    """Rows of ``t`` in the database file itself, the log ignored (``immutable``)."""
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as reader:
        try:
            return reader.execute("SELECT COUNT(*) FROM t").fetchone()[0]
        except sqlite3.DatabaseError:  # still only in the log, or caught mid-checkpoint
            return 0


def test_the_checkpointer_copies_the_log_into_the_database_file(tmp_path):
    path = tmp_path / "db.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # no commit of its own copies anything back
    writer.execute("CREATE TABLE t (x TEXT)")
    writer.executemany("INSERT INTO t VALUES (?)", [("row",)] * 1000)
    assert _rows_in_the_database_file(path) == 0

    stop = threading.Event()
    thread = start_checkpointer(path, every=0.05, stop=stop)
    try:
        deadline = time.monotonic() + 10
        while _rows_in_the_database_file(path) < 1000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _rows_in_the_database_file(path) == 1000
        assert thread.daemon and thread.is_alive()
    finally:
        stop.set()
        thread.join(timeout=5)
        writer.close()
    assert not thread.is_alive()


def test_a_fork_waits_for_a_turn_and_the_child_is_free_to_take_one(tmp_path):
    """A checkpoint's connection is open only under the lock a fork takes first: no child
    inherits SQLite's state of the file; in the child the lock is free again."""
    path = tmp_path / "db.sqlite3"
    sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").close()
    assert checkpoint(path)[0] == 0
    forked = threading.Event()
    children = []

    def fork() -> None:
        child = os.fork()
        if child == 0:  # the child: take a turn of its own, then leave at once
            signal.alarm(10)  # a child stuck on an inherited lock dies (and frees pytest's pipes)
            code = 2
            try:
                code = 0 if checkpoint(path)[0] == 0 else 1
            finally:
                os._exit(code)
        children.append(child)
        forked.set()

    with sqlitewal._turn:  # a checkpoint in progress
        thread = threading.Thread(target=fork)
        thread.start()
        assert not forked.wait(0.3)  # the fork waits for the turn to end
    assert forked.wait(10)
    thread.join(10)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(children[0], os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(children[0], 9)
            os.waitpid(children[0], 0)
            raise AssertionError("the child did not finish its checkpoint")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(done[1]) == 0


@pytest.mark.django_db
def test_app_connections_checkpoint_only_past_the_backstop():
    if connection.vendor != "sqlite":
        pytest.skip("the embedded database's setting (this run is on PostgreSQL)")
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        assert cursor.fetchone()[0] == AUTOCHECKPOINT_PAGES


@pytest.mark.parametrize(
    ("engine", "started"),
    [("django.db.backends.sqlite3", True), ("django.db.backends.postgresql", False)],
)
def test_the_worker_checkpoints_the_embedded_database_only(monkeypatch, engine, started):
    calls = []
    monkeypatch.setattr(celery_module, "start_checkpointer", calls.append)
    # The settings' dict only: the connections keep the copy they were made with.
    monkeypatch.setitem(settings.DATABASES["default"], "ENGINE", engine)
    celery_module._checkpoint_embedded_database()
    assert calls == ([settings.DATABASES["default"]["NAME"]] if started else [])
