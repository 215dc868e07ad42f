import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from judge.base import IRRELEVANT

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "examples" / "hilbench"


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
