"""A release task run from the Evaluation page without its data (issue 44, item 11): the run
page says what to fetch and where, in the words ``harbor run`` on the exported bundle stops
with (``harbor_agents.fetch``), not only "stopped by MissingData" and a folder of the worker.
Harbor itself does not run here: the run's export is the app's, the trial is the one Harbor
writes when the project's environment stops it (``tests/exchange/test_harbor_trials.py``
runs the real one)."""

import json

import pytest
from django.urls import reverse

from evaluation.models import EvaluationRun
from evaluation.services import harbor_run_start
from evaluation.services.common import task_resolver
from exchange.services import harbor_runs
from harbor_agents.fetch import FETCH, fetch_sentence
from hilbench_annotate.jobs import job_fail
from hilbench_annotate.models import Task
from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db


def _stopped_trial(jobs, folder, mode: str, message: str) -> None:
    """The trial Harbor leaves when the project's environment raises MissingData."""
    trial = jobs / "2026-12-02__10-00-00" / f"{folder.name}__{mode}__x1"
    trial.mkdir(parents=True)
    (trial / "config.json").write_text("{}")
    (trial / "result.json").write_text(
        json.dumps(
            {
                "task_name": f"{folder.name}__{mode}",
                "task_id": {"path": str(folder / mode)},
                "agent_info": {"name": "oracle", "model_info": None},
                "started_at": "2026-12-02T10:00:00Z",
                "exception_info": {"exception_type": "MissingData", "exception_message": message},
                "verifier_result": None,
            }
        )
    )


def test_the_run_page_says_what_a_release_task_needs_fetched(
    client, project, author, lead, settings, tmp_path
):
    from django.core.management import call_command

    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    call_command("import_hilbench", str(FIXTURES / "hilbench" / "sql"), project=project.slug)
    task = Task.objects.get(project=project, source_metadata__folder="sql_0")
    run = harbor_run_start(
        project=project, actor=lead, agent="oracle", task_ids=[task.pk], modes=["full_info"],
        passes=1,
    )  # fmt: skip
    folder = harbor_runs.run_folder(run)
    folders = harbor_runs._export(run, folder)
    name = next(n for n, pk in folders.items() if pk == task.pk)
    bundle = folder / "bundle" / name
    # What the export wrote for the task, as one sentence: what Harbor's MissingData says.
    sentence = fetch_sentence((bundle / FETCH).read_text())
    assert "Fetch it to shared/data/database.sqlite" in sentence
    run.refresh_from_db()
    assert run.harbor["fetch"] == {name: {"task": task.pk, "what": sentence}}

    message = f"no shared/data/database.sqlite in {name}: {sentence}"
    _stopped_trial(folder / "jobs", bundle, "full_info", message)
    harbor_runs._collect(run, folder / "jobs", task_resolver(project))
    run.refresh_from_db()
    assert list(run.harbor["skipped"].values()) == [f"stopped by MissingData: {message}"]
    job_fail(EvaluationRun, run.pk, harbor_runs._shortfall(run, folder))

    client.force_login(author)
    html = client.get(reverse("evaluation-run", args=[run.pk])).content.decode()
    fetch = html.split('id="run-fetch"')[1].split("</div>")[0]
    assert "Data to fetch" in fetch and sentence.replace("'", "&#x27;") in fetch
    assert f"task {task.pk}" in fetch
    run.refresh_from_db()
    first, second = run.error.splitlines()[:2]
    assert first == "0 of 1 trials gave a reward."
    assert second == f"{name} (task {task.pk}) needs data the bundle does not carry: {sentence}"
