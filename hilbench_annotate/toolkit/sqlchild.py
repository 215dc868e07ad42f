"""The process an author's or a model's SQL runs in, and the read-only connection it uses.

Why a process: SQLite checks its interrupt flag and progress handler only where its program
loops, so one statement made of many costly expressions (``length(randomblob(20000000)) + ...``
two hundred times, ``instr`` on megabyte strings) runs to its end whatever the deadline. A
child process can be killed at the deadline, and gets its own memory and CPU limits without
touching the web or worker process. ``sqlconsole`` starts one per query or edit script as
``python -I -S sqlchild.py``, sends one marshalled request on stdin and reads one marshalled
answer on stdout; inside, the progress handler still stops a looping statement early with a
precise message.

Standard library only, so the child starts in milliseconds and imports nothing of the app;
``sqlconsole`` imports the connection helpers from here so there is one definition of them.
"""

from __future__ import annotations

import marshal
import resource
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

# Actions SQLite's authorizer reports, named for messages ("PRAGMA is not allowed").
ACTION_NAMES = {
    sqlite3.SQLITE_ATTACH: "ATTACH",
    sqlite3.SQLITE_DETACH: "DETACH",
    sqlite3.SQLITE_PRAGMA: "PRAGMA",
    sqlite3.SQLITE_INSERT: "INSERT",
    sqlite3.SQLITE_UPDATE: "UPDATE",
    sqlite3.SQLITE_DELETE: "DELETE",
    sqlite3.SQLITE_TRANSACTION: "a transaction statement",
    sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE",
    sqlite3.SQLITE_ANALYZE: "ANALYZE",
    sqlite3.SQLITE_REINDEX: "REINDEX",
    sqlite3.SQLITE_SAVEPOINT: "SAVEPOINT",
}

# What a plain SELECT needs: nothing else gets past the console's authorizer.
SELECT_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)

# Functions refused even though SQLITE_FUNCTION is allowed: loading native code is never ok.
FORBIDDEN_FUNCTIONS = frozenset({"load_extension"})

# Edit scripts may write to their copy but must not reach other files or change the engine.
EDIT_DENIED_ACTIONS = frozenset(
    {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA}
)

# SQLite calls the progress handler every this many VM instructions; small enough to stop a
# looping query within milliseconds of the deadline, large enough to cost nothing.
PROGRESS_STEPS = 1000

# What a number or NULL counts for in a result's size.
SCALAR_BYTES = 8


# --- connections ------------------------------------------------------------------------


def readonly_uri(db_path: Path) -> str:
    """A ``mode=ro`` URI: SQLite opens the file read-only and never creates it."""
    return f"file:{quote(str(Path(db_path).resolve()))}?mode=ro"


