"""The one door to sqlglot's parser: every parse of task or user SQL goes through here.

sqlglot parses and prints recursively, about 25 Python frames per level of nesting, so SQL
nested a few dozen parentheses deep exhausts Python's recursion limit (1000 frames) and
raises RecursionError, after seconds of CPU when the nesting is in the thousands. A linear
scan (``nesting_depth``) refuses such SQL before sqlglot sees it, with a message naming the
limit, and a RecursionError sqlglot still raises (nesting the scan does not count, such as
hundreds of NOTs) becomes the same refusal.

Real gold SQL nests at most 6 levels (BIRD mini-dev); ``MAX_SQL_NESTING`` leaves room for
four times that and for the caller's own frames (a request, a worker, a test runner).
``MAX_SQL_CHARS`` bounds the text every check reads (the console's statement splitting is
quadratic in the worst case).

sqlglot is imported by the functions that parse, here and in the console and the lint: at
module level it was 0.05 s of every process's start-up (core's ``AppConfig.ready`` loads the
console), and the checks an import runs on every record (``check_sql_limits``) never parse.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hilbench_annotate.errors import DomainError

if TYPE_CHECKING:
    from sqlglot import exp

MAX_SQL_NESTING = 24
MAX_SQL_CHARS = 20_000

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# Where each kind of literal, quoted identifier or comment ends.
_CLOSERS = {"'": "'", '"': '"', "`": "`", "[": "]"}


class SqlTooComplex(DomainError):
    """SQL too long or too deeply nested to parse; the message names the limit."""


def _skip(sql: str, i: int) -> int:
    """The index past the string, quoted name or comment starting at ``i``, or ``i``."""
    char = sql[i]
    closer = _CLOSERS.get(char)
    if closer is not None:
        end = sql.find(closer, i + 1)
        # A doubled quote inside a string or name is the quote itself ('it''s').
        while end != -1 and closer != "]" and sql.startswith(closer, end + 1):
            end = sql.find(closer, end + 2)
        return len(sql) if end == -1 else end + 1
    if sql.startswith("--", i):
        end = sql.find("\n", i)
        return len(sql) if end == -1 else end + 1
    if sql.startswith("/*", i):
        end = sql.find("*/", i + 2)
        return len(sql) if end == -1 else end + 2
    return i


def nesting_depth(sql: str) -> int:
    """How deep parentheses and CASE … END nest in ``sql``, outside strings, quoted names
    and comments: one linear pass, whatever the text."""
    depth = deepest = 0
    i, size = 0, len(sql)
    while i < size:
        after = _skip(sql, i)
        if after != i:
            i = after
            continue
        char = sql[i]
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(depth - 1, 0)
        elif char.isalpha() or char == "_":
            word = _WORD.match(sql, i)
            if word is not None:
                name = word.group().upper()
                if name == "CASE":
                    depth += 1
                    deepest = max(deepest, depth)
                elif name == "END":
                    depth = max(depth - 1, 0)
                i = word.end()
                continue
        i += 1
    return deepest


def check_sql_limits(sql: str) -> None:
    """Raise SqlTooComplex when ``sql`` is longer or nests deeper than is ever parsed."""
    if len(sql) > MAX_SQL_CHARS:
        raise SqlTooComplex(
            f"The SQL is {len(sql):,} characters long; at most {MAX_SQL_CHARS:,} are accepted."
        )
    if sql.count("(") + sql.upper().count("CASE") <= MAX_SQL_NESTING:
        return  # fewer openers than the limit (an import checks thousands: skip the scan)
    depth = nesting_depth(sql)
    if depth > MAX_SQL_NESTING:
        raise SqlTooComplex(
            f"The SQL nests {depth} levels deep; at most {MAX_SQL_NESTING} are accepted "
            f"(parentheses and CASE … END)."
        )


def _too_deep() -> SqlTooComplex:
    return SqlTooComplex(
        f"The SQL nests too deeply to parse (its parser ran out of stack); at most "
        f"{MAX_SQL_NESTING} levels of parentheses and CASE … END are accepted, and long "
        f"chains such as NOT NOT … count too."
    )


def parse(sql: str, *, read: str = "sqlite") -> list[exp.Expression | None]:
    """``sqlglot.parse`` behind the limits; sqlglot's ParseError and TokenError pass through."""
    import sqlglot

    check_sql_limits(sql)
    try:
        return sqlglot.parse(sql, read=read)
    except RecursionError:
        raise _too_deep() from None


def format_pretty(sql: str, *, dialect: str = "sqlite") -> list[str]:
    """Each statement of ``sql`` pretty-printed (``sqlglot.transpile``) behind the limits."""
    import sqlglot

    check_sql_limits(sql)
    try:
        return sqlglot.transpile(sql, read=dialect, write=dialect, pretty=True)
    except RecursionError:
        raise _too_deep() from None
