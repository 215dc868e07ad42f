"""The SQL reward the app gives is the reward the HiL-Bench release gives (issue 44, items 1-2).

The release's code runs from ../shared (``release_code``): ``compare_pandas_outputs`` on
``parse_golden_output(golden_output.csv)`` and the submitted query's result as its
``execute_sql`` reads it (the Harbor verifier's case), and ``evaluate_single_sql_instance``
(its SQL pass@1: the gold query run too). The app's code is what scores for reward: the
exported verifier ``grade.py`` (``exchange/bundles/runtime/grade_sql.py`` with the app's
``compare.py``), the built-in runner's ``score_submission`` on the context
``sql_task_context`` reads (golden_output.csv, or the gold SQL's result without one), and the
validators' ``golden_output_matches`` check (the oracle's reward).

The corpus: every gold query of the Spider questions in ../shared/data/spider-bird, each with
its oracle and three variants run on the real databases (rounded, shifted by 0.004 or 0.006,
numbers as text, reordered, doubled, de-duplicated, cut by LIMIT, extra or fewer columns, a
NULL column, empty, a repeated column name), the three release SQL tasks' golden outputs (BIRD)
as tables, and hand cases at the edges: the 0.01 buckets, NULL, text against numbers,
duplicates, empty results, column order and names, bytes, infinity.
"""

# ruff: noqa: S608 - the corpus's queries are built from the benchmark's own gold queries

from __future__ import annotations

import csv
import importlib.util
import io
import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluation.runner import score_submission
from evaluation.services.runs import sql_task_context
from hilbench_annotate.toolkit import compare
from hilbench_annotate.toolkit.compare import golden_output_csv
from validators.results import PASSED
from validators.sql import _check_golden

from ..conftest import ROOT, shared_path
from . import release_code

pytestmark = pytest.mark.shared_data

GRADE_SQL = ROOT / "exchange" / "bundles" / "runtime" / "grade_sql.py"
RUNNER_EVERY = 9  # every 9th pair also goes through the runner (each query is a process)


@dataclass(frozen=True)
class Pair:
    name: str
    db: Path
    gold: str
    submission: str


