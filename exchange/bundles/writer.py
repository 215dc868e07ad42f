"""Write tasks as a HiL-Bench bundle (``.tar.gz``), in chunks, byte-for-byte reproducible.

An export is a few steps that any worker can take, each over a chunk of tasks
(``EXPORT_CHUNK_SIZE``); ``exchange.services.exports`` runs them one after the other in one
process (``manage.py export_bundle``) or spreads them over the Celery workers:

1. *Plan* (:func:`export_order`): the selected tasks in (domain, source, source id) order.
2. *Check* (:func:`chunk_check`, only for a bundle that is not a draft): which tasks are
   validated — approved, every gate green, the oracle scoring 1 — and why the others are
   left out. Folder names follow (:func:`export_folders`): a release task keeps its name,
   the others are numbered ``sql_0``, ``sql_1`` … over the tasks written, with no gap.
3. *Write* (:func:`chunk_write`): each task's files into a chunk of the archive
   (``tarstream.ChunkSpool``); a chunk's tasks are read with a fixed number of queries.
4. *Assemble* (:func:`bundle_assemble`): the chunks joined, then ``manifest.json``.

One task never stops an export: a task whose lint, gates, files, oracle or provenance raise
is left out and named — its id, title and the error in one line — in the manifest's
``skipped``, the job's report and page (:func:`task_failure`). Its folder number, given
before the write step, stays unused (a draft has no check step to find it out earlier). A
failure of the machine (the database, the disk, memory) is no task's: it fails the export.

Task files never carry timestamps, ids of this database or anything else that would
change when the same task is exported from another installation (after ``import_bundle``):
only ``manifest.json`` does. The chunk size fixes the bytes; the number of workers does not.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from evaluation.selectors import task_selections
from hilbench_annotate.models import Task
from hilbench_annotate.selectors import current_revisions, current_revisions_kept
from hilbench_annotate.services.tasks import task_snapshots
from hilbench_annotate.toolkit.iteration import batched, fewer_collections
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.vocabulary import Domain, TaskStatus

from . import layout, modes, release_runtime
from .contents import TaskList
from .documents import judge_settings_for
from .harness import harness_files
from .judge_choice import LlmJudge, ask_human_judge
from .oracle import oracle_runs, oracle_verdict
from .provenance import gate_reports, review_documents, validation_documents
from .tarstream import ChunkRecord, ChunkSpool, Entry, assemble
from .taskfiles import TaskFiles, release_task_files, sql_files, swe_files

EXPORTABLE_STATES = (TaskStatus.APPROVED, TaskStatus.EXPORTED)
_JUDGE = "ask_human_judge"  # which judge scores ask_human: manifest and validation.json


@dataclass(frozen=True)
class ExportOptions:
    """What a lead chose for the bundle."""

    draft: bool = False
    reveal_reviewers: bool = False
    allow_internet: bool = False
    # The release's LLM judge for the ask_human of tasks kept from the release (``judge_choice``).
    llm_judge: LlmJudge | None = None


def app_version() -> str:
    try:
        return package_metadata.version("hilbench-annotate")
    except package_metadata.PackageNotFoundError:
        return "unknown"


def validation_verdict(task: Task, gates: list[dict]) -> tuple[bool, str]:
    """Validated: the current revision is approved (final sign-off done) and every gate is
    green. The reason says what is missing otherwise."""
    if task.status not in EXPORTABLE_STATES:
        return False, f"status is {task.get_status_display().lower()}, not approved"
    red = [g for g in gates if not g["green"]]
    if red:
        return False, "; ".join(f"{g['gate']}: {g['message'][:160]}" for g in red)
    return True, "approved, every gate green"


# What fails the whole export rather than one task: the machine, not a task's content.
WHOLE_EXPORT_ERRORS = (DatabaseError, OSError, MemoryError)


def task_failure(stage: str, error: Exception) -> str:
    """Why a task was left out when producing part of it raised: the stage and the error in
    one line, never its traceback."""
    said = " ".join(str(error).split())
    if len(said) > 300:
        said = said[:299] + "…"
    return f"left out: its {stage} raised {type(error).__name__}" + (f": {said}" if said else "")


def _per_task(tasks: list[Task], produce, stage: str, failed: dict[int, str]) -> dict:
    """``produce(tasks) -> {task id: …}`` for many tasks at once (a fixed number of queries);
    when that raises, each task alone, so that the one that raises is named in ``failed``
    and the others go on."""
    try:
        return produce(tasks)
    except WHOLE_EXPORT_ERRORS:
        raise
    except Exception as error:  # noqa: BLE001 - asked again task by task, to name the culprit
        if len(tasks) == 1:
            failed[tasks[0].pk] = task_failure(stage, error)
            return {}
    found: dict = {}
    for task in tasks:
        try:
            found.update(produce([task]))
        except WHOLE_EXPORT_ERRORS:
            raise
        except Exception as error:  # noqa: BLE001 - one task's failure, named and left out
            failed[task.pk] = task_failure(stage, error)
    return found


def chunks(items: list) -> list[list]:
    """The bundle's chunks of tasks, ``EXPORT_CHUNK_SIZE`` a chunk."""
    return list(batched(items, settings.EXPORT_CHUNK_SIZE))


