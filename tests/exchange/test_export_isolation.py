"""Issue 45, item 0 and its first acceptance point: every release task in ../shared imports,
opens in the workspace and exports; a task whose lint fails is named in the export's output
and the rest are written.

The release tasks are imported by the app's own importer (``import_hilbench``, what an import
job runs), their workspace is opened by their author through the test client, and they are
exported as a draft bundle through the export job's own code path (``bundle_export_create`` /
``bundle_export_execute``, what the page's worker and ``manage.py export_bundle`` run).

To prove that one task's failure is isolated, lint is made to raise for one task: lint is our
own code and no longer raises on any text we know of (``tests/authoring/test_lint_property.py``),
so forcing a crash in one of its rules is the only way to reproduce what the quoted space did
(an ``IndexError`` in the literal finder) — the patch is the fault being injected, not a
stand-in for what is under test.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from django.urls import reverse
from django.utils.html import escape

from authoring.lint import runner
from authoring.models import LintResult
from evaluation.services import harbor_run_start
from exchange.bundles.writer import ExportOptions, chunk_check
from exchange.importers import import_hilbench
from exchange.models import ExportJob
from exchange.services.exports import bundle_export_create, bundle_export_execute
from exchange.services.harbor_runs import _export as harbor_export
from exchange.services.harbor_runs import run_folder
from hilbench_annotate.models import Task

from ..conftest import shared_path
from .bundle_helpers import members

pytestmark = pytest.mark.django_db


def _release_copy(collection: str, tmp_path):
    """The collection's task folders, linked into a folder of their own (the collection's
    README and harness reference are no task)."""
    root = shared_path("examples", collection)
    dest = tmp_path / collection
    for domain in ("sql", "swe"):
        for folder in sorted(p for p in (root / domain).iterdir() if p.is_dir()):
            (dest / domain).mkdir(parents=True, exist_ok=True)
            (dest / domain / folder.name).symlink_to(folder, target_is_directory=True)
    return dest


def _draft_export(project, lead, out, tasks) -> ExportJob:
    job = bundle_export_create(
        project=project, actor=lead, selection={"tasks": [t.pk for t in tasks]}, draft=True
    )
    return bundle_export_execute(job_id=job.pk, out=out)


def _manifest(bundle) -> dict:
    return json.loads(members(bundle)["manifest.json"])


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("collection", ["hilbench", "hilbench-calibration"])
def test_every_release_task_imports_opens_in_the_workspace_and_exports(
    project, author, lead, client, tmp_path, collection
):
    """All of them: the five examples and the 98 calibration tasks (here the 98 import in
    about 6 s and export in 7 s; their 98 workspace pages take most of the test's time)."""
    root = _release_copy(collection, tmp_path)
    expected = sorted(p.name for p in root.glob("*/*"))
    started = time.perf_counter()
    import_hilbench(project=project, root=root, actor=author)
    imported = time.perf_counter() - started
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    assert sorted(t.source_metadata.get("folder") for t in tasks) == expected

    client.force_login(author)
    started = time.perf_counter()
    for task in tasks:
        page = client.get(reverse("workspace", args=[task.pk]))
        assert page.status_code == 200, (task.source_metadata.get("folder"), page.status_code)
        assert escape(task.title[:60]) in page.content.decode()

    opened = time.perf_counter() - started
    started = time.perf_counter()
    job = _draft_export(project, lead, tmp_path / "bundle.tar.gz", tasks)
    exported = time.perf_counter() - started
    assert job.status == ExportJob.Status.SUCCEEDED, job.error
    manifest = _manifest(tmp_path / "bundle.tar.gz")
    assert manifest["skipped"] == []
    # A release task keeps its release folder name in the bundle.
    assert sorted(e["folder"] for e in manifest["tasks"]) == expected
    print(
        f"{collection}: {len(tasks)} tasks, import {imported:.1f} s, "
        f"workspaces {opened:.1f} s, export {exported:.1f} s"
    )


def _lint_raises_for(monkeypatch, task: Task) -> str:
    """Make lint raise for ``task`` alone, as the quoted space once did (see the module's
    docstring); returns the resolution it raises on."""
    marker = task.blockers.order_by("position").first().resolution
    real = runner.check_leak

    def check_leak(blocker, surfaces, known):
        if blocker.resolution == marker:
            raise IndexError("string index out of range")
        return real(blocker, surfaces, known)

    monkeypatch.setattr(runner, "check_leak", check_leak)
    # Findings are kept per task state; the culprit's must be linted again, not read back.
    LintResult.objects.all().delete()
    return marker


@pytest.mark.shared_data
def test_a_task_whose_lint_raises_is_named_and_the_others_are_written(
    project, author, lead, tmp_path, monkeypatch
):
    root = _release_copy("hilbench", tmp_path)
    import_hilbench(project=project, root=root, actor=author)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    culprit = next(t for t in tasks if t.source_metadata.get("folder") == "sql_3")
    _lint_raises_for(monkeypatch, culprit)

    out = tmp_path / "bundle.tar.gz"
    job = _draft_export(project, lead, out, tasks)

    assert job.status == ExportJob.Status.SUCCEEDED, job.error
    manifest = _manifest(out)
    written = sorted(e["folder"] for e in manifest["tasks"])
    assert written == sorted(t.source_metadata["folder"] for t in tasks if t != culprit)
    assert not any(name.startswith("sql_3/") for name in members(out))
    # Named in the manifest, the job's report and on the export's page: id, title, why.
    [skipped] = manifest["skipped"]
    assert skipped["task"] == culprit.pk and skipped["title"] == culprit.title
    assert skipped["source_id"] == culprit.source_id
    assert skipped["reason"] == (
        "left out: its gates (lint, checks) raised IndexError: string index out of range"
    )
    assert job.report["skipped"] == [skipped]
    client = _client_as(lead)
    page = client.get(reverse("export-detail", args=[job.pk])).content.decode()
    assert "Left out" in page and escape(culprit.title[:60]) in page
    assert "IndexError: string index out of range" in page


def _client_as(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.mark.shared_data
def test_the_check_of_a_bundle_not_a_draft_names_the_task_whose_lint_raises(
    project, author, tmp_path, monkeypatch
):
    """The check step (a bundle that is not a draft) leaves the task out with why, and
    checks the others as usual (here: drafts, not approved)."""
    root = _release_copy("hilbench", tmp_path)
    import_hilbench(project=project, root=root, actor=author)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    culprit = tasks[0]
    _lint_raises_for(monkeypatch, culprit)

    verdicts = chunk_check(task_ids=[t.pk for t in tasks], options=ExportOptions())

    assert verdicts[str(culprit.pk)]["failed"] is True
    assert verdicts[str(culprit.pk)]["write"] is False
    assert "IndexError" in verdicts[str(culprit.pk)]["reason"]
    for task in tasks[1:]:
        verdict = verdicts[str(task.pk)]
        assert "failed" not in verdict and verdict["gates"], task.title
        assert verdict["reason"].startswith("status is "), verdict["reason"]


@pytest.mark.shared_data
def test_an_export_whose_every_task_fails_still_fails_naming_them(
    project, author, lead, tmp_path, monkeypatch
):
    """Isolation is per task, not a silent pass: when nothing can be written the export fails
    and its message names each task and why."""
    root = _release_copy("hilbench", tmp_path)
    import_hilbench(project=project, root=root, actor=author)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))

    def check_leak(blocker, surfaces, known):
        raise IndexError("string index out of range")

    monkeypatch.setattr(runner, "check_leak", check_leak)
    LintResult.objects.all().delete()
    job = _draft_export(project, lead, tmp_path / "bundle.tar.gz", tasks)

    assert job.status == ExportJob.Status.FAILED
    assert job.error.startswith("No selected task could be written")
    for task in tasks:
        assert re.search(rf"task {task.pk} \(.+\): left out: .*IndexError", job.error)
    assert not (tmp_path / "bundle.tar.gz").exists()


