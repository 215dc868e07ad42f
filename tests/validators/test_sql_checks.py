"""SQL result comparison (the release's scoring rules) and the SQL task's structural checks."""

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from hilbench_annotate.toolkit.compare import (
    golden_output_csv,
    read_golden_csv,
    score,
)
from hilbench_annotate.toolkit.sqlconsole import run_select
from validators.results import FAILED, PASSED, SKIPPED
from validators.sql import CHECK_NAMES, check_sql_task

from ..conftest import FIXTURES, shared_path

# --- compare (the release's rule; tests/evaluation/test_release_parity_scoring.py runs the
# release's own code beside it) ------------------------------------------------------------


def _match(pred, gold) -> bool:
    return score(*pred, *gold)["match"]


def test_row_order_is_ignored():
    gold = (["city"], [("Teplice",), ("Znojmo",), ("Louny",)])
    pred = (["A2"], [("Louny",), ("Teplice",), ("Znojmo",)])
    assert score(*pred, *gold) == {"match": True, "compared": "as returned", "reason": ""}


def test_extra_predicted_columns_and_column_order_do_not_count():
    gold = (["name", "total"], [("a", "3"), ("b", "5")])
    # An extra id column first, and the gold columns swapped: a row is its values.
    pred = (["id", "sum(x)", "label"], [(1, 5, "b"), (2, 3, "a")])
    assert _match(pred, gold)


def test_numbers_fall_in_0_01_buckets_not_within_0_01():
    assert _match((["v"], [(0.333,)]), (["v"], [("0.33",)]))
    assert _match((["v"], [(6.499,)]), (["v"], [("6.5",)]))
    # 0.34 and 0.33 are within 0.01 but in different buckets.
    assert not _match((["v"], [(0.34,)]), (["v"], [("0.33",)]))
    # Gold 22.625 is bucket 22.62 (round half to even); ROUND(x, 2) = 22.63 is not.
    assert not _match((["v"], [(22.63,)]), (["v"], [("22.625",)]))
    assert not _match((["v"], [(22.629,)]), (["v"], [("22.625",)]))


def test_ints_and_floats_compare_as_numbers_text_as_text():
    assert _match((["n"], [(5.0,)]), (["n"], [("5",)]))
    assert _match((["n"], [("1.0",)]), (["n"], [(1,)]))
    assert not _match((["n"], [("5 apples",)]), (["n"], [("5",)]))
    # A number in a text column is its text as Python writes it: 5.0 is "5.0", not "5".
    assert not _match((["n"], [(5.0,), ("x",)]), (["n"], [("5",), ("x",)]))


def test_null_is_null_never_an_empty_string():
    gold = read_golden_csv('x\n""\n')
    assert gold == (["x"], [(None,)])
    assert _match((["x"], [(None,)]), gold)
    assert not _match((["x"], [("",)]), gold)
    # pandas' NA words are NULL too.
    assert read_golden_csv("x\nNone\nNA\nnull\n")[1] == [(None,), (None,), (None,)]


def test_duplicates_match_once_removed_and_the_reason_never_names_a_failure():
    gold = (["name"], [("a",), ("b",)])
    pred = (["name"], [("a",), ("a",), ("b",)])
    assert score(*pred, *gold) == {
        "match": True,
        "compared": "with duplicate rows removed from the prediction",
        "reason": "",
    }


def test_same_count_different_multiplicity_names_the_row():
    verdict = score(["x"], [("a",), ("a",)], ["x"], [("a",), ("b",)])
    assert not verdict["match"]
    assert verdict["reason"] == "no predicted row has the values of gold row ('b')"


def test_different_row_count_fails_with_reason():
    gold = (["A2"], [("Teplice",), ("Znojmo",), ("Louny",), ("Karvina",)])
    pred = (["A2"], [("Teplice",), ("Znojmo",), ("Louny",)])
    assert score(*pred, *gold)["reason"] == "gold has 4 rows, prediction 3"


