"""Harbor trials that ended in an exception, counted as the HiL-Bench release counts them
(issue 44, item 6; ``evaluation/tries.py``). Harbor still runs the verifier after
``AgentTimeoutError`` and ``NonZeroAgentExitCodeError``: a trial that ran out of time is a
pass scored on what it left (the release scores SWE-agent's "Exit due to total execution
time exceeded" submission), one whose agent process failed is left out (the release's
"Exit due to unknown error", re-run), as is one whose environment or verifier failed (the
release's ``infra_error``). A try left out is stored with why, and the leaderboard, the run's
page and ``import_results`` say how many and why. A run taken over by another worker asks
Harbor for exactly the tries the first worker would have: never a second draw of a try left
out. The trial folders are written here as Harbor writes them; Harbor itself does not run."""

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from evaluation.models import EvaluationRun, ExcludedTry, TaskPass
from evaluation.selectors import leaderboard
from evaluation.services import evaluation_run_execute, harbor_run_start
from evaluation.services.common import task_resolver
from evaluation.tries import trial_outcome
from exchange.services import harbor_runs
from hilbench_annotate.selectors import revision_current

pytestmark = pytest.mark.django_db
MODEL = {"name": "standin", "provider": "openai"}
AGENT_FAILED = {
    "exception_type": "NonZeroAgentExitCodeError",
    "exception_message": "Agent command exited with code 1",
}
TIMED_OUT = {
    "exception_type": "AgentTimeoutError",
    "exception_message": "Agent execution timed out after 600.0 seconds",
}
NO_ENVIRONMENT = {
    "exception_type": "EnvironmentStartTimeoutError",
    "exception_message": "Environment failed to start within 300 seconds",
}


def bundle_task(root: Path, task) -> Path:
    """An exported task folder: its source id and the revision it was exported from."""
    folder = root / "sql_0"
    (folder / "annotate").mkdir(parents=True)
    (folder / "provenance").mkdir()
    (folder / "annotate" / "task.json").write_text(json.dumps({"source_id": task.source_id}))
    revision = revision_current(task=task).number
    (folder / "provenance" / "validation.json").write_text(json.dumps({"revision": revision}))
    return folder


def harbor_trial(job: Path, name: str, folder: Path, mode: str, started: str, *, reward,
                 exception=None, model=MODEL) -> Path:  # fmt: skip
    """A trial folder as Harbor 0.25 leaves it: config.json, result.json (``exception_info``
    and the verifier's reward after an agent exception, as its Trial writes them) and
    exception.txt when the trial raised."""
    trial = job / name
    trial.mkdir(parents=True)
    (trial / "config.json").write_text(json.dumps({"task": {"path": str(folder / mode)}}))
    info = None
    if exception:
        info = {**exception, "exception_traceback": "Traceback …", "occurred_at": started}
        (trial / "exception.txt").write_text(exception["exception_message"])
    result = {
        "id": f"id-{name}",
        "task_name": f"{folder.name}__{mode}",
        "trial_name": name,
        "trial_uri": f"file://{trial}",
        "task_id": {"path": str(folder / mode)},
        "source": None,
        "task_checksum": "0" * 64,
        "agent_info": {"name": "terminus-2", "version": "2.0.0", "model_info": model},
        "agent_result": {"n_input_tokens": 900, "n_output_tokens": 80, "metadata": {}},
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": info,
        "started_at": started,
        "finished_at": started.replace(":00Z", ":50Z"),
    }
    (trial / "result.json").write_text(json.dumps(result))
    return trial


def jobs_folder(root: Path, folder: Path, tries) -> Path:
    """A ``harbor run -o`` folder: one job with its own result.json and log, then ``tries``
    ((name, mode, reward, exception)) in the order they started."""
    job = root / "jobs" / "2026-12-02__10-00-00"
    job.mkdir(parents=True)
    (job / "config.json").write_text("{}")
    (job / "job.log").write_text("")
    (job / "result.json").write_text(json.dumps({"id": "job", "stats": {}}))
    for n, (name, mode, reward, exception) in enumerate(tries):
        harbor_trial(job, name, folder, mode, f"2026-12-02T10:0{n}:00Z", reward=reward,
                     exception=exception)  # fmt: skip
    return root / "jobs"


def test_the_release_policy_per_harbor_outcome():
    def outcome(reward, exception=None):
        verifier = None if reward is None else {"rewards": {"reward": reward}}
        found = trial_outcome({"verifier_result": verifier, "exception_info": exception})
        return found.reward, found.excluded

    assert outcome(1.0) == (1.0, "")
    assert outcome(0.0, TIMED_OUT) == (0.0, "")  # a pass, scored on what it left
    assert outcome(1.0, TIMED_OUT) == (1.0, "")
    assert outcome(1.0, AGENT_FAILED) == (1.0, "agent_error")  # left out, reward kept apart
    assert outcome(None, AGENT_FAILED) == (None, "agent_error")
    assert outcome(None, TIMED_OUT) == (None, "infra_error")  # no verdict: nothing to score
    assert outcome(None, NO_ENVIRONMENT) == (None, "infra_error")
    assert outcome(1.0, {"exception_type": "VerifierTimeoutError"}) == (1.0, "infra_error")
    assert outcome(None) == (None, "infra_error")
    assert outcome(True) == (None, "infra_error")  # a boolean is no reward


