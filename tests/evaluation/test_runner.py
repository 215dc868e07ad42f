"""The built-in SQL runner against a scripted OpenAI-compatible server on loopback."""

import pytest

from evaluation.models import EvaluationRun, TaskPass
from evaluation.selectors import ask_human_run_reward, leaderboard
from evaluation.services import endpoint_create, evaluation_run_execute, evaluation_run_start
from hilbench_annotate.errors import AccessDenied, DomainError
from judge.base import IRRELEVANT

from .conftest import text_reply, tool_call

TROUBLED = "Which loan status values count as a troubled loan?"
OFF_TASK = "What is the capital of France?"


@pytest.fixture
def endpoint(project, lead, chat_server):
    return endpoint_create(
        project=project,
        actor=lead,
        name="scripted",
        base_url=chat_server.url,
        model="scripted-1",
        timeout_s=0.5,
        max_turns=6,
    )


def test_runner_scores_passes_and_logs_ask_human(sql_task, lead, endpoint, chat_server):
    gold = sql_task.sql_environment.gold_sql
    chat_server.script = [
        # baseline pass 1: looks at the data, submits the gold query -> resolved
        tool_call("execute_sql", {"query": "SELECT count(*) FROM loan"}),
        tool_call("submit_sql", {"query": gold}),
        # baseline pass 2: prose instead of a tool, then broken JSON, then a wrong answer
        text_reply("I think the answer is Smith."),
        tool_call("execute_sql", "{not json"),
        tool_call("submit_sql", {"query": "SELECT 1"}),
        # ask_human pass 1: a targeted question, the same again, an off-task one, then gold
        tool_call("ask_human", {"question": TROUBLED}),
        tool_call("ask_human", {"question": TROUBLED}),
        tool_call("ask_human", {"question": OFF_TASK}),
        tool_call("submit_sql", {"query": gold}),
        # ask_human pass 2: the endpoint does not answer within the timeout
        ("sleep", 1.5),
    ]
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["baseline", "ask_human"],
        passes=2,
    )
    evaluation_run_execute(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.SUCCEEDED and run.done == run.total == 4
    passes = {(p.mode, p.index): p for p in TaskPass.objects.filter(run=run)}
    assert passes["baseline", 1].resolved is True
    assert passes["baseline", 1].detail["score"]["match"] is True
    assert passes["baseline", 2].resolved is False
    assert passes["baseline", 2].detail["malformed"] == 2
    assert passes["baseline", 2].final_sql == "SELECT 1"
    assert passes["ask_human", 1].resolved is True
    timed_out = passes["ask_human", 2]
    assert timed_out.resolved is False and "did not answer within 0.5 s" in timed_out.error

    # The model saw the release's instruction text and only its mode's tools.
    first = chat_server.requests[0]
    assert "# Available Commands" in first["messages"][1]["content"]
    assert "ask_human" not in {t["function"]["name"] for t in first["tools"]}
    asking = chat_server.requests[5]
    assert "ask_human" in {t["function"]["name"] for t in asking["tools"]}
    # The judge answered the targeted question with the resolution, verbatim.
    answer = chat_server.requests[6]["messages"][-1]
    assert answer["role"] == "tool" and answer["content"].startswith("Troubled loans are")
    assert chat_server.requests[8]["messages"][-1]["content"] == IRRELEVANT

    calls = list(passes["ask_human", 1].ask_human_run.calls.values_list("blocker_key", "duplicate"))
    assert calls == [
        ("troubled_loan_definition", False),
        ("troubled_loan_definition", True),
        (None, False),
    ]

    # Hand-computed: ask_human passes [T, T, None] and [] on 3 blockers each (micro):
    # precision 1/3, recall 1/6, F1 2/9; 1.5 questions per pass; 1 duplicate in 3 calls.
    rows = {row["mode"]: row for row in leaderboard(project=sql_task.project)}
    # baseline [T, F]: pass@1 whether the first pass solved it (the release's), pass@2
    # whether either did; the unbiased pass@1 is the mean over passes (0.5).
    assert rows["baseline"]["pass_at_1"] == 1.0 and rows["baseline"]["pass_at_2"] == 1.0
    assert rows["baseline"]["pass_at_1_unbiased"] == 0.5
    assert rows["baseline"]["pass_at_3"] is None  # only 2 passes
    asked = rows["ask_human"]
    assert asked["ask_precision"] == pytest.approx(1 / 3)
    assert asked["ask_recall"] == pytest.approx(1 / 6)
    assert asked["ask_f1"] == pytest.approx(2 / 9)
    assert asked["questions_per_pass"] == pytest.approx(1.5)
    assert asked["duplicate_rate"] == pytest.approx(1 / 3)
    # +0.3 - 0.1 - 0.1 + 1/3 coverage for pass 1; 0 for pass 2.
    assert asked["reward_mean"] == pytest.approx((0.1 + 1 / 3) / 2)
    reward = ask_human_run_reward(ask_run=passes["ask_human", 1].ask_human_run)
    assert reward["reward"] == pytest.approx(0.1 + 1 / 3)
    assert reward["discovered"] == ["troubled_loan_definition"]


def test_a_redelivered_run_does_not_run_again(sql_task, lead, endpoint, chat_server):
    chat_server.script = [tool_call("submit_sql", {"query": "SELECT 1"})]
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["baseline"],
        passes=1,
    )
    evaluation_run_execute(run_id=run.pk)
    evaluation_run_execute(run_id=run.pk)
    assert TaskPass.objects.filter(run=run).count() == 1
    assert len(chat_server.requests) == 1


