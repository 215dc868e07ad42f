"""The SQL console must never change a task database, and must say why it refuses a query.

Every test builds a real SQLite file, so the guarantees are checked against SQLite itself,
not against mocks: refused statements leave the file byte-identical, the connection is
read-only even without the SQL checks, and edit scripts only ever touch a cached copy.
"""

import hashlib
import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from hilbench_annotate.toolkit.sqlconsole import (
    ColumnInfo,
    EditScriptError,
    ForeignKey,
    QueryRefused,
    QueryTimeout,
    check_select,
    open_readonly,
    read_schema,
    run_select,
    sample_rows,
    schema_columns,
    script_statements,
)
from hilbench_annotate.toolkit.sqledit import edited_database

CUSTOMERS = 100
ORDERS = 300

COUNT_TO_A_BILLION = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "
    "SELECT count(*) FROM c"
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path) -> Path:
    """A small BIRD-like database: customers and their orders, joined by a foreign key."""
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE customers (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            segment TEXT
        );
        CREATE TABLE orders (
            order_id INTEGER PRIMARY KEY,
            customer_id INTEGER NOT NULL REFERENCES customers(id),
            amount REAL,
            status TEXT
        );
        """
    )
    conn.executemany(
        "INSERT INTO customers VALUES (?, ?, ?)",
        [(i, f"customer {i}", "SME" if i % 3 else "LAM") for i in range(1, CUSTOMERS + 1)],
    )
    conn.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?)",
        [(i, i % CUSTOMERS + 1, i * 1.5, "S" if i % 2 else "P") for i in range(1, ORDERS + 1)],
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def cache_dir(tmp_path) -> Path:
    return tmp_path / "edited"


# --- running SELECT ---------------------------------------------------------------------


def test_select_returns_columns_and_rows(db):
    result = run_select(db, "SELECT id, name FROM customers WHERE id <= 3 ORDER BY id")
    assert result.columns == ["id", "name"]
    assert result.rows == [(1, "customer 1"), (2, "customer 2"), (3, "customer 3")]
    assert result.truncated is False
    assert result.elapsed_ms >= 0


def test_join_over_foreign_key(db):
    result = run_select(
        db,
        "SELECT c.segment, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id "
        "GROUP BY c.segment ORDER BY c.segment",
    )
    assert result.columns == ["segment", "count(*)"]
    assert sum(n for _, n in result.rows) == ORDERS


def test_row_cap_truncates(db):
    capped = run_select(db, "SELECT * FROM orders", row_cap=10)
    assert len(capped.rows) == 10
    assert capped.truncated is True

    whole = run_select(db, "SELECT * FROM orders", row_cap=ORDERS)
    assert len(whole.rows) == ORDERS
    assert whole.truncated is False


@pytest.mark.parametrize(
    "sql, expected",
    [
        (
            "WITH big AS (SELECT * FROM orders WHERE amount > 400) SELECT count(*) FROM big",
            [(34,)],
        ),
        ("SELECT id FROM customers WHERE id < 3 UNION SELECT 99 ORDER BY 1", [(1,), (2,), (99,)]),
        (
            "SELECT id FROM customers WHERE id <= 3 "
            "INTERSECT SELECT customer_id FROM orders WHERE customer_id >= 2 ORDER BY 1",
            [(2,), (3,)],
        ),
        ("SELECT id FROM customers WHERE id <= 3 EXCEPT SELECT 2 ORDER BY 1", [(1,), (3,)]),
        (
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 7) "
            "SELECT max(x) FROM n",
            [(7,)],
        ),
    ],
)
def test_read_only_query_forms_are_allowed(db, sql, expected):
    assert run_select(db, sql).rows == expected


def test_trailing_semicolons_and_comments_are_fine():
    assert check_select("SELECT 1;") == "SELECT 1"
    assert check_select("  SELECT 1 ;; \n -- done\n") == "SELECT 1"
    assert check_select("SELECT ';' AS semi; ") == "SELECT ';' AS semi"


def test_sqlite_errors_are_refusals_with_sqlites_message(db):
    with pytest.raises(QueryRefused, match="no such column: nope"):
        run_select(db, "SELECT nope FROM customers")
    with pytest.raises(QueryRefused, match="no such table: missing"):
        run_select(db, "SELECT * FROM missing")


# --- refusing everything else -----------------------------------------------------------


@pytest.mark.parametrize(
    "sql, message",
    [
        ("INSERT INTO orders VALUES (1000, 1, 1.0, 'S')", "INSERT is not allowed"),
        ("UPDATE orders SET amount = 0", "UPDATE is not allowed"),
        ("DELETE FROM orders", "DELETE is not allowed"),
        ("DROP TABLE orders", "DROP is not allowed"),
        ("CREATE TABLE evil (a)", "CREATE is not allowed"),
        ("REPLACE INTO orders VALUES (1, 1, 1.0, 'S')", "REPLACE is not allowed"),
        ("ALTER TABLE orders ADD COLUMN b", "ALTER is not allowed"),
        ("ATTACH DATABASE '{tmp}/evil.sqlite' AS evil", "ATTACH is not allowed"),
        ("PRAGMA writable_schema = 1", "PRAGMA is not allowed"),
        ("PRAGMA table_info(orders)", "PRAGMA is not allowed"),
        ("VACUUM INTO '{tmp}/copy.sqlite'", "VACUUM is not allowed"),
        ("BEGIN", "BEGIN is not allowed"),
        ("WITH x AS (SELECT 1) DELETE FROM orders", "DELETE is not allowed"),
        ("WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x", "DELETE is not allowed"),
        ("SELECT 1; DELETE FROM orders", "only one statement may be run; found 2"),
        ("SELECT 1; SELECT 2", "only one statement may be run; found 2"),
        ("", "empty query"),
        ("  ;  -- nothing here\n", "empty query"),
        ("this is not sql", "only runs SELECT; this query starts with 'THIS'"),
        ("SELECT amount FROM orders WHERE (", "syntax error"),
    ],
)
def test_refused_queries_say_why_and_leave_the_file_alone(db, tmp_path, sql, message):
    sql = sql.replace("{tmp}", str(tmp_path))
    before = digest(db)
    with pytest.raises(QueryRefused) as refused:
        run_select(db, sql)
    assert message in str(refused.value)
    assert digest(db) == before
    assert not (tmp_path / "evil.sqlite").exists()
    assert not (tmp_path / "copy.sqlite").exists()
    # The same refusal comes from the check alone, before any connection is opened.
    with pytest.raises(QueryRefused) as checked:
        check_select(sql)
    assert message in str(checked.value)


def test_refused_errors_are_domain_errors():
    from hilbench_annotate.errors import DomainError

    assert issubclass(QueryRefused, DomainError)
    assert issubclass(QueryTimeout, DomainError)
    assert issubclass(EditScriptError, DomainError)


# --- defence in depth: the connection itself is read-only -------------------------------


def test_open_readonly_refuses_writes_and_attach_inside_sqlite(db, tmp_path):
    before = digest(db)
    conn = open_readonly(db)
    try:
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (ORDERS,)
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("INSERT INTO orders VALUES (1000, 1, 1.0, 'S')")
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("DELETE FROM orders")
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute(f"ATTACH DATABASE '{tmp_path}/evil.sqlite' AS evil")
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("PRAGMA writable_schema = 1")
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("SELECT load_extension('x')")
    finally:
        conn.close()
    assert not (tmp_path / "evil.sqlite").exists()
    assert digest(db) == before


def test_open_readonly_file_mode_holds_without_the_authorizer(db):
    """Even with the authorizer and query_only switched off, SQLite opened the file read-only."""
    before = digest(db)
    conn = open_readonly(db)
    try:
        conn.set_authorizer(None)
        conn.execute("PRAGMA query_only = OFF")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM orders")
    finally:
        conn.close()
    assert digest(db) == before


def test_open_readonly_never_creates_a_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_readonly(tmp_path / "absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()


# --- time limit -------------------------------------------------------------------------


def test_runaway_query_is_stopped(db):
    started = time.monotonic()
    with pytest.raises(QueryTimeout, match=r"stopped after 0\.5 s: the console's time limit"):
        run_select(db, COUNT_TO_A_BILLION, timeout_s=0.5)
    assert time.monotonic() - started < 5


# --- schema -----------------------------------------------------------------------------


def test_read_schema_reports_tables_columns_keys_and_counts(db):
    before = digest(db)
    customers, orders = read_schema(db)
    assert customers.name == "customers"
    assert customers.columns == [
        ColumnInfo("id", "INTEGER", primary_key=True, not_null=False),
        ColumnInfo("name", "TEXT", primary_key=False, not_null=True),
        ColumnInfo("segment", "TEXT", primary_key=False, not_null=False),
    ]
    assert customers.foreign_keys == []
    assert customers.row_count == CUSTOMERS

    assert orders.name == "orders"
    assert [c.name for c in orders.columns] == ["order_id", "customer_id", "amount", "status"]
    assert [c.type for c in orders.columns] == ["INTEGER", "INTEGER", "REAL", "TEXT"]
    assert [c.primary_key for c in orders.columns] == [True, False, False, False]
    assert orders.foreign_keys == [ForeignKey("customer_id", "customers", "id")]
    assert orders.row_count == ORDERS
    assert digest(db) == before


def test_read_schema_resolves_a_foreign_key_to_the_primary_key(tmp_path):
    """``REFERENCES t`` without a column means t's primary key; lint needs the column name."""
    path = tmp_path / "implicit.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE Zeta (code TEXT PRIMARY KEY);"
        "CREATE TABLE alpha (id INTEGER PRIMARY KEY, code TEXT REFERENCES Zeta);"
    )
    conn.close()
    tables = read_schema(path)
    assert [t.name for t in tables] == ["alpha", "Zeta"]
    assert tables[0].foreign_keys == [ForeignKey("code", "Zeta", "code")]