def test_a_timed_out_trial_counts_and_a_failed_agent_is_left_out_and_said(
    client, sql_task, lead, author, tmp_path
):
    """Three tries of one task: resolved, timed out (reward 0), agent process failed
    (reward 1, which must not count). The release's figure is 1 of 2 passes, pass@1 1 —
    not 1 of 1 (the timeout dropped, as before), nor 2 of 3 (the failed agent counted)."""
    folder = bundle_task(tmp_path / "bundle", sql_task)
    jobs = jobs_folder(tmp_path, folder, [
        ("sql_0__full_info__a", "full_info", 1.0, None),
        ("sql_0__full_info__b", "full_info", 0.0, TIMED_OUT),
        ("sql_0__full_info__c", "full_info", 1.0, AGENT_FAILED),
        ("sql_0__baseline__d", "baseline", None, NO_ENVIRONMENT),
    ])  # fmt: skip
    out = _import(jobs, sql_task, lead)
    run = EvaluationRun.objects.get(project=sql_task.project, model_name="openai/standin")
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error
    assert out.strip() == (
        f"run {run.pk}: openai/standin, 2 passes, succeeded; 2 tries excluded, as the release "
        "leaves them out: 1 agent error (NonZeroAgentExitCodeError), 1 infra error "
        "(EnvironmentStartTimeoutError)"
    )
    passes = list(TaskPass.objects.filter(run=run).order_by("index"))
    assert [(p.mode, p.index, p.resolved) for p in passes] == [
        ("full_info", 1, True),
        ("full_info", 2, False),
    ]
    assert passes[1].detail["agent_exception"]["type"] == "AgentTimeoutError"
    assert "ran out of time (AgentTimeoutError)" in passes[1].error
    excluded = {e.trial: e for e in ExcludedTry.objects.filter(run=run)}
    assert sorted(excluded) == ["sql_0__baseline__d", "sql_0__full_info__c"]
    failed = excluded["sql_0__full_info__c"]
    assert (failed.reason, failed.exception, failed.reward, failed.mode) == (
        "agent_error", "NonZeroAgentExitCodeError", 1.0, "full_info",
    )  # fmt: skip
    assert failed.message == AGENT_FAILED["exception_message"]

    rows = {row["mode"]: row for row in leaderboard(project=sql_task.project)}
    assert (rows["full_info"]["passes"], rows["full_info"]["pass_at_1"]) == (2, 1.0)
    assert rows["full_info"]["pass_at_2"] == 1.0
    assert rows["full_info"]["tries_excluded"] == 1
    assert "1 agent error (NonZeroAgentExitCodeError)" in rows["full_info"]["excluded_why"]
    # A mode whose every try was left out still has its row, saying why.
    assert (rows["baseline"]["passes"], rows["baseline"]["tries_excluded"]) == (0, 1)
    assert "infra error (EnvironmentStartTimeoutError)" in rows["baseline"]["excluded_why"]

    client.force_login(author)
    page = client.get(reverse("evaluation-project", args=[sql_task.project.pk]))
    board = page.content.decode().split('id="leaderboard"')[1].split("</table>")[0]
    assert board.count('class="muted small excluded-tries"') == 2
    assert "1 try excluded, as the release leaves them out: 1 agent error" in board
    csv = client.get(reverse("evaluation-leaderboard-csv", args=[sql_task.project.pk]))
    header, *lines = csv.content.decode().splitlines()
    assert "tries_excluded" in header.split(",") and "excluded_why" in header.split(",")
    api = client.get(reverse("api-leaderboard", args=[sql_task.project.pk]))
    assert {r["mode"]: r["tries_excluded"] for r in api.json()} == {
        "baseline": 1, "full_info": 1,
    }  # fmt: skip
    html = client.get(reverse("evaluation-run", args=[run.pk])).content.decode()
    section = html.split('id="run-excluded"')[1].split("</section>")[0]
    assert "sql_0__full_info__c" in section and "NonZeroAgentExitCodeError" in section
    assert "Agent command exited with code 1" in section


def _import(jobs: Path, task, lead) -> str:
    out = StringIO()
    call_command("import_results", str(jobs), project=task.project.slug,
                 username=lead.username, wait=True, stdout=out)  # fmt: skip
    return out.getvalue()


def _baseline_run(task, lead, settings, tmp_path, tries):
    """An oracle run of 3 baseline passes of ``task``, its exported task folder, and a jobs
    folder holding ``tries`` as Harbor left them."""
    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    run = harbor_run_start(project=task.project, actor=lead, agent="oracle",
                           task_ids=[task.pk], modes=["baseline"], passes=3)  # fmt: skip
    folder = harbor_runs.run_folder(run)
    task_folder = bundle_task(folder / "bundle", task)
    return run, task_folder, jobs_folder(folder, task_folder, tries)


