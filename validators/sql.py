"""Structural checks of a SQL task (PRODUCT.md, "Structural invariants", SQL).

``check_sql_task`` returns five results, always in this order and with these names:

* ``database_integrity`` — the database opens read-only and ``PRAGMA integrity_check`` is ok;
* ``edit_script_applies`` — the database-edit script applies to a copy;
* ``gold_sql_parses`` — one SELECT (sqlglot, SQLite dialect) naming only existing tables and
  columns of the edited database;
* ``gold_sql_runs`` — runs under the time limit, returns at least one row, and a second run
  returns the same rows (as a multiset);
* ``golden_output_matches`` — the result matches ``golden_output.csv`` by the release's rule,
  so the exported verifier gives the oracle reward 1 (``score`` of
  ``hilbench_annotate.toolkit.compare``, the one function that scores SQL for reward).

Everything that touches SQLite goes through ``toolkit.sqlconsole`` (read-only connections, the
SELECT-only console, edit scripts on a cached copy) and the name check is the lint's ``gold_sql``
rule, so the validator and the authoring screen can never disagree.
"""

from __future__ import annotations

import csv
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from authoring import lint
from hilbench_annotate.toolkit.compare import golden_output_csv, read_golden_csv, score
from hilbench_annotate.toolkit.sqlchild import connect_readonly, install_deadline
from hilbench_annotate.toolkit.sqlconsole import (
    EditScriptError,
    QueryRefused,
    QueryTimeout,
    StorageFull,
    check_select,
    run_select,
    schema_columns,
    script_statements,
)
from hilbench_annotate.toolkit.sqledit import edited_database

from .results import ERROR, FAILED, PASSED, SKIPPED, CheckResult

__all__ = ["CHECK_NAMES", "check_sql_task", "golden_output_csv"]

CHECK_NAMES = (
    "database_integrity",
    "edit_script_applies",
    "gold_sql_parses",
    "gold_sql_runs",
    "golden_output_matches",
)