def _run(db: Path, sql: str) -> tuple[list[str], list[tuple]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        cursor = connection.execute(sql)
        return [d[0] for d in cursor.description], cursor.fetchall()


def _variants(gold: str, width: int, rows: int) -> list[tuple[str, str]]:
    """(name, query) of what a model might submit instead of the gold query."""
    cols = [f"c{i}" for i in range(width)]
    cte = f"WITH g({', '.join(cols)}) AS ({gold}) "

    def each(expression: str) -> str:
        mapped = ", ".join(
            f"CASE WHEN typeof({c}) IN ('integer', 'real') THEN {expression.format(c=c)} "
            f"ELSE {c} END AS {c}"
            for c in cols
        )
        return f"{cte}SELECT {mapped} FROM g"

    rest = ", ".join(cols[1:])
    out = [
        ("rounded to 2 decimals", each("ROUND({c}, 2)")),
        ("rounded to 1 decimal", each("ROUND({c}, 1)")),
        ("numbers + 0.004", each("{c} + 0.004")),
        ("numbers + 0.006", each("{c} + 0.006")),
        ("numbers as text", each("CAST({c} AS TEXT)")),
        ("reordered", f"{cte}SELECT {', '.join(reversed(cols))} FROM g ORDER BY 1 DESC"),
        ("every row twice", f"{cte}SELECT * FROM g UNION ALL SELECT * FROM g"),
        ("distinct", f"{cte}SELECT DISTINCT * FROM g"),
        ("limit 1", f"{cte}SELECT * FROM g LIMIT 1"),
        ("limit one less", f"{cte}SELECT * FROM g LIMIT {max(rows - 1, 0)}"),
        ("extra column", f"{cte}SELECT *, 'x' AS extra FROM g"),
        ("first column twice", f"{cte}SELECT c0 AS again, * FROM g"),
        ("first column NULL", f"{cte}SELECT NULL AS c0{', ' + rest if rest else ''} FROM g"),
        ("empty", f"{cte}SELECT * FROM g WHERE 0"),
        ("a name twice", f"{cte}SELECT c0 AS x, c0 AS x{', ' + rest if rest else ''} FROM g"),
    ]
    if width > 1:
        out.append(("first column left out", f"{cte}SELECT {rest} FROM g"))
    return out


def _spider_pairs() -> list[Pair]:
    root = shared_path("data", "spider-bird")
    pairs = []
    questions = json.loads((root / "dev.json").read_text())
    for n, question in enumerate(questions):
        db = root / "dev_databases" / question["db_id"] / f"{question['db_id']}.sqlite"
        gold = question["SQL"].strip().rstrip(";")
        columns, rows = _run(db, gold)
        label = f"spider {question['question_id']}"
        pairs.append(Pair(f"{label} oracle", db, gold, gold))
        variants = _variants(gold, len(columns), len(rows))
        for k in range(3):  # three variants each, in turn, so every kind is drawn often
            name, sql = variants[(3 * n + k) % len(variants)]
            pairs.append(Pair(f"{label} {name}", db, gold, sql))
    return pairs


def _bird_pairs(tmp: Path) -> list[Pair]:
    """The release SQL tasks' golden outputs (modified BIRD databases, which the release does
    not carry) as tables of their own, with the same variants."""
    pairs = []
    for golden in sorted(
        shared_path("examples", "hilbench", "sql").glob("*/shared/golden_output.csv")
    ):
        columns, *rows = list(csv.reader(io.StringIO(golden.read_text().strip())))
        db = tmp / f"{golden.parent.parent.name}.sqlite"
        with sqlite3.connect(db) as connection:
            names = ", ".join(f'"{c}"' for c in columns)
            connection.execute(f"CREATE TABLE t ({names})")
            marks = ", ".join("?" for _ in columns)
            typed = [tuple(_typed(v) for v in row) for row in rows]
            connection.executemany(f"INSERT INTO t VALUES ({marks})", typed)
        gold = f"SELECT {names} FROM t"
        pairs.append(Pair(f"bird {db.stem} oracle", db, gold, gold))
        for name, sql in _variants(gold, len(columns), len(rows)):
            pairs.append(Pair(f"bird {db.stem} {name}", db, gold, sql))
    return pairs


def _typed(value: str):
    if value == "":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


# --- the release's figures and the app's -------------------------------------------------


def release_verifier(db: Path, golden_csv: str, submission: str) -> int:
    """The release's reward with the gold table read from golden_output.csv: what
    ``evaluate_single_sql_instance`` does with the result, an exception being a 0."""
    release = release_code.sql()
    _error, result = release.execute_sql(str(db), submission)
    if result is None:
        return 0
    try:
        gold = release.parse_golden_output(golden_csv)
        return int(bool(release.compare_pandas_outputs(gold, result)))
    except Exception:  # noqa: BLE001 - the release's caller catches everything: resolved False
        return 0


def release_pass_at_1(db: Path, gold: str, submission: str, tasks_dir: Path) -> int:
    """The release's own SQL pass@1 of one submission (the gold query run on the database)."""
    instance = {"problem_statement": {"ground_truth_query": gold}, "env": {"base_db_path": str(db)}}
    _id, _result, correct = release_code.sql().evaluate_single_sql_instance(
        "task", {"model_patch": submission}, instance, tasks_dir
    )
    return int(correct)


@pytest.fixture(scope="module")
def grade_py():
    """The exported verifier, importing ``compare`` as it does in the bundle (the app's
    module, which the export copies beside it verbatim)."""
    spec = importlib.util.spec_from_file_location("grade_sql_under_test", GRADE_SQL)
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("compare")
    sys.modules["compare"] = compare
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("compare", None)
        else:
            sys.modules["compare"] = saved
    return module.grade


def app_verifier(grade, tmp: Path, db: Path, golden_csv: str, submission: str) -> int:
    (tmp / "submission.sql").write_text(submission)
    (tmp / "golden_output.csv").write_text(golden_csv, encoding="utf-8")
    return grade(tmp / "submission.sql", db, tmp / "golden_output.csv")[0]


def app_runner(db: Path, submission: str, *, golden_csv: str = "", gold_sql: str = "") -> int:
    """The built-in runner's score: the context as ``sql_task_context`` reads a task."""
    environment = SimpleNamespace(
        database=SimpleNamespace(path=str(db)),
        edit_script="",
        golden_output=golden_csv,
        gold_sql=gold_sql,
        descriptions={},
        business_info=[],
    )
    task = SimpleNamespace(pk=1, project_id=1, sql_environment=environment)
    revision = SimpleNamespace(snapshot={"domain": "sql", "blocked_spec": {"question": "?"}})
    context = sql_task_context(task, revision)
    return int(bool(score_submission(context, submission)["match"]))


def _golden(pair: Pair) -> str:
    return golden_output_csv(*_run(pair.db, pair.gold))


# --- the corpus --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Pair]:
    return _spider_pairs() + _bird_pairs(tmp_path_factory.mktemp("bird"))


def test_the_release_constants_are_the_apps():
    release = release_code.sql()
    import pandas

    assert set(pandas._libs.parsers.STR_NA_VALUES) == compare.NA_WORDS
    assert release.tolerant_counter.__defaults__ == (compare.BUCKET,)


def test_grade_py_gives_the_release_reward_on_spider_and_bird(corpus, grade_py, tmp_path):
    assert len(corpus) >= 200
    differ, rewards = [], []
    for pair in corpus:
        golden = _golden(pair)
        release = release_verifier(pair.db, golden, pair.submission)
        app = app_verifier(grade_py, tmp_path, pair.db, golden, pair.submission)
        rewards.append(release)
        if app != release:
            differ.append(f"{pair.name}: release {release}, grade.py {app}")
    assert not differ, f"{len(differ)} of {len(corpus)} differ:\n" + "\n".join(differ[:20])
    assert 0 < sum(rewards) < len(rewards)  # both outcomes are in the corpus


def test_the_runner_gives_the_release_reward(corpus, tmp_path):
    differ = []
    for pair in corpus[::RUNNER_EVERY]:
        golden = _golden(pair)
        release = release_verifier(pair.db, golden, pair.submission)
        app = app_runner(pair.db, pair.submission, golden_csv=golden)
        if app != release:
            differ.append(f"{pair.name} (golden_output.csv): release {release}, runner {app}")
    for pair in corpus[RUNNER_EVERY // 2 :: RUNNER_EVERY]:
        release = release_pass_at_1(pair.db, pair.gold, pair.submission, tmp_path)
        app = app_runner(pair.db, pair.submission, gold_sql=pair.gold)
        if app != release:
            differ.append(f"{pair.name} (gold SQL): release {release}, runner {app}")
    assert not differ, "\n".join(differ[:20])


def test_the_oracle_check_agrees_with_the_release(corpus):
    """``golden_output_matches`` passes exactly when the release gives the gold query 1."""
    differ = []
    for pair in corpus:
        if pair.gold != pair.submission:
            continue
        golden = _golden(pair)
        release = release_verifier(pair.db, golden, pair.gold)
        check = _check_golden(golden, *_run(pair.db, pair.gold))
        if (check.outcome == PASSED) != bool(release):
            differ.append(f"{pair.name}: release {release}, check {check.message}")
    assert not differ, "\n".join(differ)


# --- edge cases --------------------------------------------------------------------------

TABLES = """
CREATE TABLE m (grp TEXT, v REAL, n INTEGER, t TEXT, b BLOB);
INSERT INTO m VALUES ('a', 22.625, 5, '007', X'6162'), ('a', 22.625, 5, 'NA', X'FF'),
                     ('b', 0.015, 0, '', NULL), ('c', 0.025, NULL, NULL, X'35'),
                     ('d', 1e16, 9007199254740993, 'None', X'');
"""
# (name, gold query, submitted query, the release's reward)
EDGES = [
    ("22.625 against ROUND(avg, 2) = 22.63", "SELECT avg(v) FROM m WHERE grp = 'a'",
     "SELECT ROUND(avg(v), 2) FROM m WHERE grp = 'a'", 0),
    ("22.625 against 22.629", "SELECT 22.625", "SELECT 22.629", 0),
    ("22.625 against 22.62", "SELECT 22.625", "SELECT 22.62", 1),
    ("22.625 against 22.6249", "SELECT 22.625", "SELECT 22.6249", 1),
    ("0.015 and 0.025 bucket halves", "SELECT v FROM m WHERE grp IN ('b', 'c')",
     "SELECT ROUND(v, 2) FROM m WHERE grp IN ('b', 'c')", 0),
    ("within 0.01 but across a bucket edge", "SELECT 0.33", "SELECT 0.34", 0),
    ("0.333 against 0.33", "SELECT 0.333", "SELECT 0.33", 1),
    ("integer against real", "SELECT n FROM m WHERE grp = 'a'",
     "SELECT n * 1.0 FROM m WHERE grp = 'a'", 1),
    ("2^53 + 1 against 2^53", "SELECT 9007199254740993", "SELECT 9007199254740992", 1),
    ("NULL against NULL", "SELECT n FROM m WHERE grp = 'c'", "SELECT NULL", 1),
    ("NULL against an empty string", "SELECT t FROM m WHERE grp = 'c'", "SELECT ''", 0),
    ("an empty string in gold is NULL in golden_output.csv",
     "SELECT grp, t FROM m WHERE grp IN ('b', 'c')",
     "SELECT grp, t FROM m WHERE grp IN ('b', 'c')", 0),
    ("NULL text column with NULL written", "SELECT grp, t FROM m WHERE grp = 'c'",
     "SELECT grp, t FROM m WHERE grp = 'c'", 1),
    ("the text NA is NULL in golden_output.csv", "SELECT t FROM m WHERE t = 'NA'",
     "SELECT 'NA'", 0),
    ("the text None is NULL too", "SELECT t FROM m WHERE t = 'None'", "SELECT NULL", 1),
    ("empty string in gold", "SELECT t FROM m WHERE grp = 'b'", "SELECT ''", 0),
    ("number against its text", "SELECT n FROM m WHERE grp = 'a' LIMIT 1", "SELECT '5'", 1),
    ("a real as text in a text column", "SELECT 5 AS k UNION ALL SELECT 'x'",
     "SELECT 5.0 AS k UNION ALL SELECT 'x'", 0),
    ("an integer as text in a text column", "SELECT 5 AS k UNION ALL SELECT 'x'",
     "SELECT '5' AS k UNION ALL SELECT 'x'", 1),
    ("leading zeros stay text", "SELECT t FROM m WHERE t = '007'", "SELECT 7", 0),
    ("leading zeros against the same text", "SELECT t FROM m WHERE t = '007'",
     "SELECT '007'", 1),
    ("duplicates in the submission", "SELECT DISTINCT grp FROM m",
     "SELECT grp FROM m", 1),
    ("duplicates in gold only", "SELECT grp FROM m", "SELECT DISTINCT grp FROM m", 1),
    ("duplicates in different counts", "SELECT grp FROM m WHERE grp IN ('a', 'b')",
     "SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'b'", 1),
    ("other multiplicities: equal once both lose their duplicates",
     "SELECT 'a' UNION ALL SELECT 'a' UNION ALL SELECT 'b'",
     "SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'b'", 1),
    ("a row of the gold missing", "SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'c'",
     "SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'b'", 0),
    ("empty against empty", "SELECT grp FROM m WHERE 0", "SELECT t FROM m WHERE 0", 1),
    ("empty against a row", "SELECT grp FROM m WHERE 0", "SELECT 'a'", 0),
    ("columns swapped", "SELECT grp, n FROM m", "SELECT n, grp FROM m", 1),
    ("other column names", "SELECT grp AS g, n AS k FROM m", "SELECT grp, n FROM m", 1),
    ("values swapped between columns of a row", "SELECT 1 AS a, 2 AS b",
     "SELECT 2 AS a, 1 AS b", 1),
    ("an extra column", "SELECT grp FROM m", "SELECT grp, v FROM m", 1),
    ("a missing column", "SELECT grp, v FROM m", "SELECT grp FROM m", 0),
    ("extra columns: the greedy pairing misses a pairing that exists",
     "SELECT 1 AS a UNION ALL SELECT 2", "SELECT 1 AS a, 2 AS b UNION ALL SELECT 1, 3", 0),
    ("a column name twice", "SELECT grp, n FROM m", "SELECT grp AS x, n AS x FROM m", 0),
    ("bytes that are text", "SELECT 'ab'", "SELECT b FROM m WHERE b = X'6162'", 1),
    ("bytes that are not UTF-8", "SELECT 'x'", "SELECT b FROM m WHERE b = X'FF'", 0),
    ("bytes that read as a number", "SELECT 5", "SELECT b FROM m WHERE b = X'35'", 1),
    ("infinity", "SELECT 1", "SELECT 1e999", 0),
    ("1e16 written by Python", "SELECT v FROM m WHERE grp = 'd'", "SELECT 1e16", 1),
]  # fmt: skip


@pytest.fixture(scope="module")
def edge_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("edges") / "edges.sqlite"
    with sqlite3.connect(db) as connection:
        connection.executescript(TABLES)
    return db


@pytest.mark.parametrize(
    ("name", "gold", "submission", "expected"), EDGES, ids=[e[0] for e in EDGES]
)
def test_edge_cases_score_as_the_release(
    name, gold, submission, expected, edge_db, grade_py, tmp_path
):
    golden = golden_output_csv(*_run(edge_db, gold))
    release = release_verifier(edge_db, golden, submission)
    assert release == expected, f"the release scores {name!r} {release}"
    assert app_verifier(grade_py, tmp_path, edge_db, golden, submission) == release
    assert app_runner(edge_db, submission, golden_csv=golden) == release
    executed = release_pass_at_1(edge_db, gold, submission, tmp_path)
    assert app_runner(edge_db, submission, gold_sql=gold) == executed


def test_a_match_found_without_duplicates_says_so_and_names_no_failure(edge_db, grade_py, tmp_path):
    golden = golden_output_csv(*_run(edge_db, "SELECT DISTINCT grp FROM m"))
    (tmp_path / "s.sql").write_text("SELECT grp FROM m")
    (tmp_path / "g.csv").write_text(golden)
    reward, reason = grade_py(tmp_path / "s.sql", edge_db, tmp_path / "g.csv")
    assert reward == 1 == release_verifier(edge_db, golden, "SELECT grp FROM m")
    assert reason == (
        "the result matches the golden output with duplicate rows removed from the prediction"
    )


def test_grade_py_says_what_it_does():
    """Its docstring states the release's rule, not a tolerance it does not apply."""
    text = GRADE_SQL.read_text()
    assert "round(v / 0.01) * 0.01" in text and "within 1e-2" not in text
    assert "compare_pandas_outputs" in text and "parse_golden_output" in text