# --- 1. plan -------------------------------------------------------------------------------


def export_order(task_ids: Iterable[int]) -> list[int]:
    """The tasks in the bundle's order, so the same tasks get the same folders anywhere."""
    return list(
        Task.objects.filter(pk__in=list(task_ids))
        .order_by("domain", "source", "source_id", "pk")
        .values_list("pk", flat=True)
    )


def export_folders(ordered: list[int]) -> dict[int, str]:
    """Task id -> its folder, for the tasks written, in order: a task from the release keeps
    its release folder (the first task claiming a name keeps it); the others take the next
    free number of their domain, around those names."""
    domains = dict(Task.objects.filter(pk__in=ordered).values_list("pk", "domain"))
    kept = _release_folders(ordered)
    counters = {Domain.SQL: 0, Domain.SWE: 0}
    used: set[str] = set()
    folders = {}
    for pk in ordered:
        name = kept.get(pk)
        if not name or name in used:
            while True:
                name = f"{domains[pk]}_{counters[domains[pk]]}"
                counters[domains[pk]] += 1
                if name not in used and name not in kept.values():
                    break
        used.add(name)
        folders[pk] = name
    return folders


def _release_folders(task_ids: list[int]) -> dict[int, str]:
    names: dict[int, str] = {}
    for pk, metadata in (
        Task.objects.filter(pk__in=task_ids, release_files__isnull=False)
        .distinct()
        .order_by("pk")
        .values_list("pk", "source_metadata")
    ):
        name = str(metadata.get("folder") or "")
        if re.fullmatch(r"(sql|swe)_\d+", name) and name not in names.values():
            names[pk] = name
    return names


# --- the tasks of a chunk, read at once ------------------------------------------------


class _Chunk:
    """A chunk's tasks with what their files and provenance need, in a fixed number of
    queries whatever the number of tasks."""

    def __init__(self, task_ids: list[int]):
        loaded = {
            task.pk: task
            for task in Task.objects.filter(pk__in=task_ids)
            .select_related("project", "sql_environment__database", "swe_environment__repository")
            .prefetch_related("release_files")
        }
        self.tasks = [loaded[pk] for pk in task_ids if pk in loaded]
        self.snapshots = task_snapshots(self.tasks)
        self.revisions = {
            pk: number for pk, (_, number) in current_revisions(task_ids=task_ids).items()
        }
        self._gates: dict[int, list[dict]] | None = None
        self._judge_settings: dict[int, dict] = {}
        # Task id -> why it is left out: a part of it raised (``task_failure``).
        self.failed: dict[int, str] = {}

    @property
    def gates(self) -> dict[int, list[dict]]:
        """Each task's gates (lint among them); a task whose gates raise is in ``failed``."""
        if self._gates is None:
            self._gates = _per_task(self.tasks, gate_reports, "gates (lint, checks)", self.failed)
        return self._gates

    def skipped(self, task: Task) -> dict:
        """The report's and manifest's entry of a task left out because a part of it raised."""
        return _skipped(task, self.failed[task.pk])

    def revision(self, task: Task) -> int:
        return self.revisions.get(task.pk, 0)

    def judge_settings(self, task: Task) -> dict:
        if task.project_id not in self._judge_settings:
            self._judge_settings[task.project_id] = judge_settings_for(task.project)
        return self._judge_settings[task.project_id]

    def files(self, task: Task, folder: str, options: ExportOptions, scratch: Path) -> TaskFiles:
        """The task's files but its provenance (``taskfiles``); a SWE task writes its
        repository stream into ``scratch`` (made here)."""
        snapshot = self.snapshots[task.pk]
        files = TaskFiles(folder, allow_internet=options.allow_internet)
        index = int(folder.rsplit("_", 1)[1])
        if task.release_files.exists():
            release_task_files(
                task, snapshot, files, judge_settings=self.judge_settings(task),
                llm_judge=options.llm_judge,
            )  # fmt: skip
        elif task.domain == Domain.SQL:
            sql_files(task, snapshot, files, index, judge_settings=self.judge_settings(task))
        else:
            scratch.mkdir(parents=True, exist_ok=True)
            swe_files(
                task, snapshot, files, index, scratch, judge_settings=self.judge_settings(task)
            )
        return files