def test_schema_columns_is_lower_case(db):
    assert schema_columns(db) == {
        "customers": {"id", "name", "segment"},
        "orders": {"order_id", "customer_id", "amount", "status"},
    }


def test_sample_rows(db):
    result = sample_rows(db, "ORDERS", limit=5)
    assert result.columns == ["order_id", "customer_id", "amount", "status"]
    assert [r[0] for r in result.rows] == [1, 2, 3, 4, 5]
    assert result.truncated is True


@pytest.mark.parametrize(
    "name", ["t; DROP TABLE x", 'orders"; DROP TABLE orders; --', "sqlite_master", ""]
)
def test_sample_rows_refuses_unknown_tables(db, name):
    before = digest(db)
    with pytest.raises(QueryRefused, match="no table named"):
        sample_rows(db, name)
    assert digest(db) == before


# --- splitting scripts ------------------------------------------------------------------


def test_script_statements_split_like_sqlite():
    script = """
        -- add the codes
        CREATE TABLE codes (code TEXT, label TEXT);
        INSERT INTO codes VALUES ('a;b', 'semi; colon');  /* a comment; with a semicolon */
        CREATE TRIGGER t AFTER INSERT ON codes BEGIN UPDATE codes SET label = 'x'; END;
        ;
        SELECT 1
    """
    statements = script_statements(script)
    assert len(statements) == 4
    assert statements[0].endswith("CREATE TABLE codes (code TEXT, label TEXT)")
    assert statements[1] == "INSERT INTO codes VALUES ('a;b', 'semi; colon')"
    assert statements[2].startswith("/* a comment; with a semicolon */")
    assert statements[2].endswith("SET label = 'x'; END")
    assert statements[3] == "SELECT 1"
    assert script_statements("  \n-- only a comment\n ; ") == []


