"""The ask_human answer cap cannot be bypassed by starting new runs: rate limits per API
token and per task, and a cap on answers per task across one harness session's runs — each
named in the response when hit, and counted in the database so every web process sees them.
"""

import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from django.utils import timezone

from hilbench_annotate import services as core
from hilbench_annotate.services.tokens import api_token_create
from judge.models import AskHumanCall, AskHumanRun
from judge.services import ask_human, ask_human_run_start

from ..conftest import ROOT, worker_env
from ..factories import MembershipFactory, TaskFactory, UserFactory
from .test_ask_human_api import BLOCKERS

pytestmark = pytest.mark.django_db

# Trigger questions of the two blockers: the embedded judge matches each.
MATCHING = [
    "Which year is the boom year?",
    "Which status means settled cleanly?",
    "What dates bound the boom year?",
]


@pytest.fixture(autouse=True)
def _embedded_judge(settings):
    settings.JUDGE_BACKEND = "embedded"
    settings.ASK_HUMAN_ANSWER_CAP = 3


@pytest.fixture
def task(project, author):
    task = TaskFactory(project=project, author=author)
    for blocker in BLOCKERS:
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    return task


def token_client(api, user):
    _token, key = api_token_create(user=user, name="eval")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def start(api, task):
    return api.post("/api/ask_human/runs", {"task": task.pk, "label": "attack"}, format="json")


def ask(api, run, question):
    return api.post("/api/ask_human", {"run": run, "question": question}, format="json")


def answered(task) -> int:
    return AskHumanCall.objects.filter(run__task=task).exclude(blocker_key=None).count()


def test_forty_new_runs_of_one_task_no_longer_get_forty_times_three_answers(
    api, harness, task, settings
):
    harness_api = token_client(api, harness)
    refusals = []
    for _ in range(40):
        started = start(harness_api, task)
        if started.status_code != 201:
            refusals.append(started)
            continue
        for question in MATCHING:
            assert ask(harness_api, started.json()["run"], question).status_code == 200

    # Ten runs a minute per task: the eleventh and every later one is refused, naming it.
    assert AskHumanRun.objects.filter(task=task).count() == 10
    assert answered(task) == 30  # not 40 × 3 = 120
    assert len(refusals) == 30
    refused = refusals[0]
    assert refused.status_code == 429
    body = refused.json()
    assert body["limit"] == "run_rate_per_task"
    assert f"at most 10 new ask_human runs of task {task.pk} per 60 s" in body["detail"]
    assert 1 <= int(refused["Retry-After"]) <= 60 and body["retry_after"] == int(
        refused["Retry-After"]
    )

    # A minute later the rate allows new runs, but the session has had its 30 answers for
    # this task: a new run is refused with the cap's name, and no question is judged.
    AskHumanRun.objects.update(created_at=timezone.now() - timedelta(seconds=61))
    AskHumanCall.objects.update(created_at=timezone.now() - timedelta(seconds=61))
    capped = start(harness_api, task)
    assert capped.status_code == 403
    assert capped.json()["limit"] == "session_answer_cap"
    assert "Session cap reached" in capped.json()["detail"]
    assert "Retry-After" not in capped
    assert answered(task) == 30


def test_session_cap_spans_the_runs_of_one_token_and_refuses_by_name(
    api, harness, project, task, settings
):
    settings.ASK_HUMAN_RUN_RATE_PER_TASK = None
    settings.ASK_HUMAN_SESSION_ANSWER_CAP = 5
    harness_api = token_client(api, harness)
    first = start(harness_api, task).json()["run"]
    for question in MATCHING:
        assert ask(harness_api, first, question).json()["response"] != "irrelevant question"
    second = start(harness_api, task).json()["run"]
    assert ask(harness_api, second, MATCHING[0]).status_code == 200
    assert ask(harness_api, second, MATCHING[1]).status_code == 200

    refused = ask(harness_api, second, MATCHING[2])
    assert refused.status_code == 403
    assert refused.json()["limit"] == "session_answer_cap"
    assert f"runs of task {task.pk} have had 5 answered questions" in refused.json()["detail"]
    # The refused question is logged, as a call that matched nothing (Ask-F1 counts it).
    last = AskHumanCall.objects.filter(run_id=second).last()
    assert last.capped and last.blocker_key is None
    assert start(harness_api, task).json()["limit"] == "session_answer_cap"
    assert answered(task) == 5

    # The cap is per session: another harness's token still gets its answers.
    other = UserFactory(username="harness-2")
    MembershipFactory(project=project, user=other, role="harness")
    other_api = token_client(type(api)(), other)
    run = start(other_api, task).json()["run"]
    assert ask(other_api, run, MATCHING[0]).json()["response"] == "The boom year is 1997."


