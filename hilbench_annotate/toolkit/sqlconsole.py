"""The SQL console: run an author's or a model's query on a task database, never changing it.

Task databases are the benchmark's ground truth, so every path here is read-only twice over:
``check_select`` refuses anything but one SELECT before SQLite sees it, and the connection
itself is opened ``mode=ro`` with ``query_only`` and an authorizer that denies every action a
plain SELECT does not need. Either layer alone would stop a write; both must fail for one to
happen.

Every query runs in a child process (``sqlchild``) that is killed at its deadline and has its
own memory limit, because SQLite cannot be interrupted in the middle of one long expression.
The limits of every query (a value's size, memory, the size of a cell and of an answer) come
from ``current_limits()``; core's ``AppConfig.ready`` points it at the settings, so no caller
can forget them. Over-long cells and answers are cut with a visible marker, except for
``exact`` callers (scoring, validation, golden output), which get a refusal instead.

Database-edit scripts (SQL that adds tables or code values) are the one place SQL writes:
``sqledit.edited_database`` runs them on a copy, in the same kind of child.

This module is pure (stdlib ``sqlite3`` + ``sqlglot``): no Django models, so validators, the
worker and the API can all call it. sqlglot is imported by the functions that need it
(``sqlsyntax`` says why).
"""

from __future__ import annotations

import logging
import marshal
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit import sqlsyntax
from hilbench_annotate.toolkit.sqlchild import connect_readonly, open_readonly

if TYPE_CHECKING:
    from sqlglot import exp
    from sqlglot.errors import ParseError

__all__ = ["open_readonly"]  # re-exported: the console's connection, defined in sqlchild

logger = logging.getLogger(__name__)


class QueryRefused(DomainError):
    """The console will not run this query; the message says exactly why."""


class QueryTimeout(DomainError):
    """The query ran past the console's time limit and was stopped."""


class EditScriptError(DomainError):
    """A database-edit script failed; the message names the statement and SQLite's error."""


class StorageFull(DomainError):
    """An edited copy would take more room than its caller allows (a project's quota)."""


class DatabaseUnreadable(DomainError):
    """The database file is damaged or is not a database; the message gives SQLite's reason."""


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]
    truncated: bool
    elapsed_ms: float
    # Values cut to the cell limit, and why rows were left off if not only the row cap.
    cut_cells: int = 0
    note: str = ""


@dataclass(frozen=True)
class QueryLimits:
    """What one query may take. ``exact_result_bytes`` bounds the answers of callers that
    compare results, which are refused rather than cut; ``cell_bytes`` and ``result_bytes``
    bound the others, which are cut."""

    value_bytes: int = 10_000_000
    memory_bytes: int = 1 << 30
    cell_bytes: int = 10_000
    result_bytes: int = 2_000_000
    exact_result_bytes: int = 64_000_000


_limits_source: Callable[[], QueryLimits] = QueryLimits


def set_limits_source(source: Callable[[], QueryLimits]) -> None:
    """Where every query's limits come from; called once, from core's ``AppConfig.ready``."""
    global _limits_source
    _limits_source = source


def current_limits() -> QueryLimits:
    return _limits_source()


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