def test_endpoint_failure_after_retries_fails_the_pass_not_the_run(
    sql_task, lead, endpoint, chat_server
):
    chat_server.script = [("status", 503)] * 3
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["full_info"],
        passes=1,
    )
    evaluation_run_execute(run_id=run.pk)
    task_pass = TaskPass.objects.get(run=run)
    assert task_pass.resolved is False
    assert "failed 3 times" in task_pass.error and "503" in task_pass.error
    # full_info: the resolutions are in the instruction the model saw.
    assert "Troubled loans are loans with" in chat_server.requests[0]["messages"][1]["content"]


def test_only_a_lead_starts_runs_and_only_on_sql_tasks(sql_task, author, lead, endpoint):
    with pytest.raises(AccessDenied):
        evaluation_run_start(
            project=sql_task.project,
            actor=author,
            endpoint=endpoint,
            task_ids=[sql_task.pk],
            modes=["baseline"],
        )
    with pytest.raises(DomainError, match="no task"):
        evaluation_run_start(
            project=sql_task.project,
            actor=lead,
            endpoint=endpoint,
            task_ids=[sql_task.pk + 999],
            modes=["baseline"],
        )
    with pytest.raises(DomainError, match="Modes must be"):
        evaluation_run_start(
            project=sql_task.project,
            actor=lead,
            endpoint=endpoint,
            task_ids=[sql_task.pk],
            modes=["oracle"],
        )


def test_endpoint_keys_come_only_from_model_key_variables(project, lead, settings):
    # A lead must not be able to have the workers send the server's secrets elsewhere.
    for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "JUDGE_LLM_API_KEY", "HILBENCH_MODEL_KEY_$X"):
        with pytest.raises(DomainError, match="starts with HILBENCH_MODEL_KEY_"):
            endpoint_create(
                project=project,
                actor=lead,
                name=name,
                base_url="http://h/v1",
                model="m",
                api_key_env=name,
            )
    settings.MODEL_ENDPOINT_HOSTS = ["gpu-1.internal"]
    with pytest.raises(DomainError, match="not an allowed model endpoint host"):
        endpoint_create(
            project=project, actor=lead, name="x", base_url="http://169.254.169.254/v1", model="m"
        )
    endpoint = endpoint_create(
        project=project,
        actor=lead,
        name="ok",
        base_url="https://gpu-1.internal/v1",
        model="m",
        api_key_env="HILBENCH_MODEL_KEY_GPU1",
    )
    assert endpoint.client().api_key_env == "HILBENCH_MODEL_KEY_GPU1"


def test_unreadable_ask_human_calls_are_logged_and_count(sql_task, lead, endpoint, chat_server):
    gold = sql_task.sql_environment.gold_sql
    chat_server.script = [
        tool_call("ask_human", "{broken"),  # not JSON
        tool_call("ask_human", {"q": TROUBLED}),  # wrong argument name
        tool_call("ask_human", {"question": "   "}),  # empty
        tool_call("ask_human", {"question": TROUBLED}),
        tool_call("submit_sql", {"query": gold}),
    ]
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["ask_human"],
        passes=1,
    )
    evaluation_run_execute(run_id=run.pk)
    task_pass = TaskPass.objects.get(run=run)
    calls = list(task_pass.ask_human_run.calls.order_by("id").values_list("blocker_key", "error"))
    assert [key for key, _ in calls] == [None, None, None, "troubled_loan_definition"]
    assert all(error.startswith("rejected:") for _, error in calls[:3])
    # Release Ask-F1: 1 distinct blocker over 4 calls; the viewer pairs the 4th step with it.
    (row,) = [r for r in leaderboard(project=sql_task.project) if r["mode"] == "ask_human"]
    assert row["ask_precision"] == pytest.approx(1 / 4)
    steps = [s for s in task_pass.trajectory.steps if s.get("tool") == "ask_human"]
    assert len(steps) == 4
