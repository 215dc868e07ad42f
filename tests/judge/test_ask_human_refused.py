"""ask_human calls refused by a limit are calls of the run (issue 43).

The release has no rate limit: every question an agent sends is logged, and one that gets no
resolution is an irrelevant question in Ask-F1's denominator. A question the app's rate limit
refuses (HTTP 429 from the REST API or the MCP endpoint) is logged the same way — marked with
the limit that refused it — and scored as that irrelevant question; it is no request served,
so it does not hold the caller back longer than the Retry-After it was told.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation import metrics
from evaluation.selectors import ask_human_run_reward
from hilbench_annotate import services as core
from judge.limits import RATE_PER_TOKEN, rate_per_token_check
from judge.models import AskHumanCall, AskHumanRun

from ..factories import TaskFactory
from .test_ask_human_api import BLOCKERS
from .test_ask_human_limits import MATCHING, ask, start, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _embedded_judge(settings):
    settings.JUDGE_BACKEND = "embedded"
    settings.ASK_HUMAN_ANSWER_CAP = 3
    settings.ASK_HUMAN_RATE_PER_TOKEN = (3, 60)  # a run and two questions


@pytest.fixture
def task(project, author):
    task = TaskFactory(project=project, author=author)
    for blocker in BLOCKERS:
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    return task


def _mcp(api, name, arguments):
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return api.post("/api/mcp", message, format="json")


def test_a_question_refused_with_429_is_logged_and_scored_as_an_irrelevant_one(api, harness, task):
    harness_api = token_client(api, harness)
    run = start(harness_api, task).json()["run"]
    assert ask(harness_api, run, MATCHING[0]).status_code == 200
    assert ask(harness_api, run, MATCHING[1]).status_code == 200
    refused = ask(harness_api, run, MATCHING[2])
    assert refused.status_code == 429 and refused.json()["limit"] == RATE_PER_TOKEN

    calls = list(AskHumanCall.objects.filter(run_id=run).order_by("id"))
    assert len(calls) == 3
    last = calls[-1]
    assert (last.question, last.blocker_key, last.refused_by) == (MATCHING[2], None, RATE_PER_TOKEN)
    assert "Rate limit reached" in last.reason and not last.capped
    # Ask-F1 as the evaluation computes it for this run: three calls, two blockers matched —
    # exactly what the same run scores with an irrelevant third question.
    scored = ask_human_run_reward(ask_run=AskHumanRun.objects.get(pk=run))
    irrelevant = metrics.ask_score(["boom_year", "clean_status", None], blocker_count=2)
    assert scored["ask_precision"] == pytest.approx(irrelevant.precision) == pytest.approx(2 / 3)
    assert scored["ask_f1"] == pytest.approx(irrelevant.f1)


def test_the_mcp_endpoint_logs_the_refused_question_too(api, harness, task):
    harness_api = token_client(api, harness)
    run = int(
        _mcp(harness_api, "start_ask_human_run", {"task": task.pk}).json()["result"]["content"][0][
            "text"
        ]
    )
    for question in ("What is the weather like?", MATCHING[0]):
        assert _mcp(harness_api, "ask_human", {"run": run, "question": question}).status_code == 200
    refused = _mcp(harness_api, "ask_human", {"run": run, "question": MATCHING[1]})
    assert refused.status_code == 429
    assert refused.json()["error"]["data"]["limit"] == RATE_PER_TOKEN
    last = AskHumanCall.objects.filter(run_id=run).last()
    assert (last.question, last.refused_by, last.blocker_key) == (MATCHING[1], RATE_PER_TOKEN, None)
    scored = ask_human_run_reward(ask_run=AskHumanRun.objects.get(pk=run))
    assert scored["ask_precision"] == pytest.approx(1 / 3)


def test_refused_questions_do_not_extend_the_wait_they_were_told(api, harness, task):
    """The window counts requests served: a caller that retries early is refused (and each
    refusal logged), but once the Retry-After it was told has passed, it is answered."""
    harness_api = token_client(api, harness)
    run = start(harness_api, task).json()["run"]
    ask(harness_api, run, "What is the weather like?")
    ask(harness_api, run, "Who won the match?")
    for _ in range(5):
        assert ask(harness_api, run, MATCHING[0]).status_code == 429
    assert AskHumanCall.objects.filter(run_id=run, refused_by=RATE_PER_TOKEN).count() == 5
    # The three requests served leave the window: the five refusals do not hold it shut.
    earlier = timezone.now() - timedelta(seconds=61)
    AskHumanRun.objects.filter(pk=run).update(created_at=earlier)
    AskHumanCall.objects.filter(run_id=run).exclude(refused_by=RATE_PER_TOKEN).update(
        created_at=earlier
    )
    rate_per_token_check(AskHumanRun.objects.get(pk=run).session)  # not raised
    assert ask(harness_api, run, MATCHING[0]).json()["response"] == "The boom year is 1997."
    # Every call of the run is scored: 8 calls, one blocker matched.
    scored = ask_human_run_reward(ask_run=AskHumanRun.objects.get(pk=run))
    assert scored["ask_precision"] == pytest.approx(1 / 8)


def test_older_capped_calls_are_named_by_the_migration(lead, task):
    """Calls the caps refused before ``refused_by`` existed get its name from their reason."""
    from importlib import import_module

    from django.apps import apps as django_apps

    from judge.services import ask_human_run_start

    migration = import_module("judge.migrations.0009_issue43_style_refused_by")
    run = ask_human_run_start(task=task, actor=lead)
    for reason in ("answer cap of 3 reached", "Session cap reached: this API token's runs …"):
        AskHumanCall.objects.create(run=run, question="Q?", capped=True, reason=reason)
    AskHumanCall.objects.create(run=run, question="Q?", blocker_key=None)
    migration.name_the_caps(django_apps, None)
    assert list(AskHumanCall.objects.order_by("id").values_list("refused_by", flat=True)) == [
        "run_answer_cap",
        "session_answer_cap",
        "",
    ]
