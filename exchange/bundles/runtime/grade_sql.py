"""The SQL verifier: run the submitted query on the task's database (read-only) and compare
its result with golden_output.csv by the release's rules (``compare.py``: rows in any order,
extra columns allowed, numbers within 1e-2, as multisets or de-duplicated). Reward 1 when
either comparison matches, else 0.

    python3 grade.py SUBMISSION DATABASE GOLDEN_CSV REWARD_FILE
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from compare import parse_csv_table, score


def grade(submission: Path, database: Path, golden: Path) -> tuple[int, str]:
    if not submission.is_file() or not submission.read_text().strip():
        return 0, "no query was submitted"
    connection = sqlite3.connect(f"file:{database}?mode=ro&immutable=1", uri=True)
    connection.execute("PRAGMA query_only = ON")
    try:
        cursor = connection.execute(submission.read_text())
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        return 0, f"the submitted query fails: {exc}"
    finally:
        connection.close()
    gold_columns, gold_rows = parse_csv_table(golden.read_text(encoding="utf-8"))
    result = score(columns, rows, gold_columns, gold_rows)
    matched = result["match"] or result["match_distinct"]
    return int(matched), result["reason"] or "the result matches the golden output"


if __name__ == "__main__":
    submission, database, golden, reward = (Path(a) for a in sys.argv[1:5])
    value, why = grade(submission, database, golden)
    reward.parent.mkdir(parents=True, exist_ok=True)
    reward.write_text(f"{value}\n")
    reward.with_name("grade.json").write_text(json.dumps({"reward": value, "reason": why}))
    print(f"reward {value}: {why}")
