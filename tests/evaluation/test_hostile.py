"""What the review of the evaluation code found: hostile or odd input gets a clear refusal,
never a crash, and jobs are recovered."""

import json
import math
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import EvaluationRun, SupportStudy
from evaluation.services import (
    endpoint_create,
    evaluation_run_start,
    results_import_start,
    support_study_execute,
    support_study_start,
)
from evaluation.support import verbalised_probability, yes_probability
from evaluation.trajectories import TrajectoryError, find_trajectory, parse_trajectory_text
from evaluation.viewer import csv_safe
from hilbench_annotate.errors import ImportRefused

from .conftest import text_reply


def test_a_results_csv_that_is_not_utf8_is_refused(sql_task, lead, tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "pass_level_metrics.csv").write_bytes(
        "model,task,mode,pass,resolved\nmodèle,1,baseline,1,1\n".encode("latin-1")
    )
    with pytest.raises(ImportRefused, match="pass_level_metrics.csv is not UTF-8 text"):
        results_import_start(project=sql_task.project, actor=lead, path=root)


def test_names_from_the_csv_cannot_leave_the_folder(tmp_path):
    secret = tmp_path / "secret" / "pass_1_trajectory.json"
    secret.parent.mkdir()
    secret.write_text("[]")
    base = tmp_path / "results"
    (base / "trajectories" / "baseline").mkdir(parents=True)
    found = find_trajectory(base, mode="baseline", model="../../..", task="secret", index=1)
    assert found is None


def test_trajectories_refuse_what_the_database_would(tmp_path):
    with pytest.raises(TrajectoryError, match="NaN is not a JSON number"):
        parse_trajectory_text('[{"role": "user", "time": NaN}]', name="t.json", jsonl=False)
    with pytest.raises(TrajectoryError, match=r"t\.jsonl line 2: a NUL character"):
        parse_trajectory_text('{"role": "a"}\n{"role": "b\\u0000"}', name="t.jsonl", jsonl=True)


def test_token_counts_are_bounded(sql_task, lead, tmp_path):
    path = tmp_path / "r.jsonl"
    line = {"task": sql_task.pk, "mode": "baseline", "pass": 1, "resolved": True, "tokens": 3e9}
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ImportRefused, match="line 1: tokens must be a number from 0 to"):
        results_import_start(project=sql_task.project, actor=lead, path=path, model_name="m")


def test_duplicate_modes_do_not_break_progress(sql_task, lead, chat_server):
    endpoint = endpoint_create(
        project=sql_task.project, actor=lead, name="e", base_url=chat_server.url, model="m"
    )
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["baseline", "baseline"],
        passes=3,
    )
    assert run.modes == ["baseline"] and run.total == 3


def test_log_probabilities_that_are_not_numbers_are_ignored():
    content = [
        {
            "token": "Yes",
            "top_logprobs": [
                "junk",
                {"token": "Yes", "logprob": 1e308},  # not a log-probability: capped at 0
                {"token": "No", "logprob": math.log(0.5)},
                {"token": "No", "logprob": "x"},
            ],
        }
    ]
    assert yes_probability({"content": content}) == pytest.approx(1 / 1.5)
    assert verbalised_probability("1.5") is None


def test_csv_cells_never_start_a_formula():
    assert csv_safe("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_safe("@SUM(A1)") == "'@SUM(A1)"
    assert csv_safe("gpt-x") == "gpt-x" and csv_safe(0.5) == 0.5


def test_a_study_whose_worker_died_is_taken_over(sql_task, lead, chat_server, settings):
    endpoint = endpoint_create(
        project=sql_task.project, actor=lead, name="e", base_url=chat_server.url, model="m"
    )
    study = support_study_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        method="direct_ask",
        task_ids=[sql_task.pk],
    )
    # A worker claimed it and died before storing anything.
    SupportStudy.objects.filter(pk=study.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(hours=2)
    )
    chat_server.script = [text_reply(t) for t in ("SELECT 1", "SELECT 1", "Yes", "0.9")]
    support_study_execute(study_id=study.pk)
    study.refresh_from_db()
    assert study.status == "succeeded" and study.records.count() == 1
    assert EvaluationRun.objects.count() == 0
