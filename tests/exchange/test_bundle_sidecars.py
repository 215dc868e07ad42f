"""The sidecars a bundle ships, started from the bundle's files alone on loopback (a real
server process each) and called with the bundle's own command-line client."""

import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exchange.bundles.sidecars import (
    ask_human_files,
    business_info_files,
    runtime_file,
    sql_tools_files,
)

REGISTRY = {
    "blockers": [
        {
            "id": "boom_year",
            "type": "question",
            "subtype": "timeframe_ambiguity",
            "description": "The question names the boom year without saying which year it is.",
            "resolution": "The boom year is 1997.",
            "example_questions": [
                "Which calendar year is the boom year?",
                "What year does 'the boom year' refer to?",
                "Which year should be treated as the boom year?",
            ],
        },
        {
            "id": "status_code",
            "type": "schema",
            "subtype": "confusing_column_or_column_definition",
            "description": "Which loan status code means a loan finished without problems.",
            "resolution": "Status 'A' means the contract finished with no problems.",
            "example_questions": [
                "Which status code marks a loan that finished without problems?",
                "What value of the status column means the loan ended fine?",
                "How is a problem-free finished loan coded in the status column?",
            ],
        },
    ]
}


def _write(folder: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(folder: Path, script: str, env: dict[str, str]):
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, script],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "HOST": "127.0.0.1", "PORT": str(port), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode()) from None
            time.sleep(0.2)
    process.kill()
    raise AssertionError(f"{script} did not start")


def _call(client: Path, url: str, tool: str, **arguments) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(client), url, tool, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout.strip()


@pytest.fixture
def client(tmp_path) -> Path:
    path = tmp_path / "mcp.py"
    path.write_bytes(runtime_file("mcp.py"))
    return path


def test_the_ask_human_sidecar_answers_from_the_registry_alone(tmp_path, client):
    folder = _write(
        tmp_path / "ask-human",
        ask_human_files(json.dumps(REGISTRY).encode(), {"version": "test"}),
    )
    out = tmp_path / "out"
    process, url = _start(
        folder,
        "ask_human.py",
        {"BLOCKER_REGISTRY_PATH": str(folder / "blocker_registry.json"), "OUTPUT_DIR": str(out)},
    )
    try:
        code, answer = _call(client, url, "ask_human", question="Which year is the boom year?")
        assert code == 0 and answer == "The boom year is 1997."
        code, answer = _call(
            client, url, "ask_human", question="What is the capital city of Portugal?"
        )
        assert code == 0 and answer == "irrelevant question"
    finally:
        process.terminate()
        process.wait(timeout=10)
    metrics = json.loads((out / "ask_human_metrics.json").read_text())
    assert metrics["total_questions"] == 2 and metrics["blockers_resolved_list"] == ["boom_year"]
    assert [q["blocker_name"] for q in metrics["questions"]] == ["boom_year", None]


@pytest.fixture
def data(tmp_path) -> Path:
    folder = tmp_path / "data"
    (folder / "database_description").mkdir(parents=True)
    with sqlite3.connect(folder / "database.sqlite") as db:
        db.execute("CREATE TABLE loan (loan_id INTEGER, status TEXT)")
        db.executemany("INSERT INTO loan VALUES (?, ?)", [(1, "A"), (2, "B"), (3, "A")])
    (folder / "database_description" / "loan.csv").write_text(
        "original_column_name,column_name,column_description,data_format,value_description\n"
        "status,status,contract status,text,A: finished without problems\n"
    )
    (folder / "business_info.json").write_text(
        json.dumps(
            {
                "database_name": "bank",
                "business_info": [
                    "Loans with status A finished without problems.",
                    "The crisis period is the years 2008 and 2009.",
                ],
            }
        )
    )
    return folder


def test_sql_tools_serve_the_database_read_only_and_take_the_submission(tmp_path, client, data):
    folder = _write(tmp_path / "sql-tools", sql_tools_files())
    submission = tmp_path / "shared" / "submitted_query.sql"
    process, url = _start(
        folder, "sql_tools.py", {"DATA_DIR": str(data), "SUBMISSION_FILE": str(submission)}
    )
    try:
        assert "- loan" in _call(client, url, "get_database_info", database_name="bank")[1]
        table = _call(client, url, "get_table_info", database_name="bank", table_name="loan")[1]
        assert "status TEXT: contract status" in table
        code, rows = _call(
            client, url, "execute_sql", query="SELECT COUNT(*) FROM loan WHERE status = 'A'"
        )
        assert code == 0 and rows.splitlines() == ["COUNT(*)", "2"]
        code, refused = _call(client, url, "execute_sql", query="DELETE FROM loan")
        assert code == 1 and "readonly" in refused.lower()
        assert _call(client, url, "submit_sql", query="SELECT 1")[1] == "Submitted."
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert submission.read_text() == "SELECT 1"
    with sqlite3.connect(data / "database.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM loan").fetchone() == (3,)


def test_business_info_searches_the_documentation(tmp_path, client, data):
    folder = _write(tmp_path / "business-info", business_info_files())
    process, url = _start(folder, "business_info.py", {"DATA_DIR": str(data)})
    try:
        code, found = _call(
            client, url, "get_business_info", database_name="bank", search_string="crisis years"
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert code == 0 and found.splitlines()[0] == "- The crisis period is the years 2008 and 2009."
