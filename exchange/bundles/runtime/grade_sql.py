"""The SQL verifier: run the submitted query on the task's database (read-only) and score its
result against golden_output.csv with the HiL-Bench release's rule (``compare.py``, a copy of
the app's ``hilbench_annotate/toolkit/compare.py``; the release's code is
``compare_pandas_outputs`` and ``parse_golden_output`` in
``hil_bench/utils/calculate_sql_pass_at_1.py``):

* golden_output.csv is read as pandas reads it: an empty cell, or one that is exactly an NA
  word of pandas (``NA``, ``NULL``, ``None``, ``nan``…), is NULL;
* a column whose every value is a number (or text reading as one, without a leading 0 before a
  digit) holds numbers, any other column text;
* each row is the multiset of its values, column names and order ignored; a number ``v``
  counts as ``round(v / 0.01) * 0.01`` (so 22.625 and 22.63 differ), NULL only as NULL;
* the row counts must be equal and the result may have extra columns: with as many columns the
  multisets of rows must be equal, with more each gold row in order takes the first unused
  result row containing its values;
* this is tried with and without exact duplicate rows on each side; any match is reward 1.

A result with two columns of the same name, non-UTF-8 bytes or an infinite number is reward 0,
as the release's scorer raises on it. Reward 0 also when no query was submitted or it fails.

    python3 grade.py SUBMISSION DATABASE GOLDEN_CSV REWARD_FILE
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from compare import read_golden_csv, score


def grade(submission: Path, database: Path, golden: Path) -> tuple[int, str]:
    if not submission.is_file() or not submission.read_text().strip():
        return 0, "no query was submitted"
    connection = sqlite3.connect(f"file:{database}?mode=ro&immutable=1", uri=True)
    connection.execute("PRAGMA query_only = ON")
    try:
        cursor = connection.execute(submission.read_text())
        if cursor.description is None:
            return 0, "the submitted statement returns no result table"
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        return 0, f"the submitted query fails: {exc}"
    finally:
        connection.close()
    try:
        gold_columns, gold_rows = read_golden_csv(golden.read_text(encoding="utf-8"))
    except ValueError as exc:
        return 0, f"golden_output.csv cannot be read: {exc}"
    result = score(columns, rows, gold_columns, gold_rows)
    if not result["match"]:
        return 0, result["reason"]
    how = result["compared"]
    return 1, "the result matches the golden output" + ("" if how == "as returned" else f" {how}")


if __name__ == "__main__":
    submission, database, golden, reward = (Path(a) for a in sys.argv[1:5])
    value, why = grade(submission, database, golden)
    reward.parent.mkdir(parents=True, exist_ok=True)
    reward.write_text(f"{value}\n")
    reward.with_name("grade.json").write_text(json.dumps({"reward": value, "reason": why}))
    print(f"reward {value}: {why}")
