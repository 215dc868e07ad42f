"""The viewer finds ask_human however the agent called it (issue 44, item 7): through the tool,
or — Harbor's terminus-2, the one model agent the app runs — by typing the task's
``ask_human`` command in its terminal. Each call is numbered with its verdict, and Previous /
Next go from one to the next, on every page."""

import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.asks import SCAN_CHARS, shell_questions, step_questions
from evaluation.models import EvaluationRun, TaskPass, Trajectory
from evaluation.trajectories import trajectory_questions
from evaluation.trajectory_pages import trajectory_outline
from evaluation.viewer import PAGE_STEPS
from exchange.demo.blocked_task import DEMO_BLOCKERS

from .terminus import terminus_trial
from .util import import_results

pytestmark = pytest.mark.django_db
IRRELEVANT = "What is the capital of France?"


@pytest.mark.parametrize(
    ("command", "questions"),
    [
        ("ask_human 'Which loans count as troubled?'\n", ["Which loans count as troubled?"]),
        ('ask_human "Which year?" 2>&1 | tee answer.txt\n', ["Which year?"]),
        (
            "cd /app && ask_human Which year\nask_human 'And the month?'",
            ["Which year", "And the month?"],
        ),
        ('answer=$(ask_human "Which year?"); echo "$answer"', ["Which year?"]),
        ("/usr/local/bin/ask_human 'Which year?'", ["Which year?"]),
        ("ask_human 'multi\nline'", ["multi\nline"]),
        ("ask_human 'typed without its closing quote", ["typed without its closing quote"]),
        ("ask_human", [""]),  # a blank question is still a call (the sidecar logs it)
        ("which ask_human; cat /usr/local/bin/ask_human", []),
        ("echo ask_human 'not a call'", []),
        ("grep -r ask_human /app", []),
    ],
)
def test_an_ask_human_command_is_found_where_a_command_starts(command, questions):
    assert shell_questions(command) == questions


def test_a_step_asks_through_the_tool_or_through_a_shell_command():
    assert step_questions({"tool": "ask_human", "tool_input": {"question": "Q?"}}) == ["Q?"]
    assert step_questions({"tool": "ask_human", "tool_input": "Q?"}) == ["Q?"]
    shell = {"tool": "bash_command", "tool_input": {"keystrokes": "ask_human 'Q?'\n"}}
    assert step_questions(shell) == ["Q?"]
    assert step_questions({"tool": "bash", "tool_input": "ask_human 'Q?'"}) == ["Q?"]
    assert step_questions({"tool": "run", "tool_input": {"command": "ask_human Q"}}) == ["Q"]
    assert step_questions({"role": "assistant", "content": "ask_human 'Q?'"}) == []
    assert step_questions({"tool": "submit_sql", "tool_input": "SELECT 'ask_human'"}) == []
    # Only the first SCAN_CHARS characters of a command are read (the database reads as many).
    late = {"tool": "bash", "tool_input": "#" * SCAN_CHARS + "\nask_human 'late?'"}
    assert step_questions(late) == []


def _terminus_pass(sql_task, lead, tmp_path) -> TaskPass:
    trigger = DEMO_BLOCKERS[0]["trigger_questions"][0]
    jobs = terminus_trial(
        tmp_path,
        source_id=sql_task.source_id,
        asks=[(trigger, DEMO_BLOCKERS[0]["resolution"]), (IRRELEVANT, "irrelevant question")],
        gold_sql=sql_task.sql_environment.gold_sql,
    )
    call_command("import_results", str(jobs), project=sql_task.project.slug,
                 username=lead.username, wait=True)  # fmt: skip
    run = EvaluationRun.objects.get(project=sql_task.project, model_name="openai/standin")
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error
    return TaskPass.objects.get(run=run)


def test_a_terminus_2_pass_shows_each_ask_human_command_with_its_verdict(
    client, sql_task, lead, author, tmp_path
):
    task_pass = _terminus_pass(sql_task, lead, tmp_path)
    steps = task_pass.trajectory.steps
    assert [s["tool"] for s in steps] == [None, "bash_command", "bash_command", "bash_command",
                                          "mark_task_complete"]  # fmt: skip
    calls = list(task_pass.ask_human_run.calls.order_by("id"))
    assert [c.blocker_key for c in calls] == [DEMO_BLOCKERS[0]["key"], None]
    outline = trajectory_outline(task_pass.pk)
    assert outline.total == 5 and outline.asks == [1, 2]

    client.force_login(author)
    html = client.get(reverse("evaluation-pass", args=[task_pass.pk])).content.decode()
    assert "No ask_human call in this pass" not in html
    assert '<span id="ask-pos" aria-live="polite">0 / 2</span>' in html
    assert '<script id="ask-pages" type="application/json">[1, 1]</script>' in html
    first = html.split('id="ask-1"')[1].split('id="ask-2"')[0]
    second = html.split('id="ask-2"')[1].split("</li>")[0]
    assert DEMO_BLOCKERS[0]["trigger_questions"][0] in first
    assert f"matched <code>{DEMO_BLOCKERS[0]['key']}</code>" in first
    assert IRRELEVANT in second and "irrelevant question</span>" in second
    # The step keeps what the agent typed and what its terminal showed.
    assert "ask_human" in first.split("ask-call")[0] or "ask_human" in html.split('id="ask-1"')[0]
    assert re.search(r'<li class="step step-ask role-agent" data-kind="ask">', html)