# More rows than this and the gold result is not compared (a task answer is never this big).
ROW_CAP = 200_000
# Rows shown in a result's details.
PREVIEW_ROWS = 5
# Problems from integrity_check kept in details.
INTEGRITY_LINES = 10


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _json_cell(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def _preview(rows: list[tuple] | list[list]) -> list[list]:
    """The first rows, JSON-ready, for a result's details."""
    return [[_json_cell(v) for v in row] for row in rows[:PREVIEW_ROWS]]


def _database_path(env: object) -> Path | None:
    database = getattr(env, "database", None)
    if database is None:
        return None
    path = getattr(database, "path", None)
    return Path(path) if path else None


# --- the checks -------------------------------------------------------------------------


def _check_integrity(path: Path, timeout_s: float) -> CheckResult:
    name = "database_integrity"
    if not path.is_file():
        return CheckResult(
            name,
            FAILED,
            f"The database file {path} does not exist; re-import the task's database.",
            {"path": str(path)},
        )
    try:
        conn = connect_readonly(path)
    except sqlite3.Error as error:
        return CheckResult(
            name,
            FAILED,
            f"The database cannot be opened read-only ({error}); re-import a sound copy.",
            {"path": str(path), "error": str(error)},
        )
    try:
        timed_out = install_deadline(conn, timeout_s)
        try:
            answer = conn.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.Error as error:
            if timed_out():
                return CheckResult(
                    name,
                    ERROR,
                    f"The integrity check was stopped after {timeout_s:.1f} s; rerun it with a "
                    "longer time limit.",
                    {"path": str(path)},
                )
            return CheckResult(
                name,
                FAILED,
                f"The database is damaged: SQLite says {error!s}; re-import a sound copy.",
                {"path": str(path), "error": str(error)},
            )
    finally:
        conn.close()
    # One problem per line; SQLite packs several into one row and heads them with the schema.
    lines = [
        line.strip()
        for row in answer
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("***")
    ]
    if lines == ["ok"]:
        return CheckResult(
            name, PASSED, "The database opens read-only and passes SQLite's integrity check."
        )
    return CheckResult(
        name,
        FAILED,
        f"The database fails SQLite's integrity check ({lines[0] if lines else 'no answer'}); "
        "re-import a sound copy.",
        {"path": str(path), "problems": lines[:INTEGRITY_LINES], "problem_count": len(lines)},
    )


# Makes the edited copy: (source, script, timeout_s) -> its path.
CopyMaker = Callable[[Path, str, float], Path]


def _check_edit_script(
    path: Path, script: str, copy: CopyMaker, timeout_s: float
) -> tuple[CheckResult, Path | None]:
    name = "edit_script_applies"
    if not script.strip() or not script_statements(script):
        return CheckResult(
            name, PASSED, "The task has no database-edit script; there is nothing to apply."
        ), path
    try:
        edited = copy(path, script, timeout_s)
    except StorageFull as error:
        return CheckResult(
            name,
            ERROR,
            f"The database-edit script could not be tried: {error}",
            {"error": str(error)},
        ), None
    except EditScriptError as error:
        return CheckResult(
            name,
            FAILED,
            f"The database-edit script does not apply: {error}. Fix that statement.",
            {"error": str(error)},
        ), None
    except (OSError, sqlite3.Error) as error:
        return CheckResult(
            name,
            ERROR,
            f"The database-edit script could not be tried ({error}); check the cache directory "
            "and rerun the checks.",
            {"error": str(error)},
        ), None
    return CheckResult(
        name,
        PASSED,
        f"The database-edit script applies ({len(script_statements(script))} statements).",
        {"edited_path": str(edited)},
    ), edited


def _check_parses(sql: str, db_path: Path | None, why_unchecked: str) -> CheckResult:
    """The lint's gold_sql rule (parse, one query, names) plus the console's SELECT-only check.

    With no usable database (``db_path`` None) the SQL is parsed but its names are not checked;
    ``why_unchecked`` says why, in the PASSED message.
    """
    name = "gold_sql_parses"
    schema = None
    if db_path is not None:
        try:
            schema = schema_columns(db_path)
        except (OSError, sqlite3.Error) as error:
            why_unchecked = f"the database schema could not be read ({error})"
    draft = {"domain": "sql", "environment": {"gold_sql": sql}}
    findings = [f for f in lint.lint_task(draft, schema=schema) if f.rule == "gold_sql"]
    if findings:
        return CheckResult(
            name, FAILED, findings[0].message, {"findings": [f.message for f in findings]}
        )
    try:
        check_select(sql)
    except QueryRefused as error:
        return CheckResult(
            name,
            FAILED,
            f"The SQL console refuses the gold SQL ({error}); rewrite it as a single SELECT.",
            {"error": str(error)},
        )
    if schema is None:
        return CheckResult(
            name,
            PASSED,
            f"The gold SQL parses as one SELECT; its table and column names were not checked "
            f"because {why_unchecked}.",
            {"names_checked": False},
        )
    return CheckResult(
        name,
        PASSED,
        "The gold SQL parses as one SELECT and names only existing tables and columns.",
        {"names_checked": True},
    )


def _check_runs(
    db_path: Path, sql: str, timeout_s: float
) -> tuple[CheckResult, tuple[list[str], list[tuple]] | None]:
    name = "gold_sql_runs"
    results = []
    for attempt in ("first", "second"):
        try:
            result = run_select(db_path, sql, timeout_s=timeout_s, row_cap=ROW_CAP, exact=True)
        except QueryTimeout:
            return CheckResult(
                name,
                FAILED,
                f"The gold SQL was stopped after {timeout_s:.1f} s (the time limit) on its "
                f"{attempt} run; make it faster, e.g. with narrower joins or filters.",
                {"timeout_s": timeout_s},
            ), None
        except QueryRefused as error:
            return CheckResult(
                name,
                FAILED,
                f"The gold SQL fails on the task database ({error}); fix the query.",
                {"error": str(error)},
            ), None
        if result.truncated:
            return CheckResult(
                name,
                FAILED,
                f"The gold SQL returns more than {ROW_CAP} rows; narrow the question so the "
                "answer is a table a person can check.",
                {"first_rows": _preview(result.rows), "columns": result.columns},
            ), None
        if not result.rows:
            return CheckResult(
                name,
                FAILED,
                "The gold SQL returns no rows; check its filters and values against the "
                "database (a task's answer has at least one row).",
                {"columns": result.columns},
            ), None
        results.append(result)
    first, second = results
    if first.columns != second.columns or Counter(first.rows) != Counter(second.rows):
        return CheckResult(
            name,
            FAILED,
            "The gold SQL is not deterministic: two runs returned different rows. Remove "
            "random(), LIMIT without a total ORDER BY, or other sources of variation.",
            {
                "columns": first.columns,
                "first_run": _preview(first.rows),
                "second_run": _preview(second.rows),
            },
        ), None
    elapsed = max(first.elapsed_ms, second.elapsed_ms)
    return CheckResult(
        name,
        PASSED,
        f"The gold SQL returns {len(first.rows)} rows, the same on two runs, "
        f"within the {timeout_s:.1f} s limit.",
        {
            "columns": first.columns,
            "row_count": len(first.rows),
            "first_rows": _preview(first.rows),
            "elapsed_ms": round(elapsed, 1),
        },
    ), (first.columns, first.rows)


def _check_golden(golden: str, columns: list[str], rows: list[tuple]) -> CheckResult:
    name = "golden_output_matches"
    if not golden.strip():
        return CheckResult(
            name,
            FAILED,
            "golden_output.csv is missing: compute it from the gold SQL's result.",
            {"columns": columns, "first_rows": _preview(rows), "row_count": len(rows)},
        )
    try:
        gold_columns, gold_rows = read_golden_csv(golden)
    except (ValueError, csv.Error) as error:
        return CheckResult(
            name,
            FAILED,
            f"golden_output.csv is not a valid table ({error}); recompute it.",
            {"error": str(error)},
        )
    verdict = score(columns, rows, gold_columns, gold_rows)
    if verdict["match"]:
        how = verdict["compared"]
        note = "" if how == "as returned" else f", {how}"
        return CheckResult(
            name,
            PASSED,
            f"The gold SQL's result matches golden_output.csv ({len(gold_rows)} rows{note}).",
        )
    reason = verdict["reason"]
    return CheckResult(
        name,
        FAILED,
        f"The gold SQL's result does not match golden_output.csv: {reason}. Recompute "
        "golden_output.csv or fix the gold SQL.",
        {
            "reason": reason,
            "result_columns": columns,
            "result_first_rows": _preview(rows),
            "result_row_count": len(rows),
            "golden_columns": gold_columns,
            "golden_first_rows": _preview(gold_rows),
            "golden_row_count": len(gold_rows),
        },
    )


def _skipped(name: str, reason: str) -> CheckResult:
    return CheckResult(name, SKIPPED, f"Not checked: {reason}.")


# --- entry point ------------------------------------------------------------------------


def _cached_in(cache_dir: Path | None) -> CopyMaker:
    """A copy maker caching in ``cache_dir``, with no quota (for callers outside the app)."""
    if cache_dir is None:
        raise ValueError("check_sql_task needs copy or cache_dir")

    def copy(source: Path, script: str, timeout_s: float) -> Path:
        return edited_database(
            source=source, edit_script=script, cache_dir=Path(cache_dir), timeout_s=timeout_s
        )

    return copy


def check_sql_task(
    env: object,
    *,
    timeout_s: float = 30.0,
    cache_dir: Path | None = None,
    copy: CopyMaker | None = None,
) -> list[CheckResult]:
    """The five SQL structural checks for ``env`` (a SqlEnvironment or any object like one).

    ``env`` needs ``database`` (None, or an object with ``.path``), ``edit_script``,
    ``gold_sql`` and ``golden_output`` (CSV text). ``copy`` makes the edited copy (the app
    passes its project's cache and quota); without it copies are cached in ``cache_dir``.
    A check that cannot run because an earlier one failed is SKIPPED and says which.
    """
    if copy is None:
        copy = _cached_in(cache_dir)

    sql = _text(getattr(env, "gold_sql", ""))
    script = _text(getattr(env, "edit_script", ""))
    golden = _text(getattr(env, "golden_output", ""))
    path = _database_path(env)

    if path is None:
        why = "the task has no database; attach one"
        return [
            _skipped("database_integrity", why),
            _skipped("edit_script_applies", why),
            _check_parses(sql, None, "the task has no database"),
            _skipped("gold_sql_runs", why),
            _skipped("golden_output_matches", why),
        ]

    integrity = _check_integrity(path, timeout_s)
    if integrity.outcome != PASSED:
        why = "the database failed its integrity check; fix it first"
        return [
            integrity,
            _skipped("edit_script_applies", why),
            _check_parses(sql, None, "the database failed its integrity check"),
            _skipped("gold_sql_runs", why),
            _skipped("golden_output_matches", why),
        ]

    edit, edited = _check_edit_script(path, script, copy, timeout_s)
    if edited is None:
        why = "the database-edit script does not apply; fix it first"
        return [
            integrity,
            edit,
            _check_parses(sql, None, "the database-edit script does not apply"),
            _skipped("gold_sql_runs", why),
            _skipped("golden_output_matches", why),
        ]

    parses = _check_parses(sql, edited, "")
    if parses.outcome != PASSED:
        why = "the gold SQL does not parse or names unknown tables or columns; fix it first"
        return [
            integrity,
            edit,
            parses,
            _skipped("gold_sql_runs", why),
            _skipped("golden_output_matches", why),
        ]

    runs, result = _check_runs(edited, sql, timeout_s)
    if result is None:
        return [
            integrity,
            edit,
            parses,
            runs,
            _skipped("golden_output_matches", "the gold SQL does not run cleanly; fix it first"),
        ]
    columns, rows = result
    return [integrity, edit, parses, runs, _check_golden(golden, columns, rows)]
