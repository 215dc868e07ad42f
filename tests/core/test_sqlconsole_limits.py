"""The SQL console's limits hold against the red team's queries (issue 19, item 3).

SQLite checks its interrupt flag only where its program loops, so a statement made of many
costly expressions ran 29.7 s against a 5 s limit; and nothing bounded a cell or an answer
(500 rows of ``hex(zeroblob(50000))`` is 50 MB). Each test runs the attack on a real SQLite
file, through the same ``run_select`` / ``edited_database`` every caller uses, with the limits
coming from the settings as they do in the app.
"""

import os
import sqlite3
import time
from pathlib import Path

import pytest

from hilbench_annotate.toolkit.sqlconsole import (
    KILL_GRACE_S,
    EditScriptError,
    QueryRefused,
    QueryTimeout,
    StorageFull,
    run_select,
)
from hilbench_annotate.toolkit.sqledit import edited_database

# The red team's query: two hundred 20 MB blobs in one expression, no loop for SQLite to stop.
RANDOMBLOB_ATTACK = "SELECT " + " + ".join(["length(randomblob(20000000))"] * 200)
# The same shape with blobs under the value limit, so only the deadline can stop it (~8 s).
UNDER_VALUE_LIMIT = "SELECT " + " + ".join(["length(randomblob(9000000))"] * 200)
# 500 rows of 100,000 characters: 50 MB of answer.
WIDE_ANSWER = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
    "SELECT i, hex(zeroblob(50000)) AS blob FROM n"
)
# On a loaded two-core machine a process may start slowly; the point is seconds, not minutes.
MARGIN_S = 3.0


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "tiny.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, note TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"row {i}") for i in range(10)])
    conn.commit()
    conn.close()
    return path


def _children() -> set[int]:
    """This process's live child processes, from /proc."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text()
        pids.update(int(pid) for pid in text.split())
    return pids


def test_the_red_team_randomblob_query_is_refused_at_once(db):
    started = time.monotonic()
    with pytest.raises(QueryRefused, match=r"a value would be larger than 10 MB"):
        run_select(db, RANDOMBLOB_ATTACK, timeout_s=5.0)
    assert time.monotonic() - started < 5.0


def test_one_long_expression_is_stopped_at_the_deadline_and_its_process_killed(db):
    before = _children()
    started = time.monotonic()
    with pytest.raises(QueryTimeout, match=r"stopped after 1\.0 s: the console's time limit"):
        run_select(db, UNDER_VALUE_LIMIT, timeout_s=1.0)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0 + KILL_GRACE_S + MARGIN_S, elapsed
    # Stopped, not abandoned: no process is still computing the query.
    assert _children() <= before


def test_the_deadline_comes_from_the_caller_and_a_quick_query_still_answers(db):
    result = run_select(db, "SELECT count(*) FROM t", timeout_s=1.0)
    assert result.rows == [(10,)]


def test_long_cells_and_a_wide_answer_are_cut_with_a_visible_marker(db, settings):
    settings.SQL_CONSOLE_CELL_BYTES = 10_000
    settings.SQL_CONSOLE_RESULT_BYTES = 2_000_000
    result = run_select(db, WIDE_ANSWER, row_cap=500)
    assert result.columns == ["i", "blob"]
    assert result.truncated is True
    assert 0 < len(result.rows) < 500
    shown = sum(len(str(value)) for row in result.rows for value in row)
    assert shown < 2_000_000 + 500 * 100  # the limit, plus each cut cell's marker
    for _i, blob in result.rows:
        assert blob.startswith("0000")
        assert blob.endswith("… [cut: 100,000 bytes in all]")
        assert len(blob) < 10_100
    assert f"{len(result.rows)} values longer than 10 kB cut" in result.note
    assert f"only the first {len(result.rows)} rows are shown: the answer passed 2 MB" in (
        result.note
    )


def test_callers_that_compare_results_get_a_refusal_never_a_cut_value(db, settings):
    settings.SQL_CONSOLE_CELL_BYTES = 10_000
    settings.SQL_EXACT_RESULT_BYTES = 5_000_000
    with pytest.raises(QueryRefused, match=r"the result is larger than 5 MB by row \d+"):
        run_select(db, WIDE_ANSWER, row_cap=500, exact=True)
    # A value longer than the console's cell limit comes back whole.
    whole = run_select(db, "SELECT hex(zeroblob(20000))", exact=True)
    assert whole.rows == [("00" * 20000,)]
    assert whole.note == ""


def test_memory_is_capped_apart_from_the_value_limit(db, settings):
    settings.SQL_VALUE_BYTES = 1_000_000_000
    settings.SQL_MEMORY_MB = 256
    started = time.monotonic()
    with pytest.raises(QueryRefused, match=r"needs more memory than the console allows"):
        run_select(db, "SELECT length(randomblob(600000000))", timeout_s=10.0)
    assert time.monotonic() - started < 10.0


def test_an_edit_script_with_one_long_expression_is_stopped(db, tmp_path):
    cache = tmp_path / "edited"
    script = f"CREATE TABLE ok (a);\nCREATE TABLE slow AS {UNDER_VALUE_LIMIT};"
    started = time.monotonic()
    with pytest.raises(EditScriptError, match=r"stopped after 1\.0 s"):
        edited_database(source=db, edit_script=script, cache_dir=cache, timeout_s=1.0)
    assert time.monotonic() - started < 1.0 + KILL_GRACE_S + MARGIN_S
    assert list(cache.iterdir()) == []


def test_an_edit_script_cannot_grow_its_copy_past_the_room_it_was_given(db, tmp_path):
    cache = tmp_path / "edited"
    script = (
        "CREATE TABLE filler AS WITH RECURSIVE c(x) AS "
        "(SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) SELECT randomblob(100000) FROM c;"
    )
    asked = []

    def room(need: int) -> int:
        asked.append(need)
        return need + 200_000

    with pytest.raises(StorageFull, match=r"statement 1 .* larger than the .* it may take"):
        edited_database(source=db, edit_script=script, cache_dir=cache, room=room)
    assert asked == [db.stat().st_size]
    assert list(cache.iterdir()) == []
    # With room enough, the same script applies.
    roomy = edited_database(
        source=db, edit_script=script, cache_dir=cache, room=lambda need: need + 20_000_000
    )
    assert run_select(roomy, "SELECT count(*) FROM filler").rows == [(100,)]


def test_a_copy_bigger_than_the_room_is_not_even_started(db, tmp_path):
    cache = tmp_path / "edited"
    with pytest.raises(StorageFull, match=r"the copy needs .* and only 100 bytes is free"):
        edited_database(
            source=db, edit_script="CREATE TABLE x (a);", cache_dir=cache, room=lambda need: 100
        )
    assert list(cache.iterdir()) == []
