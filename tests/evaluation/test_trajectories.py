"""Trajectories: parsing (file and line on any problem), import with a results folder, the
viewer, failure labels, kappa, the heat map and LLM pre-labelling."""

import json
import math

import pytest
from django.urls import reverse

from evaluation.models import EvaluationRun, FailureLabel, TaskPass, Trajectory
from evaluation.selectors import failure_agreement, failure_heatmap
from evaluation.services import (
    endpoint_create,
    evaluation_run_execute,
    failure_label_set,
    labelling_run_execute,
    labelling_run_start,
    results_import_start,
    rubric,
    taxonomy,
    taxonomy_update,
)
from evaluation.trajectories import TrajectoryError, parse_trajectory_text
from evaluation.viewer import render_output, view_steps
from hilbench_annotate.errors import AccessDenied, DomainError, ImportRefused
from judge.labels import cohen_kappa

from .conftest import text_reply

TROUBLED = "Which loan status values count as a troubled loan?"
YEAR = "Which calendar year is the review year?"

STEPS = [
    {"role": "user", "content": "Answer the question."},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool": "execute_sql",
        "tool_input": {"query": "SELECT status, count(*) FROM loan GROUP BY status"},
        "tool_output": "status | count(*)\nA | 10\nD | 3",
        "time": 1.5,
    },
    {
        "role": "assistant",
        "tool": "ask_human",
        "tool_input": {"question": TROUBLED},
        "tool_output": "Troubled loans are loans with loan.status = 'D'",
        "time": 2,
    },
    {
        "role": "assistant",
        "tool": "ask_human",
        "tool_input": "What is the capital of France?",
        "tool_output": "irrelevant question",
        "time": 3,
    },
    {
        "role": "assistant",
        "tool": "edit_file",
        "tool_input": {"path": "a.py"},
        "tool_output": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
    },
    {"role": "assistant", "tool": "submit_sql", "tool_input": {"query": "SELECT 1"}},
]


def _folder(tmp_path, task, steps_text, *, name="pass_1_trajectory.json", resolved=0):
    root = tmp_path / "results"
    folder = root / "trajectories" / "ask_human" / "gpt-x" / task.source_id
    folder.mkdir(parents=True)
    (root / "pass_level_metrics.csv").write_text(
        f"model,task,mode,pass,resolved\ngpt-x,{task.source_id},ask_human,1,{resolved}\n"
    )
    (folder / name).write_text(steps_text)
    return root


def test_parse_names_file_and_line():
    text = json.dumps(STEPS, indent=2)
    assert len(parse_trajectory_text(text, name="t.json", jsonl=False)) == len(STEPS)
    bad = json.dumps([STEPS[0], {"content": "no role"}], indent=2)
    with pytest.raises(TrajectoryError, match=r"t\.json line 6 \(step 2\): the step has no role"):
        parse_trajectory_text(bad, name="t.json", jsonl=False)
    with pytest.raises(TrajectoryError, match=r"t\.json line 4: not JSON"):
        parse_trajectory_text('[\n {"role": "user"},\n {"role": \n', name="t.json", jsonl=False)
    lines = "\n".join(json.dumps(s) for s in STEPS[:2]) + '\n{"role": "user", "time": [1]}\n'
    with pytest.raises(TrajectoryError, match=r"t\.jsonl line 3 \(step 3\): time must be"):
        parse_trajectory_text(lines, name="t.jsonl", jsonl=True)
    wrapped = json.dumps(
        {"model": "m", "steps": [{"role": "user"}, {"role": "assistant", "tool": "ask_human"}]},
        indent=1,
    )
    with pytest.raises(TrajectoryError, match=r"line 7 \(step 2\): an ask_human step without"):
        parse_trajectory_text(wrapped, name="w.json", jsonl=False)


def test_malformed_trajectory_refuses_the_whole_import(sql_task, lead, tmp_path):
    text = json.dumps(STEPS[:2], indent=2)[:-2] + ',\n  {"role": 5}\n]'
    root = _folder(tmp_path, sql_task, text)
    with pytest.raises(ImportRefused) as refused:
        results_import_start(project=sql_task.project, actor=lead, path=root)
    message = str(refused.value)
    assert f"trajectories/ask_human/gpt-x/{sql_task.source_id}/pass_1_trajectory.json" in message
    assert "line 16 (step 3): the step has no role" in message
    assert not EvaluationRun.objects.exists() and not Trajectory.objects.exists()


def _imported(sql_task, lead, tmp_path, *, jsonl=False):
    text = "\n".join(json.dumps(s) for s in STEPS) if jsonl else json.dumps(STEPS, indent=2)
    name = "pass_1_trajectory.jsonl" if jsonl else "pass_1_trajectory.json"
    (run,) = results_import_start(
        project=sql_task.project, actor=lead, path=_folder(tmp_path, sql_task, text, name=name)
    )
    evaluation_run_execute(run_id=run.pk)
    return TaskPass.objects.get(run=run)


@pytest.mark.parametrize("jsonl", [False, True])
def test_imported_trajectory_is_stored_and_its_questions_judged(sql_task, lead, tmp_path, jsonl):
    task_pass = _imported(sql_task, lead, tmp_path, jsonl=jsonl)
    assert task_pass.trajectory.steps[1]["tool_output"].startswith("status | count(*)")
    calls = task_pass.ask_human_run.calls.order_by("id")
    assert list(calls.values_list("blocker_key", "client_time")) == [
        ("troubled_loan_definition", "2"),
        (None, "3"),
    ]