def test_a_row_is_its_values():
    gold = (["city", "n"], [("Teplice", "1"), ("Znojmo", "2")])
    verdict = score(["city", "n"], [("Teplice", 1), ("Znojmo", 3)], *gold)
    assert not verdict["match"] and "gold row ('Znojmo', 2)" in verdict["reason"]
    # Each column fits on its own, but the rows pair them differently.
    assert not _match((["city", "n"], [("Teplice", 2), ("Znojmo", 1)]), gold)


def test_prediction_with_too_few_columns():
    assert score(["a"], [(1,)], ["a", "b"], [("1", "2")])["reason"] == (
        "gold has 2 columns, prediction 1"
    )


def test_what_the_release_cannot_score_scores_0_with_why():
    verdict = score(["a", "a"], [(1, 2)], ["a"], [("1",)])
    assert not verdict["match"] and "two columns named 'a'" in verdict["reason"]
    assert not _match((["a"], [(float("inf"),)]), (["a"], [("1",)]))


def test_csv_round_trip():
    text = golden_output_csv(["name", "n", "note"], [("a, b", 1, None), ('say "hi"', 2.5, "x")])
    assert text == 'name,n,note\n"a, b",1,\n"say ""hi""",2.5,x\n'
    assert read_golden_csv(text) == (
        ["name", "n", "note"],
        [("a, b", "1", None), ('say "hi"', "2.5", "x")],
    )
    with pytest.raises(ValueError, match="no header"):
        read_golden_csv("")
    assert read_golden_csv("a,b\n1\n") == (["a", "b"], [("1", None)])
    with pytest.raises(ValueError, match="row 2 has 3 cells"):
        read_golden_csv("a,b\n1,2,3\n")


def test_release_golden_outputs_parse(release_examples):
    root = release_examples / "sql"
    files = sorted(root.glob("*/shared/golden_output.csv"))
    assert files
    for path in files:
        columns, rows = read_golden_csv(path.read_text())
        assert columns and rows, path
        # A table always matches itself, and reversed rows still match.
        assert score(columns, rows[::-1], columns, rows)["match"]
    columns, rows = read_golden_csv((root / "sql_0" / "shared" / "golden_output.csv").read_text())
    assert (columns, rows[0]) in ((["A2"], ("Teplice",)), (["full_name"], ("Ada Haas",)))


# --- SQL checks -------------------------------------------------------------------------


