"""The sql-tools sidecar: the task's database, read-only, and the agent's submission.

Tools: ``get_database_info``, ``get_table_info``, ``get_column_info`` (from the schema and
the description CSVs), ``execute_sql`` (one read-only statement, time limit, row cap) and
``submit_sql`` (written to ``SUBMISSION_FILE`` for the verifier). Environment: ``DATA_DIR``
(``database.sqlite``, ``database_description/``), ``SUBMISSION_FILE``, ``PORT``.
"""

from __future__ import annotations

import csv
import io
import os
import sqlite3
import sys
import time
from pathlib import Path

from mcp_server import schema, serve

DATA = Path(os.environ.get("DATA_DIR", "/data"))
SUBMISSION = Path(os.environ.get("SUBMISSION_FILE", "/harbor_shared/submitted_query.sql"))
ROW_CAP = int(os.environ.get("SQL_ROW_CAP", "200"))
TIMEOUT_S = float(os.environ.get("SQL_TIMEOUT_S", "30"))


def _connect():
    uri = f"file:{DATA / 'database.sqlite'}?mode=ro&immutable=1"
    connection = sqlite3.connect(uri, uri=True)
    connection.execute("PRAGMA query_only = ON")
    deadline = time.monotonic() + TIMEOUT_S
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return connection


def _descriptions(table):
    path = DATA / "database_description" / f"{table}.csv"
    if not path.is_file():
        return []
    text = path.read_bytes().decode("utf-8", "replace")
    return list(csv.DictReader(io.StringIO(text)))


def get_database_info(database_name):
    with _connect() as db:
        tables = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]  # fmt: skip
    lines = [f"Database {database_name}: {len(tables)} tables"]
    for table in tables:
        columns = _descriptions(table)
        lines.append(f"- {table}" + (f" ({len(columns)} described columns)" if columns else ""))
    return "\n".join(lines)


def get_table_info(database_name, table_name):
    with _connect() as db:
        columns = db.execute(f'PRAGMA table_info("{table_name.replace(chr(34), "")}")').fetchall()
    if not columns:
        return f"No table {table_name!r} in {database_name}."
    rows = _descriptions(table_name)
    described = {(r.get("original_column_name") or "").strip(): r for r in rows}
    lines = [f"Table {table_name}:"]
    for _cid, name, kind, *_rest in columns:
        about = described.get(name, {})
        text = (about.get("column_description") or "").strip()
        lines.append(f"- {name} {kind}" + (f": {text}" if text else ""))
    return "\n".join(lines)


def get_column_info(database_name, table_name, column_name):
    for row in _descriptions(table_name):
        if (row.get("original_column_name") or "").strip() == column_name:
            return "\n".join(f"{k}: {v}" for k, v in row.items() if v)
    return f"No description of {table_name}.{column_name}."


def execute_sql(query):
    with _connect() as db:
        cursor = db.execute(query)
        header = [d[0] for d in cursor.description or []]
        rows = cursor.fetchmany(ROW_CAP + 1)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows[:ROW_CAP])
    more = f"\n(first {ROW_CAP} rows shown)" if len(rows) > ROW_CAP else ""
    return out.getvalue() + more


def submit_sql(query):
    SUBMISSION.parent.mkdir(parents=True, exist_ok=True)
    SUBMISSION.write_text(query)
    return "Submitted."


TOOLS = {
    "get_database_info": ("List the tables of the database.",
                          schema(database_name="The database"), get_database_info),
    "get_table_info": ("List a table's columns and their descriptions.",
                       schema(database_name="The database", table_name="The table"),
                       get_table_info),
    "get_column_info": ("Describe one column.",
                        schema(database_name="The database", table_name="The table",
                               column_name="The column"), get_column_info),
    "execute_sql": ("Run one read-only SQL query; the first rows come back as CSV.",
                    schema(query="A SELECT statement"), execute_sql),
    "submit_sql": ("Submit your final SQL answer.", schema(query="The final query"), submit_sql),
}  # fmt: skip

if __name__ == "__main__":
    if not (DATA / "database.sqlite").is_file():
        # A release task's database is kept outside its folder: the bundle says where
        # (MISSING_DATA_NOTE, set by the image), and the trial stops here saying so.
        note = os.environ.get("MISSING_DATA_NOTE") or "the task's database is missing"
        sys.stderr.write(f"sql-tools: no {DATA / 'database.sqlite'}: {note}\n")
        sys.exit(1)
    serve("sql-tools", TOOLS)