def test_calls_in_a_shell_step_and_through_the_tool_share_one_numbering_across_pages(
    client, sql_task, lead, author
):
    """A shell step that asks twice holds two calls; each keeps its own verdict, the tool's
    call after them the next one, on the next page as on this one."""
    trigger = DEMO_BLOCKERS[0]["trigger_questions"][0]
    filler = {"role": "assistant", "tool": "bash", "tool_input": "ls", "tool_output": "x"}
    steps = [
        {"role": "agent", "tool": "bash_command",
         "tool_input": {"keystrokes": f"ask_human {json.dumps(trigger)}; ask_human 'Why?'\n"},
         "tool_output": "…"},
        {"role": "agent", "tool": "bash_command",
         "tool_input": {"keystrokes": "which ask_human\n"}, "tool_output": "/usr/local/bin"},
        *[filler] * PAGE_STEPS,
        {"role": "assistant", "tool": "ask_human", "tool_input": {"question": IRRELEVANT},
         "tool_output": "irrelevant question"},
    ]  # fmt: skip
    questions = [q["text"] for q in trajectory_questions(steps)]
    assert questions == [trigger, "Why?", IRRELEVANT]
    (run,) = import_results(
        project=sql_task.project, actor=lead,
        records=[{"task": sql_task.pk, "mode": "ask_human", "pass": 1, "resolved": False,
                  "questions": questions}],
    )  # fmt: skip
    task_pass = TaskPass.objects.get(run=run)
    Trajectory.objects.create(task_pass=task_pass, steps=steps)
    assert trajectory_outline(task_pass.pk).asks == [0, 0, PAGE_STEPS + 2]

    client.force_login(author)
    url = reverse("evaluation-pass", args=[task_pass.pk])
    first = client.get(url).content.decode()
    assert re.findall(r'id="ask-(\d+)"', first) == ["1", "2"]
    assert f"matched <code>{DEMO_BLOCKERS[0]['key']}</code>" in first.split('id="ask-2"')[0]
    assert '<script id="ask-pages" type="application/json">[1, 1, 2]</script>' in first
    second = client.get(url + "?page=2").content.decode()
    assert re.findall(r'id="ask-(\d+)"', second) == ["3"]
    assert 'data-asks-before="2"' in second
    assert "irrelevant question</span>" in second.split('id="ask-3"')[1]


def test_every_command_of_a_terminus_2_turn_is_kept_so_each_ask_keeps_its_verdict(
    client, sql_task, lead, author, tmp_path
):
    """terminus-2 may type several commands in one turn (one ATIF step, several tool calls):
    ``cd /app`` then ``ask_human …``. Each call is a step of its own, so the ask is not lost
    and the next one does not take its verdict. A result naming its call goes with it; the
    terminal screen after the turn with the last call."""
    trigger = DEMO_BLOCKERS[0]["trigger_questions"][0]
    jobs = terminus_trial(
        tmp_path,
        source_id=sql_task.source_id,
        asks=[(trigger, DEMO_BLOCKERS[0]["resolution"]), (IRRELEVANT, "irrelevant question")],
        gold_sql=sql_task.sql_environment.gold_sql,
    )
    path = next(jobs.glob("*/*/agent/trajectory.json"))
    document = json.loads(path.read_text())
    turn = document["steps"][1]
    turn["tool_calls"].insert(
        0,
        {
            "tool_call_id": "call_1_0",
            "function_name": "bash_command",
            "arguments": {"keystrokes": "cd /app\n", "duration": 0.1},
        },
    )
    turn["observation"]["results"].insert(0, {"source_call_id": "call_1_0", "content": "moved"})
    path.write_text(json.dumps(document))
    call_command("import_results", str(jobs), project=sql_task.project.slug,
                 username=lead.username, wait=True)  # fmt: skip
    task_pass = TaskPass.objects.get(run__model_name="openai/standin")
    steps = task_pass.trajectory.steps
    assert [s["tool"] for s in steps] == [None, "bash_command", "bash_command", "bash_command",
                                          "bash_command", "mark_task_complete"]  # fmt: skip
    assert steps[1]["tool_output"] == "moved" and steps[1]["content"] == turn["message"]
    assert trigger in steps[2]["tool_output"] and steps[2]["content"] is None
    assert trajectory_outline(task_pass.pk).asks == [2, 3]

    client.force_login(author)
    html = client.get(reverse("evaluation-pass", args=[task_pass.pk])).content.decode()
    first = html.split('id="ask-1"')[1].split('id="ask-2"')[0]
    second = html.split('id="ask-2"')[1].split("</li>")[0]
    assert trigger in first and f"matched <code>{DEMO_BLOCKERS[0]['key']}</code>" in first
    assert IRRELEVANT in second and "irrelevant question</span>" in second