def test_token_rate_counts_runs_and_questions_and_says_when_to_retry(api, harness, task, settings):
    settings.ASK_HUMAN_RATE_PER_TOKEN = (4, 60)
    harness_api = token_client(api, harness)
    run = start(harness_api, task).json()["run"]
    for question in ("What is the weather like?", "Who won the match?", MATCHING[0]):
        assert ask(harness_api, run, question).status_code == 200

    refused = ask(harness_api, run, MATCHING[1])
    assert refused.status_code == 429
    assert refused.json()["limit"] == "rate_per_token"
    assert (
        "at most 4 ask_human requests (runs started and questions) per 60 s"
        in (refused.json()["detail"])
    )
    assert 1 <= int(refused["Retry-After"]) <= 60
    # The refused question is not judged, but logged as a call of the run (refused_by the
    # limit; Ask-F1 counts it as an irrelevant question: test_ask_human_refused.py).
    calls = AskHumanCall.objects.filter(run_id=run)
    assert calls.count() == 4 and calls.filter(refused_by="rate_per_token").count() == 1
    assert start(harness_api, task).status_code == 429

    # Retry-After is when the oldest counted request leaves the window.
    oldest = timezone.now() - timedelta(seconds=50)
    AskHumanRun.objects.filter(pk=run).update(created_at=oldest)
    again = ask(harness_api, run, MATCHING[1])
    assert again.status_code == 429 and 8 <= int(again["Retry-After"]) <= 10
    AskHumanRun.objects.filter(pk=run).update(created_at=oldest - timedelta(seconds=11))
    assert ask(harness_api, run, MATCHING[1]).json()["response"].startswith("Clean")


def test_mcp_says_which_limit_was_hit(api, harness, task, settings):
    settings.ASK_HUMAN_RUN_RATE_PER_TASK = (1, 60)
    harness_api = token_client(api, harness)

    def call(name, arguments):
        message = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return harness_api.post("/api/mcp", message, format="json")

    run = int(call("start_ask_human_run", {"task": task.pk}).json()["result"]["content"][0]["text"])
    limited = call("start_ask_human_run", {"task": task.pk})
    assert limited.status_code == 429 and 1 <= int(limited["Retry-After"]) <= 60
    error = limited.json()["error"]
    assert (
        error["data"]["limit"] == "run_rate_per_task" and "Rate limit reached" in error["message"]
    )

    settings.ASK_HUMAN_SESSION_ANSWER_CAP = 1
    assert (
        call("ask_human", {"run": run, "question": MATCHING[0]}).json()["result"]["isError"]
        is False
    )
    capped = call("ask_human", {"run": run, "question": MATCHING[1]}).json()["result"]
    assert capped["isError"] is True
    assert capped["content"][0]["text"].startswith("Session cap reached")


def test_runs_the_app_starts_itself_are_not_limited(lead, task, settings):
    """The built-in runner and imported results start runs with no harness session: their
    evaluation run bounds their passes, not these limits."""
    settings.ASK_HUMAN_SESSION_ANSWER_CAP = 3
    for _ in range(12):
        run = ask_human_run_start(task=task, actor=lead, label="built-in pass")
        assert ask_human(run=run, actor=lead, question=MATCHING[0]).blocker_key == "boom_year"
    assert answered(task) == 12


@pytest.mark.django_db(transaction=True)
def test_limits_hold_across_web_processes(api, harness, task):
    """Ten runs started by another process (its own Django, its own connections, as another
    gunicorn worker would be) count here: the eleventh, in this process, is refused."""
    _token, key = api_token_create(user=harness, name="eval")
    script = textwrap.dedent(
        f"""
        import django
        django.setup()
        from django.test import Client
        client = Client(HTTP_AUTHORIZATION="Bearer {key}")
        for _ in range(10):
            r = client.post("/api/ask_human/runs", {{"task": {task.pk}}},
                            content_type="application/json")
            assert r.status_code == 201, r.content
        """
    )
    env = worker_env("memory://")
    env["DJANGO_SETTINGS_MODULE"] = "hilbench_annotate.settings"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert AskHumanRun.objects.filter(task=task).count() == 10

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    refused = start(api, task)
    assert refused.status_code == 429 and refused.json()["limit"] == "run_rate_per_task"