@cache
def _forbidden_nodes() -> tuple[type[exp.Expression], ...]:
    """sqlglot nodes that mean "this statement writes or changes the session", wherever they
    appear (a WITH clause can hide a DELETE ... RETURNING in other dialects; refuse it
    anyway)."""
    from sqlglot import exp

    return (
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


# --- splitting and checking -------------------------------------------------------------


def _tokens(text: str) -> list | None:
    """sqlglot's tokens for ``text``, or None when it cannot tokenize (left to SQLite)."""
    import sqlglot
    from sqlglot.errors import TokenError

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
    from sqlglot import TokenType

    tokens = _tokens(text)
    return tokens is not None and all(t.token_type == TokenType.SEMICOLON for t in tokens)


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


def first_word(statement: str) -> str:
    """The statement's first token in upper case (comments skipped), for refusal messages."""
    tokens = _tokens(statement)
    if tokens:
        return tokens[0].text.upper()
    words = statement.split()
    return words[0].upper() if words else ""


def _node_name(node: exp.Expression) -> str:
    """A SQL keyword naming a sqlglot node ("INSERT", "SELECT INTO", "ALTER" ...)."""
    from sqlglot import exp

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
    ``run_select`` uses is read-only as well. SQL past ``sqlsyntax``'s length or nesting
    limits is refused before it is split or parsed.
    """
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        sqlsyntax.check_sql_limits(sql or "")
    except sqlsyntax.SqlTooComplex as error:
        raise QueryRefused(str(error)) from None
    statements = script_statements(sql or "")
    if not statements:
        raise QueryRefused("empty query")
    if len(statements) > 1:
        raise QueryRefused(f"only one statement may be run; found {len(statements)}")
    statement = statements[0]

    first = first_word(statement)
    if first in _STATEMENT_KEYWORDS:
        raise QueryRefused(f"{first} is not allowed: the console only runs SELECT")
    if first not in {"SELECT", "WITH"}:
        raise QueryRefused(f"the console only runs SELECT; this query starts with {first!r}")

    try:
        parsed = [e for e in sqlsyntax.parse(statement) if e is not None]
    except sqlsyntax.SqlTooComplex as error:
        raise QueryRefused(str(error)) from None
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
        if isinstance(node, _forbidden_nodes()):
            raise QueryRefused(f"{_node_name(node)} is not allowed: the console only runs SELECT")
    return statement


# --- running in the child ---------------------------------------------------------------

_CHILD = Path(__file__).with_name("sqlchild.py")
# The parent waits this long past the deadline before killing the child, which stops a
# looping statement itself at the deadline (and says which statement, for edit scripts).
KILL_GRACE_S = 0.5


def amount(size: int) -> str:
    """A byte count for messages: "2 MB", "10 kB", "512 bytes"."""
    if size >= 1_000_000:
        return f"{size / 1_000_000:g} MB"
    if size >= 1_000:
        return f"{size / 1_000:g} kB"
    return f"{size} bytes"


def run_child(request: dict, *, timeout_s: float, limits: QueryLimits) -> dict:
    """Send ``request`` to a fresh ``sqlchild`` process and return its answer.

    The child is killed ``KILL_GRACE_S`` after ``timeout_s`` and whenever the caller stops
    waiting (an exception here), so no query outlives its request. A child that was killed
    or died answers ``{"ok": False, "kind": "timeout" | "crash"}``.
    """
    request = {
        **request,
        "timeout_s": float(timeout_s),
        "value_bytes": limits.value_bytes,
        "memory_bytes": limits.memory_bytes,
    }
    # -I -S: no environment variables, user or site packages; env={}: no secrets either.
    command = [sys.executable, "-I", "-S", str(_CHILD)]
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and script, no shell
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={}
    )
    try:
        out, err = proc.communicate(marshal.dumps(request), timeout=timeout_s + KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        return {"ok": False, "kind": "timeout", "message": ""}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if proc.returncode == -signal.SIGXCPU:  # its CPU limit: a deadline the kernel enforced
        return {"ok": False, "kind": "timeout", "message": ""}
    try:
        answer = marshal.loads(out) if proc.returncode == 0 else None  # noqa: S302 - our child
    except (EOFError, ValueError, TypeError):
        answer = None
    if not isinstance(answer, dict):
        logger.warning(
            "SQL child exited %s: %s", proc.returncode, err[-2000:].decode(errors="replace")
        )
        return {"ok": False, "kind": "crash", "message": f"exit status {proc.returncode}"}
    return answer


def _query_error(answer: dict, timeout_s: float, limits: QueryLimits) -> DomainError:
    kind, message = answer["kind"], answer.get("message", "")
    if kind == "timeout":
        return QueryTimeout(f"stopped after {timeout_s:.1f} s: the console's time limit")
    if kind == "denied":
        return QueryRefused(f"{message} is not allowed: the console only runs SELECT")
    if kind == "value":
        return QueryRefused(
            f"a value would be larger than {amount(limits.value_bytes)}, the most one value "
            f"may hold here (SQLite: {message})"
        )
    if kind == "memory":
        return QueryRefused(
            f"the query needs more memory than the console allows "
            f"({amount(limits.memory_bytes // 2)}); narrow it"
        )
    if kind == "result":
        return QueryRefused(
            f"the result is larger than {amount(limits.exact_result_bytes)} by row "
            f"{answer.get('rows')}, more than is ever compared or stored; narrow the query"
        )
    if kind == "crash":
        return QueryRefused(f"the query's process ended without an answer ({message})")
    return QueryRefused(f"SQLite error: {message}")


def _note(answer: dict, limits: QueryLimits) -> str:
    notes = []
    if answer["cut_cells"]:
        notes.append(
            f"{answer['cut_cells']} value{'s' if answer['cut_cells'] != 1 else ''} longer than "
            f"{amount(limits.cell_bytes)} cut (marked “cut”)"
        )
    if answer["capped"]:
        notes.append(
            f"only the first {len(answer['rows'])} rows are shown: the answer passed "
            f"{amount(limits.result_bytes)}"
        )
    return "; ".join(notes)


def run_select(
    db_path: Path, sql: str, *, timeout_s: float = 5.0, row_cap: int = 500, exact: bool = False
) -> QueryResult:
    """Run one checked SELECT on a read-only connection in a child process, within limits.

    Only ``row_cap + 1`` rows are ever fetched, so a huge result costs no more than the cap;
    ``truncated`` says whether more rows existed (or were left off at the byte limit, which
    ``note`` then says). ``exact`` callers compare the result, so values are never cut: an
    answer over ``exact_result_bytes`` is refused. SQLite errors (no such column ...) become
    QueryRefused with SQLite's message, because they are the author's to fix.
    """
    if row_cap < 0:
        raise ValueError("row_cap must be >= 0")
    statement = check_select(sql)
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"no database file at {db_path}")
    limits = current_limits()
    request = {
        "op": "select",
        "path": str(path.resolve()),
        "sql": statement,
        "row_cap": row_cap,
        "exact": exact,
        "cell_bytes": limits.cell_bytes,
        "result_bytes": limits.exact_result_bytes if exact else limits.result_bytes,
    }
    answer = run_child(request, timeout_s=timeout_s, limits=limits)
    if not answer["ok"]:
        raise _query_error(answer, timeout_s, limits)
    return QueryResult(
        columns=list(answer["columns"]),
        rows=list(answer["rows"]),
        truncated=answer["truncated"],
        elapsed_ms=answer["elapsed_ms"],
        cut_cells=answer["cut_cells"],
        note=_note(answer, limits),
    )


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
    conn = connect_readonly(db_path)
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


_SCHEMAS: dict[tuple, dict[str, frozenset[str]]] = {}


def schema_columns(db_path: Path) -> dict[str, set[str]]:
    """``{table: {column}}``, all lower case, for lint checks that match names like SQLite.

    Read once per process for the file as it is on disk (path, inode, size, modification
    time): ten thousand questions on one database are linted against one reading of it."""
    stat = os.stat(db_path)
    key = (str(db_path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    schema = _SCHEMAS.get(key)
    if schema is None:
        schema = {
            table.name.lower(): frozenset(column.name.lower() for column in table.columns)
            for table in read_schema(db_path)
        }
        if len(_SCHEMAS) >= 256:
            _SCHEMAS.clear()
        _SCHEMAS[key] = schema
    return {table: set(columns) for table, columns in schema.items()}


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
