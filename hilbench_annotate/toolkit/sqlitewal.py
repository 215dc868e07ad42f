"""The embedded database's checkpoints, off the path of the writes that fill its log.

In WAL mode SQLite appends every commit to the write-ahead log and copies the log back into
the database file (a checkpoint) in the commit that takes the log past ``wal_autocheckpoint``
pages (1,000 by default): whichever request or job commits then pays for everyone's writes
(an import of 10,000 questions spent a tenth of its time copying its own 55 MB back). As
SQLite's documentation suggests for writers that must not wait, the app's connections set a
high threshold, a backstop only (``AUTOCHECKPOINT_PAGES``), and a thread of the Celery
worker, which the embedded set-up always runs, checkpoints every ``EVERY_S``.

A PASSIVE checkpoint never waits for a reader or a writer and never calls the busy handler:
it copies what it can now and the rest on its next turn.
"""

import logging
import sqlite3
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

AUTOCHECKPOINT_PAGES = 8192  # 128 MiB of 16 KiB pages: a commit checkpoints past this only
EVERY_S = 1.0


def checkpoint(connection: sqlite3.Connection) -> tuple[int, int, int]:
    """One PASSIVE checkpoint: (1 if it could not finish, frames in the log, frames copied)."""
    return tuple(connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())


def start_checkpointer(path: Path | str, every: float = EVERY_S) -> threading.Thread:
    """A daemon thread checkpointing the database at ``path`` every ``every`` seconds, on a
    connection of its own that holds no transaction between turns."""

    def run() -> None:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        while True:
            time.sleep(every)
            try:
                checkpoint(connection)
            except sqlite3.Error as exc:  # a locked or replaced file: the next turn tries again
                logger.warning("checkpoint of %s failed: %s", path, exc)

    thread = threading.Thread(target=run, name="sqlite-checkpoint", daemon=True)
    thread.start()
    return thread
