"""Write tasks as a HiL-Bench bundle (``.tar.gz``), streamed, byte-for-byte reproducible.

One entry point, :func:`write_bundle`, used by the export job (browser, API) and by
``manage.py export_bundle``. Task files never carry timestamps, ids of this database or
anything else that would change when the same task is exported from another installation
(after ``import_bundle``): only ``manifest.json`` does.
"""

import re
import tempfile
from collections.abc import Callable, Iterable
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from django.utils import timezone

from evaluation.selectors import task_selection
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.services.tasks import task_snapshot
from hilbench_annotate.vocabulary import Domain, TaskStatus

from . import layout
from .oracle import oracle_runs, oracle_verdict
from .provenance import gate_report, review_document, validation_document
from .tarstream import BundleTar
from .taskfiles import TaskFiles, release_task_files, sql_files, swe_files

EXPORTABLE_STATES = (TaskStatus.APPROVED, TaskStatus.EXPORTED)


def app_version() -> str:
    try:
        return package_metadata.version("hilbench-annotate")
    except package_metadata.PackageNotFoundError:
        return "unknown"


def _pass_rate_evidence(task: Task) -> dict:
    """Pass-rate evidence for validation.json: the project's thresholds, each model's
    pass@k in baseline and full_info on the current revision, and the keep / drop decision
    (``evaluation.selectors.task_selection``, what the ``pass_rate`` gate reads)."""

    selection = task_selection(task)
    selection.pop("revision_id", None)  # the revision is named by validation.json itself
    return selection


def validation_verdict(task: Task, gates: list[dict]) -> tuple[bool, str]:
    """Validated: the current revision is approved (final sign-off done) and every gate is
    green. The reason says what is missing otherwise."""
    if task.status not in EXPORTABLE_STATES:
        return False, f"status is {task.get_status_display().lower()}, not approved"
    red = [g for g in gates if not g["green"]]
    if red:
        return False, "; ".join(f"{g['gate']}: {g['message'][:160]}" for g in red)
    return True, "approved, every gate green"


def _load(task_id: int) -> Task:
    return Task.objects.select_related(
        "project",
        "sql_environment__database",
        "swe_environment__repository",
    ).get(pk=task_id)


def write_bundle(
    *,
    task_ids: Iterable[int],
    out: Path,
    draft: bool = False,
    reveal_reviewers: bool = False,
    project=None,
    selection: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
    allow_internet: bool = False,
) -> dict[str, Any]:
    """Write the selected tasks to ``out`` (a ``.tar.gz``); return the report.

    Tasks are exported in (domain, source, source id) order and numbered per domain
    (``sql_0``, ``sql_1``, ``swe_0`` …), so the same tasks get the same folders anywhere.
    Without ``draft`` a task is exported only if :func:`validation_verdict` says so; the
    others are listed in the report with the reason. ``progress(done, total)`` is called
    after each task.
    """
    ordered = list(
        Task.objects.filter(pk__in=list(task_ids))
        .order_by("domain", "source", "source_id", "pk")
        .values_list("pk", flat=True)
    )
    tar = BundleTar(out)
    exported: list[dict] = []
    skipped: list[dict] = []
    counters = {Domain.SQL: 0, Domain.SWE: 0}
    # A task from the release keeps its folder name (sql_3, swe_5); the others are numbered
    # around those names.
    kept_names = _release_folders(ordered)
    exported_names: set[str] = set()
    try:
        for done, task_id in enumerate(ordered, start=1):
            task = _load(task_id)
            gates = gate_report(task)
            validated, reason = validation_verdict(task, gates)
            if not validated and not draft:
                skipped.append({"task": task.pk, "title": task.title, "reason": reason})
            else:
                folder = _folder(task, kept_names, exported_names, counters)
                written = _write_task(
                    task,
                    folder,
                    int(folder.rsplit("_", 1)[1]),
                    gates,
                    reveal_reviewers=reveal_reviewers,
                    tar=tar,
                    allow_internet=allow_internet,
                    refuse_failing_oracle=not draft,
                )
                if isinstance(written, str):
                    skipped.append({"task": task.pk, "title": task.title, "reason": written})
                    _release_folder(folder, kept_names, counters)
                else:
                    exported_names.add(folder)
                    revision, oracle = written
                    exported.append(_entry(task, folder, revision, validated, reason, oracle))
            if progress:
                progress(done, len(ordered))
        manifest = _manifest(
            draft=draft,
            reveal_reviewers=reveal_reviewers,
            allow_internet=allow_internet,
            project=project,
            selection=selection,
            exported=exported,
        )
        files = tar.count
        tar.add_manifest(layout.MANIFEST, manifest)
        tar.close()
    except BaseException:
        tar.abort()
        raise
    return {"exported": exported, "skipped": skipped, "files": files}


