"""The support-seeking study's runner against a scripted endpoint on loopback."""

import math

import pytest

from evaluation.models import SupportRecord
from evaluation.services import endpoint_create, support_study_execute, support_study_start

from .conftest import text_reply


@pytest.fixture
def endpoint(project, lead, chat_server):
    return endpoint_create(
        project=project, actor=lead, name="scripted", base_url=chat_server.url, model="s"
    )


def _study(sql_task, lead, endpoint, method):
    study = support_study_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        method=method,
        task_ids=[sql_task.pk],
    )
    support_study_execute(study_id=study.pk)
    study.refresh_from_db()
    return study


def test_execute_then_ask_with_logprobs(sql_task, lead, endpoint, chat_server):
    gold = sql_task.sql_environment.gold_sql
    top = [
        {"token": "Yes", "logprob": math.log(0.6)},
        {"token": "No", "logprob": math.log(0.2)},
        {"token": "Maybe", "logprob": math.log(0.2)},
    ]
    chat_server.script = [
        text_reply("```sql\nSELECT 1\n```"),  # without hints: wrong
        text_reply(f"```sql\n{gold}\n```"),  # with the resolutions as hints: right
        text_reply("Yes", logprobs={"content": [{"token": "Yes", "top_logprobs": top}]}),
    ]
    study = _study(sql_task, lead, endpoint, "execute_then_ask")
    assert study.status == "succeeded" and study.error == ""
    record = SupportRecord.objects.get(study=study)
    assert record.score == pytest.approx(0.75)  # 0.6 / (0.6 + 0.2)
    assert record.score_source == "logprobs"
    assert (record.correct, record.correct_with_support) == (False, True)
    hinted = chat_server.requests[1]["messages"][0]["content"]
    assert "Hints:" in hinted and "Troubled loans are loans with" in hinted
    asked = chat_server.requests[2]
    assert asked["logprobs"] is True and asked["max_tokens"] == 1
    prompt = asked["messages"][0]["content"]
    assert "SQL execution results: " in prompt and "Generated SQL: SELECT 1" in prompt


def test_direct_ask_falls_back_to_a_verbalised_probability(sql_task, lead, endpoint, chat_server):
    chat_server.script = [
        text_reply("SELECT 1"),
        text_reply("SELECT 2"),
        text_reply("Yes"),  # no log-probabilities returned
        text_reply("0.25000"),
    ]
    study = _study(sql_task, lead, endpoint, "direct_ask")
    record = SupportRecord.objects.get(study=study)
    assert record.score == 0.25 and record.score_source == "verbalised"
    prompt = chat_server.requests[3]["messages"][0]["content"]
    assert "Generated SQL" not in prompt and "precise probability" in prompt


def test_a_model_that_gives_no_score_is_recorded_as_a_failure(
    sql_task, lead, endpoint, chat_server
):
    chat_server.script = [
        text_reply("SELECT 1"),
        text_reply("SELECT 1"),
        text_reply("Yes"),
        text_reply("no idea"),
    ]
    study = _study(sql_task, lead, endpoint, "write_then_ask")
    assert not SupportRecord.objects.filter(study=study).exists()
    assert f"task {sql_task.pk}: the model gave neither log-probabilities" in study.error
