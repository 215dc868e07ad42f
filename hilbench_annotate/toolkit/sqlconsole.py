"""The SQL console: run an author's query on a task database without ever changing it.

Task databases are the benchmark's ground truth, so every path here is read-only twice over:
``check_select`` refuses anything but one SELECT before SQLite sees it, and the connection
itself is opened ``mode=ro`` with ``query_only`` and an authorizer that denies every action a
plain SELECT does not need. Either layer alone would stop a write; both must fail for one to
happen.

Database-edit scripts (SQL that adds tables or code values) are the one place SQL writes, and
they write only to a copy in a cache directory; ``edited_database`` returns that copy,
read-only on disk, and never opens the source for writing.

This module is pure (stdlib ``sqlite3`` + ``sqlglot``): no Django models, so validators, the
worker and the API can all call it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from hilbench_annotate.errors import DomainError


class QueryRefused(DomainError):
    """The console will not run this query; the message says exactly why."""


class QueryTimeout(DomainError):
    """The query ran past the console's time limit and was stopped."""


class EditScriptError(DomainError):
    """A database-edit script failed; the message names the statement and SQLite's error."""


class DatabaseUnreadable(DomainError):
    """The database file is damaged or is not a database; the message gives SQLite's reason."""


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    truncated: bool
    elapsed_ms: float


@dataclass
class ColumnInfo:
    name: str
    type: str
    primary_key: bool
    not_null: bool


@dataclass
class ForeignKey:
    column: str
    ref_table: str
    # None only when the FK names no column and the referenced table has no matching key.
    ref_column: str | None


@dataclass
class TableInfo:
    name: str
    columns: list[ColumnInfo]
    foreign_keys: list[ForeignKey]
    row_count: int


# Statement keywords that can open a non-SELECT statement; naming them gives a precise refusal.
_STATEMENT_KEYWORDS = frozenset(
    {
        "ALTER",
        "ANALYZE",
        "ATTACH",
        "BEGIN",
        "COMMIT",
        "CREATE",
        "DELETE",
        "DETACH",
        "DROP",
        "END",
        "EXPLAIN",
        "INSERT",
        "PRAGMA",
        "REINDEX",
        "RELEASE",
        "REPLACE",
        "ROLLBACK",
        "SAVEPOINT",
        "UPDATE",
        "UPSERT",
        "VACUUM",
        "VALUES",
    }
)

# sqlglot nodes that mean "this statement writes or changes the session", wherever they appear
# (a WITH clause can hide a DELETE ... RETURNING in other dialects; refuse it anyway).
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Command,
    exp.Pragma,
    exp.Attach,
    exp.Detach,
    exp.Analyze,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Into,
)

# Actions SQLite's authorizer reports, named for messages ("PRAGMA is not allowed").
_ACTION_NAMES = {
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
_SELECT_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)

# Functions refused even though SQLITE_FUNCTION is allowed: loading native code is never ok.
_FORBIDDEN_FUNCTIONS = frozenset({"load_extension"})

# Edit scripts may write to their copy but must not reach other files or change the engine.
_EDIT_FORBIDDEN_KEYWORDS = frozenset({"ATTACH", "DETACH", "PRAGMA", "VACUUM"})
_EDIT_DENIED_ACTIONS = frozenset(
    {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA}
)

# SQLite calls the progress handler every this many VM instructions; small enough to stop a
# runaway query within milliseconds of the deadline, large enough to cost nothing.
_PROGRESS_STEPS = 1000


# --- splitting and checking -------------------------------------------------------------


def _tokens(text: str) -> list | None:
    """sqlglot's tokens for ``text``, or None when it cannot tokenize (left to SQLite)."""
    try:
        return sqlglot.tokenize(text, read="sqlite")
    except TokenError:
        return None


def _strip_statement(text: str) -> str:
    """The statement without surrounding whitespace and trailing semicolons."""
    text = text.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def _is_blank(text: str) -> bool:
    """True for pieces with nothing to run: whitespace, comments and stray semicolons."""
    if not text.strip():
        return True
    tokens = _tokens(text)
    return tokens is not None and all(t.token_type == sqlglot.TokenType.SEMICOLON for t in tokens)


