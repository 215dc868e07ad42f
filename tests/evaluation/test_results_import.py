"""Imported results: validated whole before anything is stored; questions judged on import."""

import csv
import json

import pytest

from evaluation.models import EvaluationRun, SupportRecord, SupportStudy, TaskPass
from evaluation.selectors import leaderboard, task_selection
from evaluation.services import (
    evaluation_run_execute,
    results_import_start,
    selection_policy_update,
    support_import,
)
from exchange.importers import import_hilbench
from hilbench_annotate.errors import AccessDenied, DomainError, ImportRefused
from judge.models import AskHumanCall

from ..conftest import FIXTURES
from .util import import_results, keep_by_pass_rate

TROUBLED = "Which loan status values count as a troubled loan?"
YEAR = "Which calendar year is the review year?"


def _jsonl(tmp_path, lines, name="results.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_bad_line_imports_nothing_and_is_named(sql_task, lead, tmp_path):
    good = json.dumps({"task": sql_task.source_id, "mode": "baseline", "pass": 1, "resolved": True})
    lines = [
        good,
        '{"task": "' + sql_task.source_id + '", "mode": "baseline", "pass": 2,',  # cut short
        json.dumps({"task": "nope/1", "mode": "baseline", "pass": 1, "resolved": False}),
        json.dumps({"task": sql_task.pk, "mode": "oracle", "pass": 1, "resolved": False}),
        json.dumps(
            {
                "task": sql_task.pk,
                "mode": "baseline",
                "pass": 3,
                "resolved": True,
                "questions": [{"text": "Why?"}],
            }
        ),
        good,
    ]
    with pytest.raises(ImportRefused) as refused:
        results_import_start(
            project=sql_task.project, actor=lead, path=_jsonl(tmp_path, lines), model_name="m"
        )
    message = str(refused.value)
    assert "5 bad line(s); nothing was imported" in message
    assert "line 2: not JSON" in message
    assert "line 3: the project has no task 'nope/1'" in message
    assert "line 4: mode must be one of" in message
    assert "line 5: a baseline pass cannot have questions" in message
    assert "line 6: the same task, mode and pass as line 1" in message
    assert not EvaluationRun.objects.exists() and not TaskPass.objects.exists()


def test_imported_questions_are_judged_and_scored(sql_task, lead):
    records = [
        {
            "task": sql_task.source_id,
            "mode": "ask_human",
            "pass": 1,
            "resolved": True,
            "questions": [{"text": TROUBLED, "time": 12.5}, {"text": YEAR, "time": 30}],
            "tokens": 1200,
            "cost": 0.02,
        },
        {"task": sql_task.source_id, "mode": "ask_human", "pass": 2, "resolved": False},
    ]
    (run,) = import_results(project=sql_task.project, actor=lead, records=records, model="m1")
    assert run.status == EvaluationRun.Status.SUCCEEDED and run.pending == {}
    calls = AskHumanCall.objects.filter(run__task_pass__run=run).order_by("id")
    assert list(calls.values_list("blocker_key", "client_time")) == [
        ("troubled_loan_definition", "12.5"),
        ("review_year_dates", "30"),
    ]
    (row,) = leaderboard(project=sql_task.project)
    # Pass 1: 2 distinct of 2 calls, 2 of 3 blockers; pass 2: no calls. Micro: P 1, R 2/6.
    assert row["ask_precision"] == pytest.approx(1.0)
    assert row["ask_recall"] == pytest.approx(1 / 3)
    # pass@1: the first pass solved it (the release's); unbiased, 1 of 2 passes solved.
    assert row["pass_at_1"] == 1.0 and row["pass_at_1_unbiased"] == 0.5
    assert row["tokens_per_pass"] == 1200


def test_results_folder_with_trajectories(sql_task, lead, tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    (root / "pass_level_metrics.csv").write_text(
        "model,task,condition,pass_idx,passed\n"
        f"gpt-x,{sql_task.source_id},ask_human,1,1\n"
        f"gpt-x,{sql_task.source_id},baseline,1,0\n"
        f"claude-y,{sql_task.source_id},baseline,1,1\n"
    )
    folder = root / "trajectories" / "ask_human" / "gpt-x" / sql_task.source_id
    folder.mkdir(parents=True)
    steps = [
        {
            "role": "assistant",
            "content": "Let me look",
            "tool": "execute_sql",
            "tool_input": "SELECT 1",
        },
        {
            "role": "assistant",
            "tool": "ask_human",
            "tool_input": {"question": TROUBLED},
            "time": "t1",
        },
    ]
    (folder / "pass_1_trajectory.json").write_text(json.dumps(steps))
    runs = results_import_start(project=sql_task.project, actor=lead, path=root)
    assert sorted(r.model_name for r in runs) == ["claude-y", "gpt-x"]
    for run in runs:
        evaluation_run_execute(run_id=run.pk)
    asked = TaskPass.objects.get(run__model_name="gpt-x", mode="ask_human")
    assert list(asked.ask_human_run.calls.values_list("blocker_key", flat=True)) == [
        "troubled_loan_definition"
    ]


def test_only_leads_import(sql_task, author, tmp_path):
    line = json.dumps({"task": sql_task.pk, "mode": "baseline", "pass": 1, "resolved": True})
    with pytest.raises(AccessDenied):
        results_import_start(
            project=sql_task.project, actor=author, path=_jsonl(tmp_path, [line]), model_name="m"
        )


def test_selection_keeps_and_drops_by_thresholds(sql_task, lead):
    assert task_selection(task=sql_task)["decision"] == "undecided"
    keep_by_pass_rate(sql_task, model="gpt-4o", beside=("claude-sonnet-4",))
    selection = task_selection(task=sql_task)
    assert selection["decision"] == "keep", selection
    assert selection["full_info_pass"] == 1.0 and selection["baseline_pass"] == 0.0
    # The second model's newer run solves it without asking (it supersedes its earlier
    # one): mean baseline unbiased pass@3 0.5 > 0.34 -> drop.
    records = [
        {"task": sql_task.pk, "mode": mode, "pass": i, "resolved": i == 3}
        for mode in ("baseline", "full_info")
        for i in (1, 2, 3)
    ]
    import_results(project=sql_task.project, actor=lead, records=records, model="claude-sonnet-4")
    selection = task_selection(task=sql_task)
    assert selection["decision"] == "drop"
    assert "baseline unbiased pass@3 0.50 > 0.34" in selection["reason"]
    assert [m["model"] for m in selection["models"]] == ["claude-sonnet-4", "gpt-4o"]
    # The lead loosens the threshold: kept.
    selection_policy_update(
        project=sql_task.project, actor=lead, k=3, full_info_min=0.67, baseline_max=0.5
    )
    assert task_selection(task=sql_task)["decision"] == "keep"
    with pytest.raises(DomainError):
        selection_policy_update(
            project=sql_task.project, actor=lead, k=3, full_info_min=1.5, baseline_max=0.5
        )


def test_selection_needs_evidence_on_the_current_revision(sql_task, lead, author):
    from hilbench_annotate import services as core

    keep_by_pass_rate(sql_task)
    assert task_selection(task=sql_task)["decision"] == "keep"
    sql_task.refresh_from_db()
    core.task_update(
        task=sql_task,
        actor=author,
        expected_version=sql_task.version,
        title=sql_task.title + " (edited)",
    )
    assert task_selection(task=sql_task)["decision"] == "undecided"


def test_support_scores_import_and_audbc(sql_task, lead, tmp_path, project, author, demo_data):
    line = {"task": sql_task.pk, "score": 0.9, "correct": False, "correct_with_support": True}
    study = support_import(
        project=sql_task.project,
        actor=lead,
        path=_jsonl(tmp_path, [json.dumps(line)]),
        model_name="m",
    )
    assert study.status == "succeeded" and SupportRecord.objects.get(study=study).score == 0.9
    bad = [json.dumps(line), json.dumps({**line, "score": 1.4}), json.dumps(line)]
    with pytest.raises(ImportRefused) as refused:
        support_import(
            project=sql_task.project, actor=lead, path=_jsonl(tmp_path, bad), model_name="m"
        )
    assert "line 2: score must be a number from 0 to 1" in str(refused.value)
    assert "line 3: task" in str(refused.value)
    assert SupportStudy.objects.count() == 1


def test_import_results_command(sql_task, lead, tmp_path):
    from django.core.management import CommandError, call_command

    line = json.dumps({"task": sql_task.source_id, "mode": "full_info", "pass": 1, "resolved": 1})
    path = _jsonl(tmp_path, [line])
    call_command(
        "import_results",
        str(path),
        project=sql_task.project.slug,
        username="lead",
        model="m",
        wait=True,
    )
    assert TaskPass.objects.get().resolved is True
    bad = _jsonl(tmp_path, ["{}"], name="bad.jsonl")
    with pytest.raises(CommandError, match="line 1: unknown field|line 1: missing task"):
        call_command(
            "import_results", str(bad), project=sql_task.project.slug, username="lead", model="m"
        )


def test_per_task_rows(sql_task, lead):
    from evaluation.selectors import per_task_rows

    records = [
        {"task": sql_task.pk, "mode": "baseline", "pass": 1, "resolved": False},
        {"task": sql_task.pk, "mode": "baseline", "pass": 2, "resolved": True},
        {
            "task": sql_task.pk,
            "mode": "ask_human",
            "pass": 1,
            "resolved": False,
            "questions": [{"text": TROUBLED}, {"text": "What is the capital of France?"}],
        },
    ]
    import_results(project=sql_task.project, actor=lead, records=records, model="m")
    (row,) = per_task_rows(project=sql_task.project)
    # With fewer than 3 passes, pass@n: solved in one of 2 (1.0), in none of 1 (0.0).
    assert row["baseline"] == 1.0 and row["baseline_passes"] == 2
    assert row["full_info"] is None and row["ask_human"] == 0.0
    # 1 distinct blocker of 2 calls, of 3 blockers.
    assert row["ask_precision"] == pytest.approx(0.5)
    assert row["ask_recall"] == pytest.approx(1 / 3)
    assert row["ask_f1"] == pytest.approx(0.4)


def _fixture_steps(path) -> list[dict]:
    """A trajectory file of fixtures/results, read here on its own terms."""
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    value = json.loads(path.read_text())
    return value["steps"] if isinstance(value, dict) else value


def test_the_results_fixture_imports_with_its_trajectories(project, lead):
    """fixtures/results: two models on two release-layout fixture tasks, every mode, two
    passes; trajectories as a JSON array, a {"steps": …} object and JSONL."""
    import_hilbench(project=project, root=FIXTURES / "hilbench", actor=lead)
    root = FIXTURES / "results"
    with (root / "pass_level_metrics.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))

    runs = results_import_start(project=project, actor=lead, path=root)
    assert sorted(r.model_name for r in runs) == sorted({row["model"] for row in rows})
    for run in runs:
        evaluation_run_execute(run_id=run.pk)

    passes = TaskPass.objects.filter(run__in=runs)
    assert passes.count() == len(rows)
    keys = ("role", "content", "tool", "tool_input", "tool_output", "time")
    for row in rows:
        task_pass = passes.get(
            run__model_name=row["model"],
            task__source_id=row["task"],
            mode=row["mode"],
            index=int(row["pass"]),
        )
        assert task_pass.resolved == (row["resolved"] == "1")
        assert task_pass.tokens == int(row["tokens"])
        folder = root / "trajectories" / row["mode"] / row["model"] / row["task"]
        (path,) = folder.glob(f"pass_{row['pass']}_trajectory.*")
        steps = _fixture_steps(path)
        assert task_pass.trajectory.steps == [{k: s.get(k) for k in keys} for s in steps]
        asked = [s["tool_input"] for s in steps if s.get("tool") == "ask_human"]
        questions = [a if isinstance(a, str) else a["question"] for a in asked]
        if row["mode"] == "ask_human":
            calls = task_pass.ask_human_run.calls.values_list("question", flat=True)
            assert list(calls) == questions and questions
        else:
            assert task_pass.ask_human_run is None and questions == []
    # The judge answered them: a trigger question asked word for word finds its blocker, an
    # off-topic one none.
    judged = dict(
        AskHumanCall.objects.filter(run__task_pass__in=passes).values_list(
            "question", "blocker_key"
        )
    )
    assert judged["Which plan code identifies reading club members?"] == "reading_club_plan_code"
    assert judged["Does the ellipsis count towards the width of the preview?"] == (
        "ellipsis_within_width"
    )
    assert judged["Is the library open on Sundays?"] is None