def connect_readonly(db_path: Path) -> sqlite3.Connection:
    """A read-only connection with ``query_only`` on, but no authorizer (for schema reading)."""
    if not Path(db_path).is_file():
        raise FileNotFoundError(f"no database file at {db_path}")
    conn = sqlite3.connect(readonly_uri(db_path), uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


def select_authorizer(denied: list[str] | None = None) -> Callable[..., int]:
    """An authorizer allowing only what a plain SELECT needs; names refusals in ``denied``."""

    def authorizer(action: int, arg1, arg2, db_name, source) -> int:
        if action in SELECT_ACTIONS:
            if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in FORBIDDEN_FUNCTIONS:
                if denied is not None:
                    denied.append(f"{arg2}()")
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        if denied is not None:
            denied.append(ACTION_NAMES.get(action, f"SQLite action {action}"))
        return sqlite3.SQLITE_DENY

    return authorizer


def open_readonly(db_path: Path, *, denied: list[str] | None = None) -> sqlite3.Connection:
    """Open ``db_path`` so that nothing but reading can happen on the connection.

    Three independent guards: ``mode=ro`` (SQLite opens the file read-only), ``query_only``
    and an authorizer that allows only what a plain SELECT needs (SELECT, READ, FUNCTION,
    RECURSIVE) and denies ATTACH, PRAGMA, writes and everything else. If ``denied`` is given,
    the name of each refused action is appended to it so callers can say what was refused.
    """
    conn = connect_readonly(db_path)
    conn.set_authorizer(select_authorizer(denied))
    return conn


def install_deadline(conn: sqlite3.Connection, timeout_s: float) -> Callable[[], bool]:
    """Abort looping statements on ``conn`` after ``timeout_s`` wall seconds; returns "did it
    fire?". Only loops are stopped this way; the child's parent kills it for the rest."""
    deadline = time.monotonic() + timeout_s
    fired = False

    def progress() -> int:
        nonlocal fired
        if time.monotonic() > deadline:
            fired = True
            return 1
        return 0

    conn.set_progress_handler(progress, PROGRESS_STEPS)
    return lambda: fired


# --- inside the child -------------------------------------------------------------------


def _cap_process(request: dict) -> None:
    """The kernel's limits: address space, and CPU seconds in case the parent dies first."""
    memory = int(request["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(request["timeout_s"]) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _cap_connection(conn: sqlite3.Connection, request: dict) -> None:
    """SQLite's own limits: one value's length, and its heap (half the process's memory, so
    SQLite reports "out of memory" before the kernel refuses Python an allocation)."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(request["value_bytes"]))
    conn.execute(f"PRAGMA hard_heap_limit = {int(request['memory_bytes']) // 2}")


def _size(value) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    return SCALAR_BYTES


def _cut(value, size: int, cell_bytes: int) -> str:
    """The start of an over-long value and a marker saying it was cut, as text."""
    if isinstance(value, bytes):
        head = "x'" + value[: cell_bytes // 2].hex() + "'"
    else:
        head = value.encode("utf-8", "surrogatepass")[:cell_bytes].decode("utf-8", "ignore")
    return f"{head}… [cut: {size:,} bytes in all]"


def _failure(kind: str, message: str = "", **extra) -> dict:
    return {"ok": False, "kind": kind, "message": message, **extra}


def _sqlite_failure(error: BaseException, timed_out: bool, denied: list[str]) -> dict:
    if timed_out:
        return _failure("timeout")
    if isinstance(error, MemoryError):
        return _failure("memory")
    if denied:
        return _failure("denied", denied[0])
    code = getattr(error, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_TOOBIG:
        return _failure("value", str(error))
    if code == sqlite3.SQLITE_FULL:
        return _failure("full", str(error))
    return _failure("sqlite", str(error))


def _fetch(cursor: sqlite3.Cursor, request: dict) -> dict:
    """Rows up to the row cap; cells and the whole answer within their byte limits.

    ``exact`` callers compare results, so nothing may be cut: a result past the limit is
    refused. Others (the console, a model's tool) get over-long values cut with a marker and
    rows past the limit left off, and are told so.
    """
    row_cap, exact = int(request["row_cap"]), bool(request["exact"])
    cell_bytes, result_bytes = int(request["cell_bytes"]), int(request["result_bytes"])
    rows: list[tuple] = []
    total = cut = 0
    truncated = capped = False
    for row in cursor:
        if len(rows) >= row_cap:
            truncated = True
            break
        cells = []
        row_cut = 0
        for value in row:
            size = _size(value)
            if size > cell_bytes and not exact:
                value, size, row_cut = _cut(value, size, cell_bytes), cell_bytes, row_cut + 1
            total += size
            cells.append(value)
        if total > result_bytes:
            if exact:
                return _failure("result", f"{result_bytes:,}", rows=len(rows) + 1)
            truncated = capped = True
            break
        rows.append(tuple(cells))
        cut += row_cut
    columns = [d[0] for d in cursor.description or ()]
    return {
        "ok": True,
        "columns": columns,
        "rows": rows,
        "truncated": truncated,
        "cut_cells": cut,
        "capped": capped,
    }


def run_query(request: dict) -> dict:
    denied: list[str] = []
    conn = connect_readonly(Path(request["path"]))
    _cap_connection(conn, request)  # before the authorizer, which refuses PRAGMA
    conn.set_authorizer(select_authorizer(denied))
    timed_out = install_deadline(conn, float(request["timeout_s"]))
    started = time.perf_counter()
    try:
        answer = _fetch(conn.execute(request["sql"]), request)
    except (sqlite3.Error, MemoryError) as error:
        return _sqlite_failure(error, timed_out(), denied)
    finally:
        conn.close()
    answer["elapsed_ms"] = (time.perf_counter() - started) * 1000
    return answer


def _edit_authorizer(denied: list[str]):
    def authorizer(action: int, arg1, arg2, db_name, source) -> int:
        if action in EDIT_DENIED_ACTIONS:
            denied.append(ACTION_NAMES[action])
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in FORBIDDEN_FUNCTIONS:
            denied.append(f"{arg2}()")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    return authorizer


def run_edit(request: dict) -> dict:
    """Run the statements on the copy at ``path``, naming the first that fails."""
    conn = sqlite3.connect(request["path"], isolation_level=None)
    try:
        _cap_connection(conn, request)
        # A scratch copy: no fsync, rollback journal in memory so no side files appear.
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA journal_mode = MEMORY")
        if request.get("max_bytes") is not None:
            # The script cannot pass the room its caller gave it; PRAGMA is denied below.
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {max(1, int(request['max_bytes']) // page)}")
        denied: list[str] = []
        conn.set_authorizer(_edit_authorizer(denied))
        timed_out = install_deadline(conn, float(request["timeout_s"]))
        for number, statement in enumerate(request["statements"], start=1):
            denied.clear()
            try:
                conn.execute(statement).fetchall()
            except (sqlite3.Error, MemoryError) as error:
                return {**_sqlite_failure(error, timed_out(), denied), "statement": number}
        conn.set_authorizer(None)
        conn.set_progress_handler(None, 0)
        if conn.in_transaction:
            # A script that opened a transaction and never closed it meant its changes to stay.
            conn.commit()
        # A plain rollback-journal file, so readers need no -wal / -shm beside it.
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    return {"ok": True}


def main() -> None:
    request = marshal.loads(sys.stdin.buffer.read())  # noqa: S302 - from sqlconsole
    _cap_process(request)
    try:
        answer = run_edit(request) if request["op"] == "edit" else run_query(request)
    except MemoryError:
        answer = _failure("memory")
    except (sqlite3.Error, OSError) as error:
        answer = _failure("sqlite", str(error))
    sys.stdout.buffer.write(marshal.dumps(answer))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