def script_statements(script: str) -> list[str]:
    """Split SQL into statements the way SQLite does, keeping each statement's original text.

    Boundaries come from ``sqlite3.complete_statement`` (SQLite's own tokenizer), so semicolons
    inside strings, comments and CREATE TRIGGER bodies do not split. Blank and comment-only
    pieces are dropped; a final statement without a semicolon is kept. Trailing semicolons are
    removed so each piece runs on its own with ``execute``.
    """
    statements: list[str] = []

    def keep(piece: str) -> None:
        if not _is_blank(piece):
            statements.append(_strip_statement(piece))

    start = 0
    pos = script.find(";")
    while pos != -1:
        if sqlite3.complete_statement(script[start : pos + 1]):
            keep(script[start : pos + 1])
            start = pos + 1
        pos = script.find(";", pos + 1)
    keep(script[start:])
    return statements


def _first_word(statement: str) -> str:
    """The statement's first token in upper case (comments skipped), for refusal messages."""
    tokens = _tokens(statement)
    if tokens:
        return tokens[0].text.upper()
    words = statement.split()
    return words[0].upper() if words else ""


def _node_name(node: exp.Expression) -> str:
    """A SQL keyword naming a sqlglot node ("INSERT", "SELECT INTO", "ALTER" ...)."""
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Into):
        return "SELECT INTO"
    if isinstance(node, exp.Transaction):
        return "BEGIN"
    return type(node).__name__.upper()


def _syntax_message(error: ParseError) -> str:
    """sqlglot's first parse error without its terminal colour codes."""
    if error.errors:
        first = error.errors[0]
        return (
            f"syntax error: {first.get('description')} "
            f"(line {first.get('line')}, column {first.get('col')})"
        )
    return f"syntax error: {error}"


def check_select(sql: str) -> str:
    """Return the text of ``sql`` if it is exactly one read-only query, else raise QueryRefused.

    Allowed: SELECT, UNION / INTERSECT / EXCEPT of selects, and WITH ... SELECT (including
    WITH RECURSIVE). Everything else is refused with a message naming the problem, so an author
    sees why instead of a bare SQLite error. This is the first of two layers: the connection
    ``run_select`` uses is read-only as well.
    """
    statements = script_statements(sql or "")
    if not statements:
        raise QueryRefused("empty query")
    if len(statements) > 1:
        raise QueryRefused(f"only one statement may be run; found {len(statements)}")
    statement = statements[0]

    first = _first_word(statement)
    if first in _STATEMENT_KEYWORDS:
        raise QueryRefused(f"{first} is not allowed: the console only runs SELECT")
    if first not in {"SELECT", "WITH"}:
        raise QueryRefused(f"the console only runs SELECT; this query starts with {first!r}")

    try:
        parsed = [e for e in sqlglot.parse(statement, read="sqlite") if e is not None]
    except ParseError as error:
        raise QueryRefused(_syntax_message(error)) from None
    except TokenError as error:
        raise QueryRefused(f"syntax error: {error}") from None
    if len(parsed) != 1:
        raise QueryRefused(f"only one statement may be run; found {len(parsed)}")
    tree = parsed[0]
    if not isinstance(tree, exp.Select | exp.SetOperation):
        raise QueryRefused(f"{_node_name(tree)} is not allowed: the console only runs SELECT")
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise QueryRefused(f"{_node_name(node)} is not allowed: the console only runs SELECT")
    return statement


# --- connections ------------------------------------------------------------------------


def _readonly_uri(db_path: Path) -> str:
    """A ``mode=ro`` URI: SQLite opens the file read-only and never creates it."""
    return f"file:{quote(str(Path(db_path).resolve()))}?mode=ro"


