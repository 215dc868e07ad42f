"""Issue 45, item 6c: the draft bundle a Harbor run exports of its own tasks names the run as
its maker — in *Recent exports* and on the export's page — instead of reading as an export the
lead started. Harbor itself does not run here: the run's export is the app's own."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.services import harbor_run_start
from exchange.models import ExportJob
from exchange.services import harbor_runs
from exchange.services.exports import bundle_export_create
from hilbench_annotate.models import Task
from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db


def test_a_harbor_runs_own_export_names_the_run_not_the_lead(
    client, project, lead, settings, tmp_path
):
    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    call_command("import_hilbench", str(FIXTURES / "hilbench" / "sql"), project=project.slug)
    task = Task.objects.get(project=project, source_metadata__folder="sql_0")
    run = harbor_run_start(
        project=project, actor=lead, agent="oracle", task_ids=[task.pk], modes=["full_info"],
        passes=1,
    )  # fmt: skip
    harbor_runs._export(run, harbor_runs.run_folder(run))
    made = ExportJob.objects.get(harbor_run=run)
    assert made.draft and made.created_by == lead
    own = bundle_export_create(project=project, actor=lead, selection={"tasks": [task.pk]})
    assert own.harbor_run is None

    client.force_login(lead)
    html = client.get(reverse("export-list")).content.decode()
    rows = {
        pk: html.split(f'<a href="/exports/{pk}/">{pk}</a>')[1].split("</tr>")[0]
        for pk in (made.pk, own.pk)
    }
    run_link = f'<a href="{reverse("evaluation-run", args=[run.pk])}">Harbor run #{run.pk}</a>'
    assert run_link in rows[made.pk] and "the run was started by lead" in rows[made.pk]
    assert "<td>lead</td>" in rows[own.pk] and "Harbor run" not in rows[own.pk]

    detail = client.get(reverse("export-detail", args=[made.pk])).content.decode()
    assert f"Made by {run_link} for its own trials" in detail
    assert "Made by" not in client.get(reverse("export-detail", args=[own.pk])).content.decode()


def test_exports_made_by_harbor_runs_before_the_field_are_found_by_where_they_were_written(
    project, lead, settings, tmp_path
):
    import importlib

    from django.apps import apps

    from evaluation.models import EvaluationRun

    migration = importlib.import_module("exchange.migrations.0008_export_made_by_harbor_run")
    settings.HARBOR_RUNS_DIR = tmp_path / "runs"
    run = EvaluationRun.objects.create(project=project, created_by=lead)
    runs = settings.HARBOR_RUNS_DIR

    def export(out_path: str) -> ExportJob:
        return ExportJob.objects.create(
            project=project, created_by=lead, draft=True, out_path=out_path
        )

    by_run = export(str(runs / str(run.pk) / "bundle.tar.gz"))
    by_command = export(str(tmp_path / "mine" / "bundle.tar.gz"))
    no_such_run = export(str(runs / str(run.pk + 1000) / "bundle.tar.gz"))
    migration.mark_harbor_exports(apps, None)
    assert ExportJob.objects.get(pk=by_run.pk).harbor_run_id == run.pk
    assert ExportJob.objects.get(pk=by_command.pk).harbor_run_id is None
    assert ExportJob.objects.get(pk=no_such_run.pk).harbor_run_id is None