# --- 2. check --------------------------------------------------------------------------------


@fewer_collections()
@current_revisions_kept()
def chunk_check(*, task_ids: list[int], options: ExportOptions) -> dict[str, dict]:
    """For a bundle that is not a draft: each task's gates, oracle runs and whether it is
    written (``write``) or left out (``reason``). Keys are task ids as text (JSON)."""
    chunk = _Chunk(task_ids)
    verdicts: dict[str, dict] = {}
    gates = chunk.gates
    with tempfile.TemporaryDirectory(prefix="hilbench-bundle-") as scratch:
        for task in chunk.tasks:
            if task.pk in chunk.failed:
                verdicts[str(task.pk)] = _failed_verdict(chunk.failed[task.pk])
                continue
            validated, reason = validation_verdict(task, gates[task.pk])
            verdict = {
                "gates": gates[task.pk], "validated": validated, "reason": reason, "write": False
            }  # fmt: skip
            if validated:
                # Any folder name will do: the oracle's files never name their folder.
                own = Path(scratch) / str(task.pk)
                try:
                    files = chunk.files(task, f"{task.domain}_0", options, own)
                    verdict["oracle"] = oracle_runs(task, files.entries)
                except WHOLE_EXPORT_ERRORS:
                    raise
                except Exception as error:  # noqa: BLE001 - this task's, named and left out
                    failure = task_failure("files or oracle run", error)
                    verdicts[str(task.pk)] = _failed_verdict(failure)
                    continue
                finally:
                    _remove_scratch(own)
                refused = oracle_verdict(verdict["oracle"])
                verdict["write"] = refused is None
                if refused:
                    verdict["reason"] = f"{refused} (only a draft can be exported)"
            verdicts[str(task.pk)] = verdict
    return verdicts


def _remove_scratch(own: Path) -> None:
    """A task's scratch folder, where it made one (a SWE task's repository stream): an SQL
    task makes none, and ``rmtree`` raises and catches an error for a folder not there."""
    if os.path.lexists(own):
        shutil.rmtree(own, ignore_errors=True)


def _failed_verdict(reason: str) -> dict:
    return {"gates": [], "validated": False, "reason": reason, "write": False, "failed": True}


# --- 3. write --------------------------------------------------------------------------------