def _make_db(path: Path, rows: int = 50) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE district (district_id INTEGER PRIMARY KEY, A2 TEXT, A12 REAL);
        CREATE TABLE client (client_id INTEGER PRIMARY KEY, district_id INTEGER, name TEXT);
        CREATE INDEX client_name ON client(name);
        """
    )
    conn.executemany(
        "INSERT INTO district VALUES (?, ?, ?)",
        [(1, "Teplice", 6.5), (2, "Znojmo", 4.0), (3, "Louny", 7.25)],
    )
    conn.executemany(
        "INSERT INTO client (district_id, name) VALUES (?, ?)",
        [(1 + i % 3, f"client number {i:06d}") for i in range(rows)],
    )
    conn.commit()
    conn.close()
    return path


GOOD_SQL = "SELECT A2, A12 FROM district WHERE A12 > 5.0"
GOOD_CSV = "A2,A12\nLouny,7.25\nTeplice,6.5\n"


def _env(db: Path | None, **overrides):
    fields = {
        "database": SimpleNamespace(path=db) if db else None,
        "edit_script": "",
        "gold_sql": GOOD_SQL,
        "golden_output": GOOD_CSV,
    }
    fields.update(overrides)
    return SimpleNamespace(**fields)


def _by_name(results):
    assert [r.name for r in results] == list(CHECK_NAMES)
    return {r.name: r for r in results}


@pytest.fixture
def database(tmp_path):
    return _make_db(tmp_path / "task.sqlite")


def test_a_sound_task_passes_all_five(database, tmp_path):
    results = _by_name(check_sql_task(_env(database), cache_dir=tmp_path / "cache"))
    assert {n: r.outcome for n, r in results.items()} == dict.fromkeys(CHECK_NAMES, PASSED)
    assert results["gold_sql_runs"].details["row_count"] == 2


def test_edit_script_is_applied_before_parsing_and_running(database, tmp_path):
    env = _env(
        database,
        edit_script=(
            "CREATE TABLE status_code (code TEXT, meaning TEXT);\n"
            "INSERT INTO status_code VALUES ('R3', 'repaid');\n"
        ),
        gold_sql="SELECT s.meaning FROM status_code s WHERE s.code = 'R3'",
        golden_output="meaning\nrepaid\n",
    )
    results = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))
    assert all(r.outcome == PASSED for r in results.values()), results
    # The source database is untouched.
    tables = sqlite3.connect(database).execute("SELECT name FROM sqlite_master").fetchall()
    assert ("status_code",) not in tables


def test_no_database_skips_all_but_parsing(tmp_path):
    results = _by_name(check_sql_task(_env(None), cache_dir=tmp_path / "cache"))
    assert results["gold_sql_parses"].outcome == PASSED
    assert "not checked" in results["gold_sql_parses"].message
    for name in CHECK_NAMES:
        if name != "gold_sql_parses":
            assert results[name].outcome == SKIPPED
            assert "no database" in results[name].message


def test_corrupt_database_fails_integrity(tmp_path):
    path = _make_db(tmp_path / "task.sqlite", rows=3000)
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    pages = len(data) // page_size
    assert pages > 10
    # The middle of a full leaf page of the client table (pages 2-4 are near-empty roots).
    middle = page_size * (pages // 2) + page_size // 2
    data[middle : middle + 256] = b"\xff" * 256
    path.write_bytes(bytes(data))
    results = _by_name(check_sql_task(_env(path), cache_dir=tmp_path / "cache"))
    integrity = results["database_integrity"]
    assert integrity.outcome == FAILED
    assert "re-import" in integrity.message
    assert results["gold_sql_runs"].outcome == SKIPPED


def test_missing_database_file_fails_integrity(tmp_path):
    results = _by_name(check_sql_task(_env(tmp_path / "gone.sqlite"), cache_dir=tmp_path / "c"))
    assert results["database_integrity"].outcome == FAILED
    assert "does not exist" in results["database_integrity"].message


def test_bad_edit_script_fails(database, tmp_path):
    env = _env(database, edit_script="CREATE TABLE ok (x);\nINSERT INTO nowhere VALUES (1);\n")
    results = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))
    edit = results["edit_script_applies"]
    assert edit.outcome == FAILED
    assert "statement 2" in edit.message
    assert "nowhere" in edit.message
    assert results["gold_sql_runs"].outcome == SKIPPED


def test_gold_sql_naming_a_missing_column_fails_parsing(database, tmp_path):
    env = _env(database, gold_sql="SELECT A2, population FROM district")
    results = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))
    parses = results["gold_sql_parses"]
    assert parses.outcome == FAILED
    assert 'column "population"' in parses.message
    assert results["gold_sql_runs"].outcome == SKIPPED


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELEC A2 FROM district", "does not parse"),
        ("SELECT 1; SELECT 2", "exactly one SELECT"),
        ("DELETE FROM district", "exactly one SELECT"),
        ("SELECT * FROM nowhere", 'table "nowhere"'),
        ("", "empty"),
    ],
)
def test_gold_sql_that_is_not_one_valid_select_fails_parsing(database, tmp_path, sql, expected):
    results = _by_name(check_sql_task(_env(database, gold_sql=sql), cache_dir=tmp_path / "c"))
    assert results["gold_sql_parses"].outcome == FAILED
    assert expected in results["gold_sql_parses"].message


def test_gold_sql_with_no_rows_fails_running(database, tmp_path):
    env = _env(database, gold_sql="SELECT A2 FROM district WHERE A12 > 100")
    results = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))
    runs = results["gold_sql_runs"]
    assert runs.outcome == FAILED
    assert "returns no rows" in runs.message
    assert results["golden_output_matches"].outcome == SKIPPED


@pytest.mark.parametrize(
    "sql",
    [
        # 100,000 distinct names: two random picks agree with probability 1e-5.
        "SELECT name FROM client ORDER BY random() LIMIT 1",
        # 64-bit random integers: equal twice with negligible probability.
        "SELECT random()",
    ],
)
def test_non_deterministic_gold_sql_fails_running(tmp_path, sql):
    path = _make_db(tmp_path / "big.sqlite", rows=100_000)
    results = _by_name(check_sql_task(_env(path, gold_sql=sql), cache_dir=tmp_path / "c"))
    runs = results["gold_sql_runs"]
    assert runs.outcome == FAILED
    assert "not deterministic" in runs.message
    assert runs.details["first_run"] != runs.details["second_run"]


def test_slow_gold_sql_is_stopped(database, tmp_path):
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    env = _env(database, gold_sql=slow)
    results = _by_name(check_sql_task(env, timeout_s=0.5, cache_dir=tmp_path / "cache"))
    runs = results["gold_sql_runs"]
    assert runs.outcome == FAILED
    assert "stopped after 0.5 s" in runs.message


def test_golden_output_mismatch_names_the_difference(database, tmp_path):
    env = _env(database, golden_output="A2,A12\nLouny,7.25\nTeplice,6.5\nZnojmo,4.0\n")
    results = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))
    golden = results["golden_output_matches"]
    assert golden.outcome == FAILED
    assert "gold has 3 rows, prediction 2" in golden.message
    assert golden.details["golden_row_count"] == 3

    env = _env(database, golden_output="A2,A12\nLouny,7.25\nTeplice,9.5\n")
    golden = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))["golden_output_matches"]
    assert golden.outcome == FAILED
    assert "no predicted row has the values of gold row ('Teplice', 9.5)" in golden.message


def test_golden_output_within_tolerance_and_reordered_passes(database, tmp_path):
    env = _env(database, golden_output="A12,A2\n6.499,Teplice\n7.25,Louny\n")
    results = _by_name(check_sql_task(env, cache_dir=tmp_path / "cache"))
    assert results["golden_output_matches"].outcome == PASSED


def test_missing_golden_output_asks_for_it(database, tmp_path):
    results = _by_name(check_sql_task(_env(database, golden_output=""), cache_dir=tmp_path))
    golden = results["golden_output_matches"]
    assert golden.outcome == FAILED
    assert golden.message.startswith("golden_output.csv is missing: compute it")
    assert golden.details["row_count"] == 2


# --- BIRD-format questions: the fixtures, and real Spider databases ---------------------


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("fixtures", id="fixtures"),
        pytest.param("spider-bird", id="spider-bird", marks=pytest.mark.shared_data),
    ],
)
def test_bird_questions_pass_all_checks(tmp_path, source):
    root = FIXTURES / "bird" if source == "fixtures" else shared_path("data", "spider-bird")
    records = json.loads((root / "dev.json").read_text())
    chosen, seen_dbs = [], set()
    for record in records:
        db = root / "dev_databases" / record["db_id"] / f"{record['db_id']}.sqlite"
        # Joins over different databases: more to check than a bare count(*).
        joins = "JOIN" in record["SQL"].upper()
        if joins and db.is_file() and record["db_id"] not in seen_dbs:
            chosen.append((record, db))
            seen_dbs.add(record["db_id"])
        if len(chosen) == 3:
            break
    assert len({record["db_id"] for record, _db in chosen}) >= 2
    for record, db in chosen:
        result = run_select(db, record["SQL"], row_cap=100_000)
        assert result.rows and not result.truncated
        # The golden file's row order need not be the query's.
        golden = golden_output_csv(result.columns, result.rows[::-1])
        env = SimpleNamespace(
            database=SimpleNamespace(path=db),
            edit_script="",
            gold_sql=record["SQL"],
            golden_output=golden,
        )
        results = check_sql_task(env, cache_dir=tmp_path / "cache")
        assert [r.outcome for r in results] == [PASSED] * 5, (record, results)
