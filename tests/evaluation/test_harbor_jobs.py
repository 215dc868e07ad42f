"""Harbor's jobs folder read as passes (``evaluation/harbor_jobs.py``): the layout Harbor 0.25
writes (a job folder with its own result.json and job.log, one folder per trial with
config.json, result.json and the collected artifacts). Real trials are read in
``tests/exchange/test_harbor_trials.py``; here the edge cases, on folders the test writes."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation.harbor_jobs import parse_harbor_jobs
from evaluation.models import EvaluationRun, TaskPass
from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate.errors import ImportRefused
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def _trial(job: Path, name: str, *, task_folder: Path, mode: str, started: str, **result):
    trial = job / name
    trial.mkdir(parents=True)
    (trial / "config.json").write_text("{}")
    (trial / "trial.log").write_text("")
    document = {
        "trial_name": name,
        "task_name": f"hilbench-annotate/{task_folder.name}-{mode}",
        "task_id": {"path": str(task_folder / mode)},
        "agent_info": {"name": "hilbench-ask-then-oracle", "version": "1", "model_info": None},
        "started_at": started,
        "finished_at": started,
        "exception_info": None,
        "verifier_result": {"rewards": {"reward": 1.0}},
        **result,
    }
    (trial / "result.json").write_text(json.dumps(document))
    return trial


def _bundle_task(root: Path, folder: str, source_id: str) -> Path:
    task_folder = root / folder
    (task_folder / "annotate").mkdir(parents=True)
    (task_folder / "annotate" / "task.json").write_text(json.dumps({"source_id": source_id}))
    return task_folder


def _jobs(tmp_path, task_folder):
    job = tmp_path / "jobs" / "2026-12-02__10-00-00"
    job.mkdir(parents=True)
    (job / "config.json").write_text("{}")
    (job / "job.log").write_text("")
    (job / "result.json").write_text(json.dumps({"id": "job", "stats": {}}))
    asked = _trial(job, "ask_human__a", task_folder=task_folder, mode="ask_human",
                   started="2026-12-02T10:00:02Z")  # fmt: skip
    log = asked / "artifacts" / "harbor_shared" / "ask_human_metrics.json"
    log.parent.mkdir(parents=True)
    log.write_text(json.dumps({"questions": [
        {"question": "Which rows count?", "response": "…", "blocker_name": "x"},
        {"question": "What is the capital of France?", "response": "irrelevant question",
         "blocker_name": None},
    ]}))  # fmt: skip
    _trial(job, "ask_human__b", task_folder=task_folder, mode="ask_human",
           started="2026-12-02T10:00:01Z",
           verifier_result={"rewards": {"reward": 0.0}})  # fmt: skip
    stopped = {"exception_type": "MissingData", "exception_message": "fetch"}
    _trial(job, "full_info__c", task_folder=task_folder, mode="full_info",
           started="2026-12-02T10:00:03Z", verifier_result=None,
           exception_info=stopped)  # fmt: skip
    return tmp_path / "jobs"


def test_each_finished_trial_is_a_pass_numbered_in_start_order_with_its_ask_log(tmp_path):
    task = TaskFactory(source_id="retail_bank/4")
    folder = _bundle_task(tmp_path / "bundle", "sql_0", "retail_bank/4")
    trials = parse_harbor_jobs(
        _jobs(tmp_path, folder), lambda ref: task.pk if ref == "retail_bank/4" else None
    )
    [(model, records)] = trials.by_model.items()
    assert model == "hilbench-ask-then-oracle"
    assert [(r.mode, r.index, r.resolved, len(r.questions)) for r in records] == [
        ("ask_human", 1, False, 0),  # started first
        ("ask_human", 2, True, 2),
    ]
    assert records[1].questions[1]["text"] == "What is the capital of France?"
    why = "the environment, the verifier or the harness failed (the release's infra_error)"
    assert trials.skipped == [("full_info__c", f"stopped by MissingData, no reward: {why}")]
    [(_, [excluded])] = trials.excluded.items()
    assert (excluded.trial, excluded.reason, excluded.exception, excluded.reward) == (
        "full_info__c", "infra_error", "MissingData", None,
    )  # fmt: skip


def test_a_trial_of_a_task_the_project_lacks_refuses_the_import_naming_it(tmp_path):
    folder = _bundle_task(tmp_path / "bundle", "sql_0", "nowhere/1")
    with pytest.raises(ImportRefused) as refused:
        parse_harbor_jobs(_jobs(tmp_path, folder), lambda ref: None)
    assert "ask_human__a" in str(refused.value.problems)
    assert "the project has no task 'nowhere/1'" in str(refused.value.problems)


def test_import_results_stores_the_trials_and_judges_the_ask_log(sql_task, lead, tmp_path):
    """The app judges the ask log's questions itself: a registered trigger question resolves
    its blocker, the unrelated one nothing; Ask-F1 as computed by hand."""
    from evaluation.selectors import mode_summary, project_passes

    folder = _bundle_task(tmp_path / "bundle", "sql_0", sql_task.source_id)
    jobs = _jobs(tmp_path, folder)
    log = next(jobs.glob("*/ask_human__a/artifacts/harbor_shared/ask_human_metrics.json"))
    trigger = DEMO_BLOCKERS[0]["trigger_questions"][0]
    document = json.loads(log.read_text())
    document["questions"][0]["question"] = trigger
    log.write_text(json.dumps(document))
    call_command("import_results", str(jobs), project=sql_task.project.slug,
                 username=lead.username, wait=True)  # fmt: skip
    run = EvaluationRun.objects.get(project=sql_task.project, model_name="hilbench-ask-then-oracle")
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error
    passes = TaskPass.objects.filter(run=run).order_by("index")
    assert [(p.mode, p.index, p.resolved) for p in passes] == [
        ("ask_human", 1, False),
        ("ask_human", 2, True),
    ]
    rows = [
        r for r in project_passes(project=sql_task.project) if r.run_id == run.pk and r.index == 2
    ]
    blockers = len(DEMO_BLOCKERS)
    precision, recall = 1 / 2, 1 / blockers
    assert mode_summary(rows=rows)["ask_f1"] == pytest.approx(
        2 * precision * recall / (precision + recall)
    )


def _one_trial(tmp_path, task, **result):
    folder = _bundle_task(tmp_path / "bundle", "sql_0", "retail_bank/4")
    job = tmp_path / "jobs" / "2026-12-02__10-00-00"
    job.mkdir(parents=True)
    (job / "job.log").write_text("")
    trial = _trial(job, "ask_human__z", task_folder=folder, mode="ask_human",
                   started="2026-12-02T10:00:02Z", **result)  # fmt: skip
    return tmp_path / "jobs", trial


def _read(jobs, task):
    return parse_harbor_jobs(jobs, lambda ref: task.pk if ref == "retail_bank/4" else None)


def test_an_ask_log_the_agent_left_among_its_own_artifacts_is_not_read(tmp_path):
    """Only the sidecar's log (artifacts/harbor_shared/, collected from its container) is
    read; a copy the agent publishes (artifacts/logs/artifacts/…) claims nothing."""
    task = TaskFactory(source_id="retail_bank/4")
    jobs, trial = _one_trial(tmp_path, task)
    forged = trial / "artifacts" / "logs" / "artifacts" / "harbor_shared" / "ask_human_metrics.json"
    forged.parent.mkdir(parents=True)
    forged.write_text(json.dumps({"questions": [{"question": "Which rows count?"}]}))
    [(_, [record])] = _read(jobs, task).by_model.items()
    assert record.questions == []


@pytest.mark.parametrize(
    ("relative", "content"),
    [
        ("agent/trajectory.json", '{"steps": 7}'),
        ("agent/trajectory.json", '{"steps": [{"observation": 5, "tool_calls": 3}]}'),
        ("agent/steps.json", "[" * 100_000),
        ("artifacts/harbor_shared/ask_human_metrics.json", '{"questions": 5}'),
    ],
)
def test_whatever_shape_a_trial_left_it_is_reported_never_raised(tmp_path, relative, content):
    """Task code wrote these files: a shape the reader does not expect makes the trial a
    problem named in the report (or a pass without what could not be read), never an
    exception that would end the run and leave the other trials unread."""
    task = TaskFactory(source_id="retail_bank/4")
    jobs, trial = _one_trial(tmp_path, task)
    (trial / relative).parent.mkdir(parents=True, exist_ok=True)
    (trial / relative).write_text(content)
    try:
        trials = _read(jobs, task)
    except ImportRefused as refused:
        assert "ask_human__z" in str(refused.problems)
        return
    [(_, [record])] = trials.by_model.items()
    assert record.trajectory is None or all(isinstance(s, dict) for s in record.trajectory)