@pytest.mark.shared_data
def test_a_failure_of_the_machine_still_fails_the_whole_export(
    project, author, lead, tmp_path, monkeypatch
):
    """A disk error is no task's: it is not turned into one task left out."""
    root = _release_copy("hilbench", tmp_path)
    import_hilbench(project=project, root=root, actor=author)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))

    def check_leak(blocker, surfaces, known):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "check_leak", check_leak)
    LintResult.objects.all().delete()
    with pytest.raises(OSError, match="No space left"):
        _draft_export(project, lead, tmp_path / "bundle.tar.gz", tasks)
    job = ExportJob.objects.get()
    assert job.status == ExportJob.Status.FAILED
    assert "No space left on device" in job.error


@pytest.mark.shared_data
def test_a_harbor_run_names_the_task_its_export_left_out_and_runs_the_others(
    project, author, lead, tmp_path, monkeypatch, settings
):
    """An agent run in Harbor exports its tasks as a draft bundle first (``harbor_runs._export``,
    the step before ``harbor run``; Harbor itself is not needed for it and not run here): a
    task whose lint raises is named on the run's page and makes no trial, so the run's total
    counts the others and a finished run is not a shortfall."""
    settings.HARBOR_RUNS_DIR = tmp_path / "harbor-runs"
    root = _release_copy("hilbench", tmp_path)
    import_hilbench(project=project, root=root, actor=author)
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    culprit = next(t for t in tasks if t.source_metadata.get("folder") == "swe_5")
    _lint_raises_for(monkeypatch, culprit)
    run = harbor_run_start(
        project=project, actor=lead, agent="no-op", task_ids=[t.pk for t in tasks],
        modes=["baseline", "ask_human"], passes=2,
    )  # fmt: skip
    assert run.total == 5 * 2 * 2

    folders = harbor_export(run, run_folder(run))

    assert culprit.pk not in folders.values()
    assert sorted(folders) == sorted(t.source_metadata["folder"] for t in tasks if t != culprit)
    run.refresh_from_db()
    assert run.total == 4 * 2 * 2
    [left_out] = run.harbor["left_out"]
    assert left_out["task"] == culprit.pk and left_out["title"] == culprit.title
    assert "IndexError: string index out of range" in left_out["reason"]
    page = _client_as(lead).get(reverse("evaluation-run", args=[run.pk])).content.decode()
    assert "Tasks left out of the run" in page
    assert escape(culprit.title[:60]) in page
    assert "IndexError: string index out of range" in page
