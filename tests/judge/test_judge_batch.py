import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from judge.base import IRRELEVANT
from tests.conftest import SHARED

EXAMPLES = SHARED / "examples" / "hilbench"


@pytest.fixture
def registries(tmp_path):
    paths = sorted(EXAMPLES.glob("*/*/shared/ask-human-data/blocker_registry.json"))
    if not paths:
        pytest.skip(f"no registries under {EXAMPLES}")
    folder = tmp_path / "registries"
    folder.mkdir()
    for path in paths:
        shutil.copy(path, folder / f"{path.parents[2].name}.json")
    return folder


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


@pytest.mark.shared_data
def test_judge_batch_writes_predicted_and_response(registries, tmp_path):
    sql_0 = json.loads((registries / "sql_0.json").read_text())["blockers"]
    crisis = next(b for b in sql_0 if b["id"] == "undefined_crisis_period")
    questions = _write(
        tmp_path / "q.jsonl",
        [
            {
                "task": "sql_0",
                "question": "Which dates mark the start and end of the crisis period?",
            },
            {"task": "sql_0", "question": "What is the capital of France?", "extra": 7},
            {"task": "sql_0", "question": "I assume the crisis period is 1996, right?"},
            {"task": "sql_3", "question": "Which years are considered the modern era?"},
        ],
    )
    out = tmp_path / "out" / "judged.jsonl"
    call_command("judge_batch", registries=str(registries), questions=str(questions), out=str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4
    assert lines[0]["predicted"] == "undefined_crisis_period"
    assert lines[0]["response"] == crisis["resolution"]
    assert lines[1] == {
        "task": "sql_0",
        "question": "What is the capital of France?",
        "extra": 7,
        "predicted": None,
        "response": IRRELEVANT,
    }
    assert lines[2]["predicted"] is None and lines[2]["response"] == IRRELEVANT
    assert lines[3]["predicted"] == "modern_era_cards"


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "bad, reason",
    [
        ("{not json", "not JSON"),
        ('["a list"]', "not a JSON object"),
        ({"question": "What is the crisis period?"}, "no task"),
        ({"task": "sql_0"}, "no question"),
        ({"task": "nope", "question": "What is the crisis period?"}, "unknown task"),
    ],
)
def test_bad_line_is_refused_naming_its_line(registries, tmp_path, bad, reason):
    good = {"task": "sql_0", "question": "What date range defines the crisis period?"}
    questions = _write(tmp_path / "q.jsonl", [good, "", bad, good])
    out = tmp_path / "judged.jsonl"
    with pytest.raises(CommandError, match=rf"line 3: {reason}"):
        call_command(
            "judge_batch", registries=str(registries), questions=str(questions), out=str(out)
        )
    assert not out.exists()
    assert list(tmp_path.glob("*.tmp")) == []


def test_missing_registries_dir(tmp_path):
    questions = _write(tmp_path / "q.jsonl", [{"task": "t", "question": "What is it?"}])
    with pytest.raises(CommandError, match="not a directory"):
        call_command(
            "judge_batch",
            registries=str(tmp_path / "none"),
            questions=str(questions),
            out=str(tmp_path / "o.jsonl"),
        )


def _demo_registries(tmp_path) -> Path:
    from tests.judge.test_embedded import REGISTRY

    folder = tmp_path / "registries"
    folder.mkdir()
    blockers = [
        {
            "id": b.id,
            "type": b.type,
            "description": b.description,
            "resolution": b.resolution,
            "example_questions": list(b.trigger_questions),
        }
        for b in REGISTRY
    ]
    (folder / "bank.json").write_text(json.dumps({"blockers": blockers}))
    swe = [{**blockers[0], "type": "missing parameters"}]
    (folder / "repo.json").write_text(json.dumps({"blockers": swe}))
    return folder


def test_labelled_questions_are_measured_overall_per_domain_and_per_task(tmp_path, capsys):
    registries = _demo_registries(tmp_path)
    lines = [
        {"task": "bank", "question": "Over which dates does the crisis period run?",
         "expected": "crisis_period"},
        {"task": "bank", "question": "How old must a client be to count as a senior account "
         "owner?", "expected": "senior_owner"},
        {"task": "bank", "question": "What is the capital of France?", "expected": None},
        {"task": "bank", "question": "Which table stores the branch addresses?",
         "expected": "distressed_district"},  # a mislabelled line: the judge should miss it
        {"task": "repo", "question": "Which start and end dates bound the crisis period?",
         "expected": "crisis_period"},
    ]  # fmt: skip
    questions = _write(tmp_path / "q.jsonl", lines)
    out, report = tmp_path / "judged.jsonl", tmp_path / "report.json"
    call_command(
        "judge_batch",
        registries=str(registries),
        questions=str(questions),
        out=str(out),
        report=str(report),
    )
    judged = [json.loads(line) for line in out.read_text().splitlines()]
    figures = json.loads(report.read_text())
    # The report is what the output lines say, counted by hand.
    predicted = [j for j in judged if j["predicted"] is not None]
    correct = [j for j in predicted if j["predicted"] == j["expected"]]
    positives = [j for j in judged if j["expected"] is not None]
    assert figures["all"]["predicted"] == len(predicted)
    assert figures["all"]["precision"] == round(len(correct) / len(predicted), 4)
    assert figures["all"]["recall"] == round(len(correct) / len(positives), 4)
    assert (figures["sql"]["positives"], figures["swe"]["positives"]) == (3, 1)
    assert judged[0]["predicted"] == "crisis_period" and judged[3]["predicted"] is None
    assert figures["task_recall"]["bank"] == round(
        sum(j["predicted"] == j["expected"] for j in positives if j["task"] == "bank") / 3, 4
    )
    assert figures["recall_distribution"]["tasks"] == 2
    assert figures["judge"].startswith("embedded-2-")
    printed = capsys.readouterr().out
    assert "all: precision" in printed and "recall per task over 2 tasks" in printed


def test_an_expected_blocker_the_registry_lacks_is_refused(tmp_path):
    registries = _demo_registries(tmp_path)
    questions = _write(
        tmp_path / "q.jsonl",
        [{"task": "bank", "question": "What is the crisis period?", "expected": "nope"}],
    )
    with pytest.raises(CommandError, match="line 1: bank has no blocker 'nope'"):
        call_command(
            "judge_batch",
            registries=str(registries),
            questions=str(questions),
            out=str(tmp_path / "o.jsonl"),
        )
