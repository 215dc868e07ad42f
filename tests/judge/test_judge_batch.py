import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from judge.base import IRRELEVANT
from tests.conftest import FIXTURES

LABELLED = FIXTURES / "judge" / "labelled_questions.jsonl"
REGISTRY = "shared/ask-human-data/blocker_registry.json"


# The embedded judge keeps its registries' embeddings in the database (judge.embedstore).
pytestmark = pytest.mark.django_db


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _registry(registries, task: str) -> dict:
    return {b["id"]: b for b in json.loads((registries / f"{task}.json").read_text())["blockers"]}


def test_judge_batch_writes_predicted_and_response(registries, tmp_path):
    summer = _registry(registries, "sql_0")["summer_term_dates"]
    ellipsis = _registry(registries, "swe_1")["ellipsis_within_width"]
    questions = _write(
        tmp_path / "q.jsonl",
        [
            {"task": "sql_0", "question": summer["example_questions"][0]},
            {"task": "sql_0", "question": "What is the capital of France?", "extra": 7},
            {"task": "sql_0", "question": "I assume the summer term is July, right?"},
            {"task": "swe_1", "question": ellipsis["example_questions"][0]},
        ],
    )
    out = tmp_path / "out" / "judged.jsonl"
    call_command("judge_batch", registries=str(registries), questions=str(questions), out=str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4
    assert lines[0]["predicted"] == "summer_term_dates"
    assert lines[0]["response"] == summer["resolution"]
    assert lines[1] == {
        "task": "sql_0",
        "question": "What is the capital of France?",
        "extra": 7,
        "predicted": None,
        "response": IRRELEVANT,
    }
    assert lines[2]["predicted"] is None and lines[2]["response"] == IRRELEVANT
    assert lines[3]["predicted"] == "ellipsis_within_width"
    assert lines[3]["response"] == ellipsis["resolution"]


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("{not json", "not JSON"),
        ('["a list"]', "not a JSON object"),
        ({"question": "When does the summer term start?"}, "no task"),
        ({"task": "sql_0"}, "no question"),
        ({"task": "nope", "question": "When does the summer term start?"}, "unknown task"),
    ],
)
def test_bad_line_is_refused_naming_its_line(registries, tmp_path, bad, reason):
    good = {"task": "sql_0", "question": "Which dates does the summer term cover?"}
    questions = _write(tmp_path / "q.jsonl", [good, "", bad, good])
    out = tmp_path / "judged.jsonl"
    with pytest.raises(CommandError, match=rf"line 3: {reason}"):
        call_command(
            "judge_batch", registries=str(registries), questions=str(questions), out=str(out)
        )
    assert not out.exists()
    assert list(tmp_path.glob("*.tmp")) == []


def test_the_labelled_fixture_questions_are_measured(registries, tmp_path, capsys):
    """fixtures/judge: questions labelled with the blocker they target (or none), worded
    unlike the trigger questions, on the four release-layout fixture tasks."""
    labelled = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    out, report = tmp_path / "judged.jsonl", tmp_path / "report.json"
    call_command(
        "judge_batch",
        registries=str(registries),
        questions=str(LABELLED),
        out=str(out),
        report=str(report),
    )
    judged = [json.loads(line) for line in out.read_text().splitlines()]
    assert [{k: j[k] for k in ("task", "question", "expected")} for j in judged] == labelled
    figures = json.loads(report.read_text())
    for domain in ("sql", "swe"):
        lines = [j for j in judged if j["task"].startswith(domain)]
        predicted = [j for j in lines if j["predicted"] is not None]
        correct = [j for j in predicted if j["predicted"] == j["expected"]]
        positives = [j for j in lines if j["expected"] is not None]
        assert figures[domain]["positives"] == len(positives)
        assert figures[domain]["negatives"] == len(lines) - len(positives)
        assert figures[domain]["precision"] == round(len(correct) / len(predicted), 4)
        assert figures[domain]["recall"] == round(len(correct) / len(positives), 4)
    # A matched question is answered with that blocker's resolution, word for word.
    for line in judged:
        if line["predicted"] is not None:
            blocker = _registry(registries, line["task"])[line["predicted"]]
            assert line["response"] == blocker["resolution"]
        else:
            assert line["response"] == IRRELEVANT
    assert figures["recall_distribution"]["tasks"] == 4
    assert "recall per task over 4 tasks" in capsys.readouterr().out


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
    assert figures["judge"].startswith("embedded-4-")
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