class WorkerDied(Exception):
    """The worker's process ending mid-run: the run stays running until another takes it."""


def test_a_run_taken_over_asks_harbor_only_for_the_tries_never_made(
    sql_task, lead, settings, tmp_path, monkeypatch
):
    """A run of 3 tries: the first worker finds two made (one pass; one left out, its agent's
    process failed) and asks Harbor for one more — not two: the try left out was made. That
    try runs out of time and the worker dies. The worker taking the run over stores it as a
    pass, keeps the left-out try once, and asks Harbor for nothing: every try was made. Before,
    each worker drew the errored tries again, and a model that timed out got fresh draws."""
    run, task_folder, jobs = _baseline_run(sql_task, lead, settings, tmp_path, [
        ("sql_0__baseline__a", "baseline", 1.0, None),
        ("sql_0__baseline__b", "baseline", 0.0, AGENT_FAILED),
    ])  # fmt: skip
    asked = []

    def harbor(run, folder, dataset, attempts, *args):
        asked.append(attempts)
        job = jobs / "2026-12-02__10-00-00"
        harbor_trial(job, "sql_0__baseline__c", task_folder, "baseline",
                     "2026-12-02T10:05:00Z", reward=0.0, exception=TIMED_OUT)  # fmt: skip
        raise WorkerDied

    monkeypatch.setattr(harbor_runs, "_export", lambda run, folder: {"sql_0": sql_task.pk})
    monkeypatch.setattr(harbor_runs, "_run_harbor", harbor)
    with pytest.raises(WorkerDied):
        evaluation_run_execute(run_id=run.pk)
    assert asked == [1]
    silent = timezone.now() - timedelta(days=1)
    EvaluationRun.objects.filter(pk=run.pk).update(heartbeat_at=silent)

    evaluation_run_execute(run_id=run.pk)  # taken over
    assert asked == [1]
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error
    passes = TaskPass.objects.filter(run=run).order_by("index")
    assert [(p.detail["trial"], p.index, p.resolved) for p in passes] == [
        ("sql_0__baseline__a", 1, True),
        ("sql_0__baseline__c", 2, False),
    ]
    assert list(ExcludedTry.objects.filter(run=run).values_list("trial", "reason")) == [
        ("sql_0__baseline__b", "agent_error"),
    ]
    # Read again (a third worker, the run's skipped list lost): nothing is stored twice.
    EvaluationRun.objects.filter(pk=run.pk).update(harbor={})
    run.refresh_from_db()
    harbor_runs._collect(run, jobs, task_resolver(sql_task.project))
    assert (TaskPass.objects.filter(run=run).count(), run.excluded_tries.count()) == (2, 1)


def test_a_trial_harbor_is_still_writing_is_read_at_the_next_look(
    sql_task, lead, settings, tmp_path
):
    """While Harbor runs, the worker imports trials as they finish; a trial whose
    ``result.json`` it catches empty (Harbor writing it) or not yet finished is read at the
    next look, not set aside for good: a takeover's run once ended "3 of 4 trials gave a
    reward", the fourth skipped with "Expecting value: line 1 column 1". Once Harbor has
    ended, what still cannot be read is named among the skipped."""
    run, task_folder, jobs = _baseline_run(sql_task, lead, settings, tmp_path, [
        ("sql_0__baseline__a", "baseline", 1.0, None),
        ("sql_0__baseline__b", "baseline", 1.0, None),
        ("sql_0__baseline__c", "baseline", 1.0, None),
    ])  # fmt: skip
    job = jobs / "2026-12-02__10-00-00"
    written = (job / "sql_0__baseline__b" / "result.json").read_text()
    (job / "sql_0__baseline__b" / "result.json").write_text("")  # caught mid-write
    unfinished = json.loads((job / "sql_0__baseline__c" / "result.json").read_text())
    (job / "sql_0__baseline__c" / "result.json").write_text(
        json.dumps({**unfinished, "finished_at": None, "verifier_result": None})
    )
    resolve = task_resolver(sql_task.project)

    harbor_runs._collect(run, jobs, resolve, running=True)
    run.refresh_from_db()
    stored = TaskPass.objects.filter(run=run)
    assert [p.detail["trial"] for p in stored] == ["sql_0__baseline__a"]
    assert not run.harbor.get("skipped") and not run.excluded_tries.exists()

    (job / "sql_0__baseline__b" / "result.json").write_text(written)  # Harbor done writing
    harbor_runs._collect(run, jobs, resolve, running=True)
    assert TaskPass.objects.filter(run=run).count() == 2
    (job / "sql_0__baseline__c" / "result.json").write_text("{")  # Harbor died writing it
    harbor_runs._collect(run, jobs, resolve)  # Harbor has ended
    run.refresh_from_db()
    assert sorted(p.detail["trial"] for p in TaskPass.objects.filter(run=run)) == [
        "sql_0__baseline__a", "sql_0__baseline__b",
    ]  # fmt: skip
    assert list(run.harbor["skipped"]) == ["sql_0__baseline__c"]
    assert "Expecting" in run.harbor["skipped"]["sql_0__baseline__c"]  # the parser's words