# --- database-edit scripts --------------------------------------------------------------

EDIT = """
CREATE TABLE status_codes (code TEXT PRIMARY KEY, label TEXT NOT NULL);
INSERT INTO status_codes VALUES ('S', 'shipped'), ('P', 'pending');
INSERT INTO status_codes VALUES ('R', 'returned; refunded');
"""


def test_edited_database_applies_the_script_to_a_copy(db, cache_dir):
    before = digest(db)
    edited = edited_database(source=db, edit_script=EDIT, cache_dir=cache_dir)
    assert edited != db
    assert edited.parent == cache_dir
    assert edited.suffix == ".sqlite"

    result = run_select(edited, "SELECT code, label FROM status_codes ORDER BY code")
    assert result.rows == [("P", "pending"), ("R", "returned; refunded"), ("S", "shipped")]
    # The copy still has the original data.
    assert run_select(edited, "SELECT count(*) FROM orders").rows == [(ORDERS,)]
    # The source is untouched, byte for byte.
    assert digest(db) == before
    assert "status_codes" not in schema_columns(db)
    # Only the finished copy is left in the cache: no temp or journal files.
    assert sorted(p.name for p in cache_dir.iterdir()) == [edited.name]


def test_edited_database_is_read_only(db, cache_dir):
    edited = edited_database(source=db, edit_script=EDIT, cache_dir=cache_dir)
    assert stat.S_IMODE(edited.stat().st_mode) == 0o444
    if os.geteuid() != 0:  # root ignores file modes; the mode bits above are the contract
        conn = sqlite3.connect(edited)
        try:
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                conn.execute("DELETE FROM status_codes")
        finally:
            conn.close()
    # The console can read it like any task database.
    assert run_select(edited, "SELECT count(*) FROM status_codes").rows == [(3,)]


def test_edited_database_is_cached(db, cache_dir):
    first = edited_database(source=db, edit_script=EDIT, cache_dir=cache_dir)
    built = first.stat()
    os.utime(first, (built.st_atime - 3600, built.st_mtime - 3600))
    again = edited_database(source=db, edit_script=EDIT, cache_dir=cache_dir)
    assert again == first
    # The same file, not a rebuilt one (a rebuild renames a new file into place)...
    assert again.stat().st_ino == built.st_ino
    # ...marked as used now, so sweeps and evictions keep it.
    assert again.stat().st_mtime > built.st_mtime - 60
    assert len(list(cache_dir.iterdir())) == 1

    emptied = EDIT + "DELETE FROM orders;"  # noqa: S608 - a fixed test script
    other = edited_database(source=db, edit_script=emptied, cache_dir=cache_dir)
    assert other != first
    assert run_select(other, "SELECT count(*) FROM orders").rows == [(0,)]
    assert run_select(first, "SELECT count(*) FROM orders").rows == [(ORDERS,)]