@fewer_collections()
@current_revisions_kept()
def chunk_write(
    *,
    work: Path,
    name: str,
    folders: list[tuple[int, str]],
    options: ExportOptions,
    checked: dict[str, dict] | None = None,
) -> dict[str, Any]:
    """Write the tasks (``(task id, folder)`` in bundle order) into the chunk ``name`` under
    ``work``; ``checked``: their verdicts from :func:`chunk_check` (a draft has none).
    Returns the chunk's record, its report entries and the tasks left out because a part of
    them raised (``skipped``)."""
    chunk = _Chunk([pk for pk, _ in folders])
    names = dict(folders)
    checked_gates = {t.pk: checked[str(t.pk)]["gates"] for t in chunk.tasks} if checked else {}
    gates = checked_gates or chunk.gates

    def alive() -> list[Task]:
        return [t for t in chunk.tasks if t.pk not in chunk.failed]

    revisions = {task.pk: chunk.revision(task) for task in chunk.tasks}
    passes = _per_task(
        alive(), lambda tasks: task_selections(tasks=tasks), "pass-rate selection", chunk.failed
    )
    for selection in passes.values():
        if selection:
            selection.pop("revision_id", None)  # the revision is named by validation.json
    validations = _per_task(
        alive(),
        lambda part: validation_documents(
            part, revision_numbers=revisions, gates=gates, pass_rates=passes
        ),
        "provenance (validation.json)",
        chunk.failed,
    )
    reviews = _per_task(
        alive(),
        lambda part: review_documents(
            part, revision_numbers=revisions, reveal_reviewers=options.reveal_reviewers
        ),
        "provenance (review.json)",
        chunk.failed,
    )
    spool = ChunkSpool(work, name, common=modes.common_shas())
    written: list[list[Entry]] = []
    exported = []
    skipped = []
    with tempfile.TemporaryDirectory(prefix="hilbench-bundle-") as scratch:
        for task in chunk.tasks:
            if task.pk not in chunk.failed:
                # A task's scratch files (a SWE repository stream) go once its entries are
                # made: the spool keeps a file from disk compressed among its blobs.
                own = Path(scratch) / str(task.pk)
                try:
                    entries, entry = _task_entries(
                        chunk, task, names[task.pk], spool, options, own,
                        verdict=checked[str(task.pk)] if checked else None,
                        gates=gates[task.pk], revision=revisions[task.pk],
                        # Written into the task's files now: not held until the chunk is.
                        documents=(validations.pop(task.pk), reviews.pop(task.pk)),
                    )  # fmt: skip
                except WHOLE_EXPORT_ERRORS:
                    raise
                except Exception as error:  # noqa: BLE001 - this task's, named and left out
                    chunk.failed[task.pk] = task_failure("files", error)
                finally:
                    _remove_scratch(own)
            if task.pk in chunk.failed:
                skipped.append(chunk.skipped(task))
                continue
            # The spool orders the members itself (by path within the folder, then by task).
            written.append(list(entries.values()))
            exported.append(entry)
    record = spool.write(written)
    return {"record": record.as_dict(), "exported": exported, "skipped": skipped}


def _task_entries(
    chunk: _Chunk,
    task: Task,
    folder: str,
    spool: ChunkSpool,
    options: ExportOptions,
    own: Path,
    *,
    verdict: dict | None,
    gates: list[dict],
    revision: int,
    documents: tuple[dict, dict],
) -> tuple[dict[str, Entry], dict]:
    """One task's entries in the chunk and its report entry; ``verdict``: the check's (a
    draft has none, so its oracle runs here)."""
    files = chunk.files(task, folder, options, own)
    entries = {n: spool.entry(n, content) for n, content in files.entries.items()}
    if verdict:
        runs = verdict["oracle"]
        validated, reason = True, verdict["reason"]
    else:
        shas = {n: entry.sha for n, entry in entries.items()}
        runs = oracle_runs(task, files.entries, shas)
        validated, reason = validation_verdict(task, gates)
        # A draft carries the task whatever its oracle scores, but never calls it validated
        # unless the oracle scores 1 and the no-op 0 (as the check does).
        refused = oracle_verdict(runs) if validated else None
        if refused:
            validated, reason = False, refused
    judge = ask_human_judge(files.entries, folder)
    validation, review = documents
    for name, document in (
        (layout.VALIDATION, {**validation, "oracle": runs, _JUDGE: judge}),
        (layout.REVIEW, review),
    ):
        path = f"{folder}/{name}"
        entries[path] = spool.entry(path, layout.dumps(document))
    entry = _entry(task, folder, revision, validated, reason, runs)
    entry["allow_internet"] = _internet(files)
    entry[_JUDGE] = judge["said"]
    incomplete = _incomplete(files)
    if incomplete:
        entry["incomplete"] = incomplete
    return entries, entry


def _incomplete(files: TaskFiles) -> list[str]:
    """A release task's mode parts its folder lacked (``provenance/generated.json``)."""
    generated = files.entries.get(f"{files.folder}/{release_runtime.GENERATED}")
    if not isinstance(generated, bytes):
        return []
    return list(json_loads(generated).get("incomplete") or [])


def _internet(files: TaskFiles) -> bool:
    """What a release task's ``task.toml`` says of the internet (true in the release: its
    files are kept as shipped); a task the app writes has the lead's choice, not read back."""
    if f"{files.folder}/{release_runtime.GENERATED}" not in files.entries:  # not a release's
        return files.allow_internet
    toml = files.entries.get(f"{files.folder}/baseline/task.toml")
    if not isinstance(toml, bytes):
        return files.allow_internet
    try:
        environment = tomllib.loads(toml.decode("utf-8", "replace")).get("environment", {})
    except tomllib.TOMLDecodeError:
        return files.allow_internet
    return bool(environment.get("allow_internet", files.allow_internet))


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