def test_viewer_shapes_tables_diffs_and_verdicts():
    verdicts = [{"blocker": "troubled_loan_definition"}, {"blocker": None}]
    steps = view_steps(STEPS, verdicts)
    assert steps[1]["output"]["kind"] == "table"
    assert steps[1]["output"]["rows"] == [["A", "10"], ["D", "3"]]
    assert [a["n"] for s in steps if s["kind"] == "ask" for a in s["asks"]] == [1, 2]
    assert steps[2]["asks"][0]["verdict"]["blocker"] == "troubled_loan_definition"
    assert steps[3]["asks"][0]["question"] == "What is the capital of France?"
    diff = steps[4]["output"]
    assert diff["kind"] == "diff" and ("diff-add", "+x = 2") in diff["lines"]
    assert ("diff-del", "-x = 1") in diff["lines"]
    assert render_output([{"a": 1, "b": None}], tool="execute_sql")["columns"] == ["a", "b"]


def test_viewer_page(client, sql_task, lead, tmp_path, author):
    task_pass = _imported(sql_task, lead, tmp_path)
    client.force_login(author)
    html = client.get(reverse("evaluation-pass", args=[task_pass.pk])).content.decode()
    assert 'id="ask-1"' in html and 'id="ask-2"' in html
    assert "matched <code>troubled_loan_definition</code>" in html
    assert "irrelevant question</span>" in html
    assert '<span class="diff-add">+x = 2</span>' in html
    assert "<td>D</td>" in html  # the SQL result as a table


def test_labels_kappa_and_heatmap(sql_task, lead, reviewer, auditor, author, harness, tmp_path):
    task_pass = _imported(sql_task, lead, tmp_path)
    failure_label_set(task_pass=task_pass, actor=reviewer, dimension="logic", mode="strategy")
    failure_label_set(task_pass=task_pass, actor=auditor, dimension="logic", mode="accuracy")
    failure_label_set(task_pass=task_pass, actor=author, dimension="logic", mode="strategy")
    with pytest.raises(AccessDenied):
        failure_label_set(task_pass=task_pass, actor=harness, dimension="logic", mode="strategy")
    with pytest.raises(DomainError, match="Choose a dimension"):
        failure_label_set(task_pass=task_pass, actor=lead, dimension="luck", mode="strategy")
    # Relabelling replaces the person's own label.
    failure_label_set(task_pass=task_pass, actor=auditor, dimension="logic", mode="strategy")
    assert FailureLabel.objects.filter(task_pass=task_pass).count() == 3
    (grid,) = failure_heatmap(project=sql_task.project)["models"]
    counts = {
        (r["dimension"].key, c["mode"].key): c["count"] for r in grid["rows"] for c in r["cells"]
    }
    assert counts[("logic", "strategy")] == 1 and sum(counts.values()) == 1
    assert grid["human"] == 1 and grid["failed"] == 1


def test_cohen_kappa_hand_checked():
    # Two raters, 10 items: agree on 7. Rater A: 5 x, 5 y; rater B: 4 x, 6 y.
    pairs = [("x", "x")] * 3 + [("y", "y")] * 4 + [("x", "y")] * 2 + [("y", "x")] * 1
    # p_o = 0.7; p_e = 0.5*0.4 + 0.5*0.6 = 0.5; kappa = 0.2 / 0.5 = 0.4
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_agreement_between_people_and_llm_runs(
    sql_task, lead, reviewer, auditor, tmp_path, chat_server
):
    task_pass = _imported(sql_task, lead, tmp_path)
    failure_label_set(task_pass=task_pass, actor=reviewer, dimension="logic", mode="strategy")
    failure_label_set(task_pass=task_pass, actor=auditor, dimension="logic", mode="strategy")
    endpoint = endpoint_create(
        project=sql_task.project, actor=lead, name="labeller", base_url=chat_server.url, model="l"
    )
    answer = {
        "reasoning": "It never asked about the year.",
        "dimension": "logic",
        "mode": "strategy",
    }
    chat_server.script = [
        text_reply("I think it is logic."),  # malformed: retried with a correction
        text_reply(json.dumps(answer)),
        text_reply("```json\n" + json.dumps(answer) + "\n```"),
    ]
    runs = []
    for _ in range(2):
        run = labelling_run_start(project=sql_task.project, actor=lead, endpoint=endpoint)
        labelling_run_execute(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == "succeeded" and run.done == 1, run.error
        runs.append(run)
    # The rubric (taxonomy definitions) went to the model; the correction followed the bad reply.
    assert "self_assessment (Self-assessment)" in chat_server.requests[0]["messages"][0]["content"]
    assert "could not be used" in chat_server.requests[1]["messages"][-1]["content"]
    rows = failure_agreement(project=sql_task.project)
    kinds = sorted(r["kind"] for r in rows)
    assert kinds == [
        "LLM – LLM",
        "person – LLM",
        "person – LLM",
        "person – LLM",
        "person – LLM",
        "person – person",
    ]
    assert all(r["passes"] == 1 for r in rows)
    assert all(r["kappa"] == 1.0 for r in rows)  # one shared item, one category: full agreement


def test_taxonomy_edit_changes_the_rubric_version(project, lead, author):
    before = rubric(project)[1]
    entry = next(e for e in taxonomy(project) if e.key == "completion")
    with pytest.raises(AccessDenied):
        taxonomy_update(
            project=project, actor=author, entries={entry.pk: {"name": "x", "definition": "y"}}
        )
    taxonomy_update(
        project=project,
        actor=lead,
        entries={entry.pk: {"name": "Completion", "definition": "Never submits.", "examples": ""}},
    )
    assert rubric(project)[1] != before
    assert math.isclose(len(taxonomy(project)), 7)
