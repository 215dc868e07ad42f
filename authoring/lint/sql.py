"""The ``gold_sql`` rule: the gold SQL is one SELECT that parses as SQLite and, when the
task database's schema is known, names only its tables and columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from hilbench_annotate.toolkit import sqlsyntax

from .findings import ERROR, Finding
from .text import as_text

if TYPE_CHECKING:
    from sqlglot import exp

_TOKEN_REPR = re.compile(r"<Token token_type: [\w.]+, text: (.*?), line: .*?>")
_PSEUDO_COLUMNS = frozenset({"rowid", "oid", "_rowid_"})


@lru_cache(maxsize=64)
def parse_sql(sql: str) -> tuple[tuple[exp.Expression, ...], str | None]:
    """Statements or a readable parse error. Cached: the SQL rarely changes between lints.
    sqlglot is imported where it is used (``sqlsyntax`` says why)."""
    from sqlglot.errors import ParseError, SqlglotError

    try:
        statements = sqlsyntax.parse(sql)
    except sqlsyntax.SqlTooComplex as exc:
        message = str(exc).rstrip(".")
        return (), message[:1].lower() + message[1:]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        description = _TOKEN_REPR.sub(r"'\1'", as_text(first.get("description")) or str(exc))
        where = f" (line {first['line']}, column {first['col']})" if "line" in first else ""
        return (), f"{description}{where}"
    except SqlglotError as exc:
        return (), str(exc).splitlines()[0]
    return tuple(s for s in statements if s is not None), None


def check_gold_sql(
    environment: Mapping, schema: Mapping[str, Iterable[str]] | None
) -> Iterator[Finding]:
    from sqlglot import exp

    field = "environment.gold_sql"
    sql = as_text(environment.get("gold_sql"))
    if not sql.strip():
        yield Finding("gold_sql", field, "The gold SQL is empty; write the query.", ERROR)
        return
    statements, error = parse_sql(sql)
    if error:
        yield Finding("gold_sql", field, f"The gold SQL does not parse as SQLite: {error}.", ERROR)
        return
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        yield Finding(
            "gold_sql",
            field,
            "The gold SQL must be exactly one SELECT query (only SELECT runs on task databases).",
            ERROR,
        )
        return
    if schema is None:
        return
    unknown = _unknown_names(
        statements[0],
        {as_text(t).lower(): {as_text(c).lower() for c in cols} for t, cols in schema.items()},
    )
    if unknown:
        yield Finding(
            "gold_sql",
            field,
            f"The gold SQL names {', '.join(unknown)}, not in the task database; "
            "fix the names or the database.",
            ERROR,
        )


def nodes(tree: exp.Expression, *kinds: type) -> dict[type, list]:
    """The nodes of each of ``kinds`` in ``tree``, in ``find_all``'s order, from one walk:
    a ``find_all`` walks the whole tree, and the seven a gold SQL's lint made were a third of
    a draft's lint (of some 1.2 s for 10,000 imported questions' first export)."""
    found: dict[type, list] = {kind: [] for kind in kinds}
    for node in tree.walk():  # breadth first, as find_all
        if isinstance(node, kinds):
            for kind in kinds:
                if isinstance(node, kind):
                    found[kind].append(node)
    return found


def _unknown_names(tree: exp.Expression, schema: dict[str, set[str]]) -> list[str]:
    """Tables and columns the query names that the schema lacks (conservative).

    Sources that are not database tables (CTEs, derived tables, table functions) make their
    columns unknowable here, so columns that might come from them are never reported.
    """
    from sqlglot import exp

    found = nodes(tree, exp.CTE, exp.Alias, exp.Subquery, exp.Table, exp.Column)
    ctes = found[exp.CTE]
    cte_names = {cte.alias_or_name.lower() for cte in ctes}
    cte_columns = {
        as_text(getattr(col, "name", col)).lower()
        for cte in ctes
        if isinstance(cte.args.get("alias"), exp.TableAlias)
        for col in cte.args["alias"].columns
    }
    select_aliases = {a.alias.lower() for a in found[exp.Alias] if a.alias}
    derived = {s.alias.lower() for s in found[exp.Subquery] if s.alias}

    unknown: list[str] = []
    aliases: dict[str, str] = {}
    tables: set[str] = set()
    opaque_source = bool(derived)
    for table in found[exp.Table]:
        if not isinstance(table.this, exp.Identifier):
            opaque_source = True  # a table-valued function such as json_each(...)
            continue
        name = table.name.lower()
        if name in cte_names:
            opaque_source = True
            aliases[(table.alias or name).lower()] = ""
            continue
        if name not in schema:
            unknown.append(f'table "{table.name}"')
            aliases[(table.alias or name).lower()] = ""
            continue
        tables.add(name)
        aliases[name] = name
        if table.alias:
            aliases[table.alias.lower()] = name

    for column in found[exp.Column]:
        if isinstance(column.this, exp.Star) or not column.name:
            continue
        name = column.name.lower()
        if name in _PSEUDO_COLUMNS:
            continue
        qualifier = column.table.lower()
        if qualifier:
            table = aliases.get(qualifier)
            if table and name not in schema[table]:
                unknown.append(f'column "{column.table}.{column.name}"')
            continue  # unknown qualifiers (derived tables, outer scopes) are not ours to judge
        if name in select_aliases or name in cte_columns or opaque_source:
            continue
        if any(name in schema[t] for t in tables):
            continue
        if not column.this.args.get("quoted"):
            # A quoted name that resolves nowhere is a string to SQLite ("black"): not ours.
            unknown.append(f'column "{column.name}"')
    return list(dict.fromkeys(unknown))