def _connect_readonly(db_path: Path) -> sqlite3.Connection:
    """A read-only connection with ``query_only`` on, but no authorizer (for schema reading)."""
    if not Path(db_path).is_file():
        raise FileNotFoundError(f"no database file at {db_path}")
    conn = sqlite3.connect(_readonly_uri(db_path), uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


def open_readonly(db_path: Path, *, denied: list[str] | None = None) -> sqlite3.Connection:
    """Open ``db_path`` so that nothing but reading can happen on the connection.

    Three independent guards: ``mode=ro`` (SQLite opens the file read-only), ``query_only``
    and an authorizer that allows only what a plain SELECT needs (SELECT, READ, FUNCTION,
    RECURSIVE) and denies ATTACH, PRAGMA, writes and everything else. If ``denied`` is given,
    the name of each refused action is appended to it so callers can say what was refused.
    """
    conn = _connect_readonly(db_path)

    def authorizer(action: int, arg1, arg2, db_name, source) -> int:
        if action in _SELECT_ACTIONS:
            if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _FORBIDDEN_FUNCTIONS:
                if denied is not None:
                    denied.append(f"{arg2}()")
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        if denied is not None:
            denied.append(_ACTION_NAMES.get(action, f"SQLite action {action}"))
        return sqlite3.SQLITE_DENY

    conn.set_authorizer(authorizer)
    return conn


def _install_deadline(conn: sqlite3.Connection, timeout_s: float) -> Callable[[], bool]:
    """Abort statements on ``conn`` after ``timeout_s`` wall seconds; return "did it fire?"."""
    deadline = time.monotonic() + timeout_s
    fired = False

    def progress() -> int:
        nonlocal fired
        if time.monotonic() > deadline:
            fired = True
            return 1
        return 0

    conn.set_progress_handler(progress, _PROGRESS_STEPS)
    return lambda: fired


# --- the console ------------------------------------------------------------------------


def run_select(
    db_path: Path, sql: str, *, timeout_s: float = 5.0, row_cap: int = 500
) -> QueryResult:
    """Run one checked SELECT on a read-only connection, with a time limit and a row cap.

    Only ``row_cap + 1`` rows are ever fetched, so a huge result costs no more than the cap;
    ``truncated`` says whether more rows existed. SQLite errors (no such column ...) become
    QueryRefused with SQLite's message, because they are the author's to fix.
    """
    if row_cap < 0:
        raise ValueError("row_cap must be >= 0")
    statement = check_select(sql)
    denied: list[str] = []
    conn = open_readonly(db_path, denied=denied)
    try:
        timed_out = _install_deadline(conn, timeout_s)
        started = time.perf_counter()
        try:
            cursor = conn.execute(statement)
            rows = cursor.fetchmany(row_cap + 1)
        except sqlite3.Error as error:
            if timed_out():
                raise QueryTimeout(
                    f"stopped after {timeout_s:.1f} s: the console's time limit"
                ) from None
            if denied:
                raise QueryRefused(
                    f"{denied[0]} is not allowed: the console only runs SELECT"
                ) from None
            raise QueryRefused(f"SQLite error: {error}") from None
        elapsed_ms = (time.perf_counter() - started) * 1000
        columns = [d[0] for d in cursor.description or ()]
        return QueryResult(
            columns=columns,
            rows=[tuple(r) for r in rows[:row_cap]],
            truncated=len(rows) > row_cap,
            elapsed_ms=elapsed_ms,
        )
    finally:
        conn.close()


# --- schema -----------------------------------------------------------------------------


def _quote_ident(name: str) -> str:
    """Quote an identifier for SQLite (double quotes, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def read_schema(db_path: Path) -> list[TableInfo]:
    """Tables (sorted by name, case-insensitively), their columns, foreign keys and row counts.

    Uses a read-only connection without the console's authorizer, because PRAGMA table_info
    and foreign_key_list are how SQLite reports a schema; ``mode=ro`` and ``query_only`` still
    keep the file unwritable. SQLite's internal tables (``sqlite_%``) are left out. A damaged
    file raises DatabaseUnreadable.
    """
    conn = _connect_readonly(db_path)
    try:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        ]
        names.sort(key=lambda n: (n.lower(), n))
        columns: dict[str, list[ColumnInfo]] = {}
        keys: dict[str, list[str]] = {}
        for name in names:
            info = conn.execute(f"PRAGMA table_info({_quote_ident(name)})").fetchall()
            columns[name] = [
                ColumnInfo(name=c[1], type=c[2] or "", primary_key=c[5] > 0, not_null=bool(c[3]))
                for c in info
            ]
            keys[name.lower()] = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5] > 0]
        tables = []
        for name in names:
            foreign_keys = []
            for fk in conn.execute(f"PRAGMA foreign_key_list({_quote_ident(name)})"):
                _id, seq, ref_table, column, ref_column = fk[:5]
                if ref_column is None:
                    # "REFERENCES t" with no column means t's primary key, in the same order.
                    ref_keys = keys.get(ref_table.lower(), [])
                    ref_column = ref_keys[seq] if seq < len(ref_keys) else None
                foreign_keys.append(ForeignKey(column, ref_table, ref_column))
            count_sql = f"SELECT count(*) FROM {_quote_ident(name)}"  # noqa: S608 - schema name
            (row_count,) = conn.execute(count_sql).fetchone()
            tables.append(TableInfo(name, columns[name], foreign_keys, row_count))
        return tables
    except sqlite3.DatabaseError as error:
        raise DatabaseUnreadable(
            f"The database cannot be read ({error}): it is damaged or not a SQLite database."
        ) from None
    finally:
        conn.close()


def schema_columns(db_path: Path) -> dict[str, set[str]]:
    """``{table: {column}}``, all lower case, for lint checks that match names like SQLite."""
    return {
        table.name.lower(): {column.name.lower() for column in table.columns}
        for table in read_schema(db_path)
    }


def sample_rows(db_path: Path, table: str, *, limit: int = 5) -> QueryResult:
    """The first ``limit`` rows of ``table``; ``truncated`` says whether the table has more.

    The name is matched against ``read_schema`` (case-insensitively, as SQLite does) and the
    schema's own spelling is quoted into the query, so a crafted name cannot inject SQL.
    """
    if limit < 0:
        raise ValueError("limit must be >= 0")
    by_lower = {t.name.lower(): t.name for t in read_schema(db_path)}
    name = by_lower.get(str(table).lower())
    if name is None:
        raise QueryRefused(f"no table named {table!r} in this database")
    sql = f"SELECT * FROM {_quote_ident(name)} LIMIT {int(limit) + 1}"  # noqa: S608 - checked
    return run_select(db_path, sql, row_cap=limit)


# --- database-edit scripts --------------------------------------------------------------

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


def _run_edit_script(conn: sqlite3.Connection, statements: list[str], timeout_s: float) -> None:
    """Run ``statements`` one at a time on ``conn`` (the copy), naming any that fails."""
    denied: list[str] = []

    def authorizer(action: int, arg1, arg2, db_name, source) -> int:
        if action in _EDIT_DENIED_ACTIONS:
            denied.append(_ACTION_NAMES[action])
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _FORBIDDEN_FUNCTIONS:
            denied.append(f"{arg2}()")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    conn.set_authorizer(authorizer)
    timed_out = _install_deadline(conn, timeout_s)
    for number, statement in enumerate(statements, start=1):
        where = f"statement {number} ({_snippet(statement)})"
        first = _first_word(statement)
        if first in _EDIT_FORBIDDEN_KEYWORDS:
            raise EditScriptError(f"{where}: {first} is not allowed in a database-edit script")
        denied.clear()
        try:
            conn.execute(statement).fetchall()
        except sqlite3.Error as error:
            if timed_out():
                raise EditScriptError(
                    f"{where} stopped after {timeout_s:.1f} s: the edit script's time limit"
                ) from None
            if denied:
                raise EditScriptError(
                    f"{where}: {denied[0]} is not allowed in a database-edit script"
                ) from None
            raise EditScriptError(f"{where} failed: {error}") from None
    conn.set_authorizer(None)
    conn.set_progress_handler(None, 0)
    if conn.in_transaction:
        # A script that opened a transaction and never closed it meant its changes to stay.
        conn.commit()


def edited_database(
    *, source: Path, edit_script: str, cache_dir: Path, timeout_s: float = 30.0
) -> Path:
    """The path of a read-only copy of ``source`` with ``edit_script`` applied.

    An empty script returns ``source`` itself. Otherwise the copy is cached as
    ``cache_dir/<sha256(source hash + script)>.sqlite``, so an unchanged task reuses its copy
    and an edited script or database gets a new one. The copy is built in a temporary file in
    ``cache_dir`` (SQLite's backup API reading ``source`` through a ``mode=ro`` connection, so
    the source is never opened for writing), the script runs statement by statement under an
    authorizer that denies ATTACH / DETACH / PRAGMA / load_extension and a time limit, then the
    file is made read-only (0o444) and moved into place with ``os.replace``. Concurrent builders
    each write their own temp file and the last atomic rename wins with identical content.
    Any failure raises EditScriptError and removes the temp file.
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
        return target

    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{key[:16]}-", suffix=".building")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        src = _connect_readonly(source)
        dst = sqlite3.connect(tmp, isolation_level=None)
        try:
            try:
                src.backup(dst)
            except sqlite3.Error as error:
                raise EditScriptError(f"could not copy the task database: {error}") from None
            src.close()
            # A scratch copy: no fsync, rollback journal in memory so no side files appear.
            dst.execute("PRAGMA synchronous = OFF")
            dst.execute("PRAGMA journal_mode = MEMORY")
            _run_edit_script(dst, statements, timeout_s)
            # A plain rollback-journal file, so readers need no -wal / -shm beside it.
            dst.execute("PRAGMA journal_mode = DELETE")
        finally:
            src.close()
            dst.close()
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
