"""Database-edit scripts: SQL that adds tables or code values, run on a copy of a task database.

This is the one place task SQL writes, and it writes only to a copy in a cache directory:
``edited_database`` returns that copy, read-only on disk, and never opens the source for
writing. The script runs in a ``sqlchild`` process, killed at its deadline, with the
console's memory and value limits, and cannot make the copy larger than the room its caller
gives it (``room``: a project's disk quota).

The copies are a cache, rebuilt on demand: anyone may delete one at any time (the core's sweep
does). A copy's modification time is its last use, so a sweep or an eviction can tell which
copies nobody has needed for a while.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from hilbench_annotate.toolkit.sqlchild import connect_readonly
from hilbench_annotate.toolkit.sqlconsole import (
    EditScriptError,
    QueryLimits,
    StorageFull,
    amount,
    current_limits,
    first_word,
    run_child,
    script_statements,
)

# Statements refused by their first word, before anything is copied.
_FORBIDDEN_KEYWORDS = frozenset({"ATTACH", "DETACH", "PRAGMA", "VACUUM"})

# Source hashes keyed by (path, size, mtime, inode): hashing a large BIRD database on every
# call would dominate; any change to the file changes the key.
_SOURCE_HASHES: dict[tuple, str] = {}


def _source_hash(source: Path) -> str:
    """sha256 of the file's bytes, memoised while the file is unchanged."""
    st = source.stat()
    key = (str(source.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    cached = _SOURCE_HASHES.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with source.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if len(_SOURCE_HASHES) > 256:
        _SOURCE_HASHES.clear()
    _SOURCE_HASHES[key] = digest.hexdigest()
    return _SOURCE_HASHES[key]


def _snippet(statement: str) -> str:
    """The statement on one line, cut to 80 characters, for error messages."""
    return " ".join(statement.split())[:80]


def _where(statements: list[str], number: int) -> str:
    return f"statement {number} ({_snippet(statements[number - 1])})"


def _check_keywords(statements: list[str]) -> None:
    for number, statement in enumerate(statements, start=1):
        first = first_word(statement)
        if first in _FORBIDDEN_KEYWORDS:
            raise EditScriptError(
                f"{_where(statements, number)}: {first} is not allowed in a database-edit script"
            )


def _edit_error(
    answer: dict,
    statements: list[str],
    timeout_s: float,
    max_bytes: int | None,
    limits: QueryLimits,
) -> Exception:
    kind, message = answer["kind"], answer.get("message", "")
    number = answer.get("statement")
    if number is None:
        if kind == "timeout":
            return EditScriptError(
                f"the edit script was stopped after {timeout_s:.1f} s: its time limit"
            )
        return EditScriptError(f"the edit script's process ended without an answer ({message})")
    where = _where(statements, number)
    if kind == "timeout":
        return EditScriptError(
            f"{where} stopped after {timeout_s:.1f} s: the edit script's time limit"
        )
    if kind == "denied":
        return EditScriptError(f"{where}: {message} is not allowed in a database-edit script")
    if kind == "full":
        room = amount(max_bytes) if max_bytes is not None else "the disk's free space"
        return StorageFull(f"{where} made the edited copy larger than the {room} it may take")
    if kind == "memory":
        return EditScriptError(
            f"{where} needs more memory than an edit script may use "
            f"({amount(limits.memory_bytes // 2)})"
        )
    if kind == "value":
        return EditScriptError(
            f"{where} failed: a value would be larger than {amount(limits.value_bytes)}"
        )
    return EditScriptError(f"{where} failed: {message}")


def _copy(source: Path, target: Path) -> None:
    """``source`` into ``target`` with SQLite's backup API, reading through ``mode=ro``."""
    src = connect_readonly(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    except sqlite3.Error as error:
        raise EditScriptError(f"could not copy the task database: {error}") from None
    finally:
        src.close()
        dst.close()


def _mark_used(path: Path) -> None:
    # Another user's copy stays usable; only its last use goes unrecorded.
    with contextlib.suppress(OSError):
        os.utime(path)


def edited_database(
    *,
    source: Path,
    edit_script: str,
    cache_dir: Path,
    timeout_s: float = 30.0,
    room: Callable[[int], int] | None = None,
) -> Path:
    """The path of a read-only copy of ``source`` with ``edit_script`` applied.

    An empty script returns ``source`` itself. Otherwise the copy is cached as
    ``cache_dir/<sha256(source hash + script)>.sqlite``, so an unchanged task reuses its copy
    (and marks it used) and an edited script or database gets a new one. Before building one,
    ``room(size of source)`` says how many bytes the copy may take (it may make room first);
    StorageFull if the source alone is bigger, or when the script grows the copy past it.
    The copy is built in a temporary file in ``cache_dir``, the script runs statement by
    statement in a child process under an authorizer that denies ATTACH / DETACH / PRAGMA /
    load_extension and a time limit, then the file is made read-only (0o444) and moved into
    place with ``os.replace``. Concurrent builders each write their own temp file and the last
    atomic rename wins with identical content. Any failure removes the temp file.
    """
    script = (edit_script or "").strip()
    if not script:
        return source
    statements = script_statements(script)
    if not statements:
        return source
    key = hashlib.sha256(f"{_source_hash(source)}\n{script}".encode()).hexdigest()
    cache_dir = Path(cache_dir)
    target = cache_dir / f"{key}.sqlite"
    if target.is_file():
        _mark_used(target)
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    _check_keywords(statements)
    max_bytes = None
    if room is not None:
        need = Path(source).stat().st_size
        max_bytes = room(need)
        if max_bytes < need:
            raise StorageFull(
                f"the copy needs {amount(need)} and only {amount(max(max_bytes, 0))} is free"
            )

    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{key[:16]}-", suffix=".building")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _copy(source, tmp)
        limits = current_limits()
        request = {"op": "edit", "path": str(tmp), "statements": statements, "max_bytes": max_bytes}
        answer = run_child(request, timeout_s=timeout_s, limits=limits)
        if not answer["ok"]:
            raise _edit_error(answer, statements, timeout_s, max_bytes, limits)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