def _oracle_summary(runs: dict) -> str:
    """One line for the job's report: the oracle and no-op rewards, or why none ran."""
    if "not_run" in runs:
        return f"not run: {runs['not_run']}"
    return f"oracle {runs['oracle'].get('reward')}, no-op {runs['noop'].get('reward')}"


def _entry(
    task: Task, folder: str, revision: int, validated: bool, reason: str, oracle: dict
) -> dict:
    return {
        "folder": folder,
        "task": task.pk,
        "domain": task.domain,
        "source": task.source,
        "source_id": task.source_id,
        "title": task.title,
        "revision": revision,
        "status": task.status,
        "validated": validated,
        "reason": reason,
        "oracle": _oracle_summary(oracle),
    }


def _manifest(*, draft, reveal_reviewers, allow_internet, project, selection, exported) -> dict:
    return {
        "format": layout.FORMAT,
        "format_version": layout.FORMAT_VERSION,
        "app_version": app_version(),
        "created_at": timezone.now().isoformat(timespec="seconds"),
        "draft": draft,
        "reviewers_named": reveal_reviewers,
        "allow_internet": allow_internet,
        "project": {"slug": project.slug, "name": project.name} if project else None,
        "selection": selection or {},
        "tasks": [{k: v for k, v in e.items() if k != "task"} for e in exported],
    }


def _folder(task: Task, kept: dict[int, str], used: set[str], counters: dict) -> str:
    """The task's folder: its release name if it has one, else the next free number."""
    name = kept.get(task.pk)
    if name and name not in used:
        return name
    while True:
        name = f"{task.domain}_{counters[task.domain]}"
        counters[task.domain] += 1
        if name not in used and name not in kept.values():
            return name


def _release_folder(folder: str, kept: dict[int, str], counters: dict) -> None:
    """Give back a numbered folder that was not written (it was the last one handed out)."""
    if folder not in kept.values():
        domain, number = folder.rsplit("_", 1)
        counters[domain] = int(number)


def _release_folders(task_ids: list[int]) -> dict[int, str]:
    """Task id -> the folder name it had in the release, for tasks kept from the release
    (the first task claiming a name keeps it)."""
    names: dict[int, str] = {}
    for task in Task.objects.filter(pk__in=task_ids, release_files__isnull=False).distinct():
        name = str(task.source_metadata.get("folder") or "")
        if re.fullmatch(r"(sql|swe)_\d+", name) and name not in names.values():
            names[task.pk] = name
    return names


def _write_task(
    task: Task,
    folder: str,
    index: int,
    gates: list[dict],
    *,
    reveal_reviewers: bool,
    tar: BundleTar,
    allow_internet: bool = False,
    refuse_failing_oracle: bool = False,
) -> tuple[int, dict] | str:
    """Add one task's files to ``tar`` in path order; return the revision number and the
    oracle runs, or why the task was not written (its oracle run fails and
    ``refuse_failing_oracle``)."""
    snapshot = task_snapshot(task)
    revision = (
        Revision.objects.filter(task=task).order_by("-number").values_list("number", flat=True)
    ).first() or 0
    files = TaskFiles(folder, allow_internet=allow_internet)
    with tempfile.TemporaryDirectory(prefix="hilbench-bundle-") as scratch:
        if task.release_files.exists():
            release_task_files(task, snapshot, files)
        elif task.domain == Domain.SQL:
            sql_files(task, snapshot, files, index)
        else:
            swe_files(task, snapshot, files, index, Path(scratch))
        runs = oracle_runs(task, files.entries)
        refused = oracle_verdict(runs)
        if refused and refuse_failing_oracle:
            return f"{refused} (only a draft can be exported)"
        validation = validation_document(
            task, revision_number=revision, gates=gates, pass_rate=_pass_rate_evidence(task)
        )
        files.add(layout.VALIDATION, layout.dumps({**validation, "oracle": runs}))
        files.add(
            layout.REVIEW,
            layout.dumps(
                review_document(task, revision_number=revision, reveal_reviewers=reveal_reviewers)
            ),
        )
        for name in sorted(files.entries):
            content = files.entries[name]
            if isinstance(content, Path):
                tar.add_file(name, content)
            else:
                tar.add_bytes(name, content)
    return revision, runs