def test_a_changed_source_gets_a_new_copy(db, cache_dir):
    first = edited_database(source=db, edit_script=EDIT, cache_dir=cache_dir)
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM orders WHERE order_id = 1")
    conn.commit()
    conn.close()
    second = edited_database(source=db, edit_script=EDIT, cache_dir=cache_dir)
    assert second != first
    assert run_select(second, "SELECT count(*) FROM orders").rows == [(ORDERS - 1,)]


@pytest.mark.parametrize("script", ["", "   \n ", "-- nothing to do\n;"])
def test_empty_script_returns_the_source(db, cache_dir, script):
    assert edited_database(source=db, edit_script=script, cache_dir=cache_dir) == db
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_failing_statement_is_named(db, cache_dir):
    before = digest(db)
    script = "CREATE TABLE ok (a);\nINSERT INTO no_such_table VALUES (1);\nCREATE TABLE later (b);"
    with pytest.raises(EditScriptError) as failed:
        edited_database(source=db, edit_script=script, cache_dir=cache_dir)
    message = str(failed.value)
    assert "statement 2" in message
    assert "INSERT INTO no_such_table VALUES (1)" in message
    assert "no such table: no_such_table" in message
    assert list(cache_dir.iterdir()) == []  # the temp file is gone
    assert digest(db) == before


def test_failing_statement_snippet_is_cut_to_80_characters(db, cache_dir):
    values = ", ".join(["'x'"] * 60)
    long_statement = f"INSERT INTO nowhere VALUES ({values})"  # noqa: S608 - a fixed test string
    with pytest.raises(EditScriptError) as failed:
        edited_database(source=db, edit_script=long_statement, cache_dir=cache_dir)
    assert f"statement 1 ({long_statement[:80]})" in str(failed.value)


@pytest.mark.parametrize(
    "statement, refused",
    [
        ("ATTACH DATABASE '{tmp}/evil.sqlite' AS evil", "ATTACH is not allowed"),
        ("PRAGMA writable_schema = 1", "PRAGMA is not allowed"),
        ("VACUUM INTO '{tmp}/evil.sqlite'", "VACUUM is not allowed"),
        # Not caught by keyword: the authorizer on the copy refuses it inside SQLite.
        ("SELECT load_extension('/tmp/evil')", "load_extension() is not allowed"),
        ("CREATE TABLE x AS SELECT * FROM pragma_table_info('orders')", "PRAGMA is not allowed"),
    ],
)
def test_edit_script_cannot_reach_outside_its_copy(db, cache_dir, tmp_path, statement, refused):
    before = digest(db)
    script = "CREATE TABLE ok (a);\n" + statement.replace("{tmp}", str(tmp_path)) + ";"
    with pytest.raises(EditScriptError) as failed:
        edited_database(source=db, edit_script=script, cache_dir=cache_dir)
    assert "statement 2" in str(failed.value)
    assert refused in str(failed.value)
    assert not (tmp_path / "evil.sqlite").exists()
    assert list(cache_dir.iterdir()) == []
    assert digest(db) == before


def test_runaway_edit_script_is_stopped(db, cache_dir):
    script = (
        "CREATE TABLE ok (a);\n"
        "CREATE TABLE big AS WITH RECURSIVE c(x) AS "
        "(SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT x FROM c;"
    )
    started = time.monotonic()
    with pytest.raises(EditScriptError, match=r"statement 2 .* stopped after 0\.5 s"):
        edited_database(source=db, edit_script=script, cache_dir=cache_dir, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert list(cache_dir.iterdir()) == []


def test_edit_script_may_manage_its_own_transaction(db, cache_dir):
    script = "BEGIN; CREATE TABLE codes (c); INSERT INTO codes VALUES (1), (2); COMMIT;"
    edited = edited_database(source=db, edit_script=script, cache_dir=cache_dir)
    assert run_select(edited, "SELECT count(*) FROM codes").rows == [(2,)]


def test_schema_columns_are_read_once_for_a_file_as_it_is_on_disk(db, monkeypatch):
    from hilbench_annotate.toolkit import sqlconsole

    reads = []
    real = sqlconsole.read_schema
    monkeypatch.setattr(sqlconsole, "read_schema", lambda path: reads.append(path) or real(path))
    first = schema_columns(db)
    first["orders"].add("changed by the caller")
    assert "changed by the caller" not in schema_columns(db)["orders"]
    assert len(reads) == 1
    # The file changed on disk: read again.
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE added (id INTEGER)")
    conn.close()
    assert "added" in schema_columns(db)
    assert len(reads) == 2