# --- 4. assemble -----------------------------------------------------------------------------


def bundle_manifest(
    *, options: ExportOptions, project, selection: dict | None, skipped: list[dict] = ()
) -> dict:
    """``manifest.json`` but its ``contents`` and ``tasks`` (``contents.write_manifest``
    writes them, from the chunks' files)."""
    return {
        "format": layout.FORMAT,
        "format_version": layout.BUNDLE_VERSION,
        "app_version": app_version(),
        "created_at": timezone.now().isoformat(timespec="seconds"),
        "draft": options.draft,
        "reviewers_named": options.reveal_reviewers,
        "allow_internet": options.allow_internet,
        **({"release_llm_judge": options.llm_judge.settings()} if options.llm_judge else {}),
        "project": {"slug": project.slug, "name": project.name} if project else None,
        "selection": selection or {},
        # The tasks selected but left out, each with why (this database's task id too: the
        # lead looks it up here).
        "skipped": list(skipped),
    }


@dataclass
class Written:
    """The write step's chunks as the assembly reads them (:func:`written_gather`): their
    records, the manifest's task list (in a file), the tasks a part of which raised, and the
    first of the report's entries (``head``)."""

    records: list[ChunkRecord]
    tasks: TaskList
    skipped: list[dict]
    head: list[dict]

    @property
    def first_folder(self) -> str | None:
        return self.head[0]["folder"] if self.head else None


def written_gather(work: Path, results: Iterable[dict], *, head: int) -> Written:
    """``chunk_write``'s results, in bundle order, each read once and let go: the assembly
    of 50,000 tasks holds one chunk's entries at a time (the manifest's ``tasks`` go to a
    file under ``work``) and the first ``head`` (at least one) of the report's."""
    work.mkdir(parents=True, exist_ok=True)
    written = Written(records=[], tasks=TaskList(work / "manifest.tasks"), skipped=[], head=[])
    with written.tasks:
        for result in results:
            written.records.append(ChunkRecord.from_dict(result["record"]))
            written.skipped.extend(result.get("skipped", []))
            for entry in result["exported"]:
                if len(written.head) < max(head, 1):
                    written.head.append(entry)
                written.tasks.add({k: v for k, v in entry.items() if k != "task"})
    return written


def bundle_assemble(
    *,
    out: Path,
    work: Path,
    written: Written,
    options: ExportOptions,
    project,
    selection,
    skipped: list[dict] = (),
) -> dict[str, Any]:
    """Join the written chunks (:func:`written_gather`) into ``out``; ``skipped``: every
    task left out, named in the manifest."""
    manifest = bundle_manifest(
        options=options, project=project, selection=selection, skipped=skipped
    )
    # What a plain Harbor needs to run the bundle offline, first (``harness``).
    spool = ChunkSpool(work, "harness")
    top = harness_files([written.first_folder] if written.first_folder else [])
    records = [
        spool.write([[spool.entry(n, content) for n, content in top.items()]]),
        *written.records,
    ]
    return assemble(out, work, records, manifest, tasks=written.tasks)


def skipped_entries(ordered: list[int], checked: dict[str, dict]) -> list[dict]:
    """The report's entries of the tasks the check left out, in bundle order."""
    left_out = [pk for pk in ordered if not checked[str(pk)]["write"]]
    tasks = Task.objects.only("pk", "title", "source", "source_id").in_bulk(left_out)
    return [_skipped(tasks[pk], checked[str(pk)]["reason"]) for pk in left_out if pk in tasks]


def _skipped(task: Task, reason: str) -> dict:
    """A task left out, as the report, the page and ``manifest.json`` (``skipped``) name it."""
    return {
        "task": task.pk,
        "title": task.title,
        "source": task.source,
        "source_id": task.source_id,
        "reason": reason,
    }


__all__ = [
    "ExportOptions",
    "bundle_assemble",
    "chunk_check",
    "chunk_write",
    "export_folders",
    "export_order",
    "skipped_entries",
    "task_failure",
    "written_gather",
]
