"""The embedded database's checkpoints, off the path of the writes that fill its log.

In WAL mode SQLite appends every commit to the write-ahead log and copies the log back into
the database file (a checkpoint) in the commit that takes the log past ``wal_autocheckpoint``
pages (1,000 by default): whichever request or job commits then pays for everyone's writes
(an import of 10,000 questions spent a tenth of its time copying its own 55 MB back). As
SQLite's documentation suggests for writers that must not wait, the app's connections set a
high threshold, a backstop only (``AUTOCHECKPOINT_PAGES``; the log file is cut back to
``JOURNAL_LIMIT_BYTES`` when it starts over), and a thread of the Celery worker, which the
embedded set-up always runs, checkpoints every ``EVERY_S``.

A PASSIVE checkpoint never waits for a reader or a writer and never calls the busy handler:
it copies what it can now and the rest on its next turn. Each turn opens its own connection
and closes it, under a lock that a fork of the process waits for: the worker forks its pool's
processes after it has started (a replacement for one that died), and a child must not
inherit SQLite's state of a file the parent has open.
"""

import logging
import os
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

AUTOCHECKPOINT_PAGES = 8192  # 128 MiB of 16 KiB pages: a commit checkpoints past this only
JOURNAL_LIMIT_BYTES = 64 * 1024 * 1024
EVERY_S = 1.0

_turn = threading.Lock()  # held while a checkpoint's connection is open
os.register_at_fork(
    before=_turn.acquire, after_in_parent=_turn.release, after_in_child=_turn.release
)


def checkpoint(path: Path | str) -> tuple[int, int, int]:
    """One PASSIVE checkpoint of the database at ``path``: (1 if it could not finish, frames
    in the log, frames copied)."""
    with _turn:  # no busy wait (a fork waits for the turn); never a new, empty file
        connection = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0)
        try:
            return tuple(connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
        finally:
            connection.close()


def start_checkpointer(
    path: Path | str, every: float = EVERY_S, stop: threading.Event | None = None
) -> threading.Thread:
    """A daemon thread checkpointing the database at ``path`` every ``every`` seconds, until
    ``stop`` is set (a worker's runs until the process ends)."""
    stop = stop or threading.Event()

    def run() -> None:
        while not stop.wait(every):
            try:
                checkpoint(path)
            except sqlite3.Error as exc:  # a locked or replaced file: the next turn tries again
                logger.warning("checkpoint of %s failed: %s", path, exc)
            except Exception:  # anything else is logged; the thread goes on
                logger.exception("checkpoint of %s failed", path)

    thread = threading.Thread(target=run, name="sqlite-checkpoint", daemon=True)
    thread.start()
    return thread
