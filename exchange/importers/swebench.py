from __future__ import annotations

import json
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

from hilbench_annotate.envspec import spec_clean
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.models import Project, Task
from hilbench_annotate.repositories import (
    commit_exists,
    repository_has_tags,
    repository_mirror,
)
from hilbench_annotate.services import task_create_many
from hilbench_annotate.spec import swe_title
from hilbench_annotate.toolkit.iteration import fewer_collections
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.vocabulary import Domain, TaskSource
from validators.requirements import requirements_at

from .common import ImportReport
from .records import RecordStreamError, iter_records
from .swebench_env import environment_from_swebench

REQUIRED_TEXT = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch")


def _test_list(record: dict[str, Any], name: str) -> list[str] | str:
    """FAIL_TO_PASS / PASS_TO_PASS: upper-case (SWE-bench) or lower-case (SWE-Bench Pro),
    a list or a JSON-encoded list (SWE-bench stores them as strings). Returns a reason
    string when the value is unusable."""
    value = record.get(name.upper(), record.get(name.lower()))
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json_loads(value) if value.strip() else []
        except json.JSONDecodeError:
            return f"{name} is a string but not a JSON list"
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        return f"{name} must be a list of test ids"
    return value


def _normalise(record: Any) -> dict[str, Any] | str:
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    missing = [k for k in REQUIRED_TEXT if not isinstance(record.get(k), str)]
    if missing:
        return f"missing or non-text field(s) {', '.join(missing)}"
    empty = [k for k in REQUIRED_TEXT if k != "problem_statement" and not record[k].strip()]
    if empty:
        return f"empty field(s) {', '.join(empty)}"
    fail_to_pass = _test_list(record, "FAIL_TO_PASS")
    pass_to_pass = _test_list(record, "PASS_TO_PASS")
    for value in (fail_to_pass, pass_to_pass):
        if isinstance(value, str):
            return value
    if not fail_to_pass:
        return "FAIL_TO_PASS is empty: a task needs at least one test that the fix makes pass"
    for optional in ("requirements", "interface", "test_cmd", "test_command"):
        if optional in record and not isinstance(record[optional], str | type(None)):
            return f"{optional} must be text"
    return {
        "instance_id": record["instance_id"].strip(),
        "repo": record["repo"].strip(),
        "base_commit": record["base_commit"].strip(),
        "sections": {
            "problem_statement": record["problem_statement"],
            "requirements": record.get("requirements") or "",
            "interface": record.get("interface") or "",
        },
        "patch": record["patch"],
        "test_patch": record["test_patch"],
        "fail_to_pass": fail_to_pass,
        "pass_to_pass": pass_to_pass,
        "test_command": record.get("test_cmd") or record.get("test_command") or "",
        "environment_spec": record.get("environment_spec")
        if isinstance(record.get("environment_spec"), dict)
        else None,
        "pro_environment": {
            k: record[k]
            for k in ("log_parser", "run_script", "parser_script")
            if isinstance(record.get(k), str) and record[k].strip()
        },
        "extra": {
            k: record[k]
            for k in ("version", "created_at", "environment_setup_commit", "repo_language")
            if k in record
        },
    }


def _validate_records(instances: Path, limit: int | None, label: str) -> tuple[set[str], int]:
    """Pass 1 over the records: refuse the file (``label``, as the user knows it) on any bad
    or repeated record, on where it is not valid JSON, or on records naming more than one
    repository; the repository names and the records."""
    problems: list[tuple[object, str]] = []
    broken = None
    seen: dict[str, int] = {}
    repo_names: set[str] = set()
    try:
        for index, record in islice(iter_records(instances), limit):
            normal = _normalise(record)
            if isinstance(normal, str):
                problems.append((index, normal))
                continue
            if normal["instance_id"] in seen:
                problems.append(
                    (index, f"duplicate instance_id of record {seen[normal['instance_id']]}")
                )
                continue
            seen[normal["instance_id"]] = index
            repo_names.add(normal["repo"])
    except RecordStreamError as exc:
        if exc.syntax:
            broken = exc
        else:
            problems.append((exc.where, exc.reason))
    if not problems and not broken and len(repo_names) > 1:
        problems.append(
            (
                "file",
                f"records name {len(repo_names)} repositories {sorted(repo_names)}; "
                "--repo mirrors one, so import one repository's instances per run",
            )
        )
    parts = [f"{len(problems)} bad record(s)"] if problems else []
    if broken:
        parts.append(broken.syntax)
        problems.append((broken.where, broken.reason))
    if parts:
        raise ImportRefused(f"{label}: {'; '.join(parts)}; nothing was imported.", problems)
    return repo_names, len(seen)


def _mirrored_repository(
    *, project: Project, instances: Path, limit: int | None, repo_name: str, repo: str, label: str
):
    """Mirror the repository into the project's store; refuse the file if a base commit is
    not in it."""
    try:
        repository = repository_mirror(project=project, repo_name=repo_name, origin=repo)
    except DomainError as exc:
        raise ImportRefused(str(exc), []) from exc
    problems: list[tuple[object, str]] = []
    for index, record in islice(iter_records(instances), limit):
        base_commit = record["base_commit"].strip()
        if not commit_exists(repository, base_commit):
            problems.append((index, f"base_commit {base_commit} is not in {repo}"))
    if problems:
        raise ImportRefused(
            f"{label}: {len(problems)} record(s) name commits the repository lacks; "
            "nothing was imported.",
            problems,
        )
    return repository


def _environment(normal: dict, repo_name: str, repository, has_tags: bool, notes: _Notes):
    """The record's environment specification and test command: SWE-bench's for its
    repository and version; a record's own test command and parser (SWE-Bench Pro) win.
    What cannot build here is noted against the record (``notes``)."""
    extra = normal["extra"]
    instance = normal["instance_id"]
    setup_commit = str(extra.get("environment_setup_commit") or "").strip()
    spec, test_command, found = environment_from_swebench(
        repo=repo_name,
        version=str(extra.get("version") or ""),
        test_patch=normal["test_patch"],
        repository_has_tags=has_tags,
        setup_commit=setup_commit or normal["base_commit"],
    )
    if normal["environment_spec"] is not None:  # our own export, or a hand-written record
        try:
            return spec_clean(normal["environment_spec"]), normal["test_command"] or test_command
        except DomainError as exc:
            notes.add(str(exc), instance)
    for note in found:
        notes.add(note, instance)
    if normal["pro_environment"]:
        try:
            spec = spec_clean({**spec, **normal["pro_environment"]})
        except DomainError as exc:
            notes.add(str(exc), instance)
    if spec["requirement_files"]:
        if setup_commit and not notes.has_commit(repository, setup_commit):
            notes.add(
                f"environment_setup_commit {setup_commit[:12]} is not in the "
                "repository; the requirement files are read at the base commit",
                instance,
            )
            spec["requirements_commit"] = normal["base_commit"]
        _found, problem = requirements_at(
            repository.path, spec["requirements_commit"], tuple(spec["requirement_files"])
        )
        if problem:
            notes.add(f"the environment cannot build: {problem}", instance)
    return spec, normal["test_command"] or test_command


class _Notes:
    """One import's notes, each once, naming the instances it is about; and what it learnt
    of the mirror."""

    def __init__(self):
        self.instances: dict[str, list[str]] = {}
        self._commits: dict[str, bool] = {}

    def has_commit(self, repository, commit: str) -> bool:
        """Whether the mirror holds ``commit``, asked once per import (instances share
        setup commits)."""
        if commit not in self._commits:
            self._commits[commit] = commit_exists(repository, commit)
        return self._commits[commit]

    def add(self, note: str, instance: str) -> None:
        self.instances.setdefault(note, []).append(instance)

    def into(self, report: ImportReport) -> None:
        for note, instances in self.instances.items():
            shown = ", ".join(instances[:10]) + (
                f" and {len(instances) - 10} more" if len(instances) > 10 else ""
            )
            report.notes.append(f"{note} ({shown})")


def _new_task_records(
    *,
    project: Project,
    instances: Path,
    limit: int | None,
    repository,
    repo_name: str,
    report: ImportReport,
):
    """Pass 2: stream the records again; yield ``task_create``'s arguments for each task
    not there yet."""
    existing = set(
        Task.objects.filter(project=project, source=TaskSource.SWEBENCH).values_list(
            "source_id", flat=True
        )
    )
    has_tags = repository_has_tags(repository)
    notes = _Notes()
    for _index, record in islice(iter_records(instances), limit):
        normal = _normalise(record)
        if normal["instance_id"] in existing:
            report.unchanged.append(normal["instance_id"])
            continue
        spec, test_command = _environment(normal, repo_name, repository, has_tags, notes)
        report.created.append(normal["instance_id"])
        yield {
            "domain": Domain.SWE,
            "source": TaskSource.SWEBENCH,
            "source_id": normal["instance_id"],
            "title": swe_title(normal["sections"]),
            "original_spec": normal["sections"],
            "environment": {
                "repository": repository,
                "repo_name": repo_name,
                "base_commit": normal["base_commit"],
                "gold_patch": normal["patch"],
                "test_patch": normal["test_patch"],
                "fail_to_pass": normal["fail_to_pass"],
                "pass_to_pass": normal["pass_to_pass"],
                "test_command": test_command,
                "environment_spec": spec,
            },
            "source_metadata": {"instance_id": normal["instance_id"], **normal["extra"]},
        }
    notes.into(report)  # once every record is read (the generator is drained)


def _create_tasks(
    *,
    project: Project,
    instances: Path,
    limit: int | None,
    repository,
    repo_name: str,
    actor,
    progress: Callable[[int], None] | None,
) -> ImportReport:
    """Pass 2, written in chunks by ``task_create_many``, all in one transaction;
    ``progress(done)`` after each chunk (records handled)."""
    report = ImportReport()
    task_create_many(
        project=project,
        records=_new_task_records(
            project=project,
            instances=instances,
            limit=limit,
            repository=repository,
            repo_name=repo_name,
            report=report,
        ),
        author=actor,
        reason="imported",
        on_chunk=(lambda written: progress(written + len(report.unchanged))) if progress else None,
    )
    return report


@fewer_collections()
def import_swebench(
    *,
    project: Project,
    instances: Path,
    repo: str,
    actor=None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    label: str | None = None,
) -> ImportReport:
    """Import SWE-bench / SWE-Bench Pro records on one repository, mirrored into the store.
    ``progress(done, total)``: records handled of the file's, after the check and after
    each chunk written. ``label``: the file's name in messages (the name it was uploaded
    as; by default its own)."""
    instances = Path(instances)
    if not instances.is_file():
        raise ImportRefused(f"Instances file {instances} does not exist.", [])
    label = label or instances.name
    repo_names, total = _validate_records(instances, limit, label)
    if not repo_names:
        return ImportReport(notes=["the file holds no records"])
    if progress:
        progress(0, total)
    (repo_name,) = repo_names
    repository = _mirrored_repository(
        project=project,
        instances=instances,
        limit=limit,
        repo_name=repo_name,
        repo=repo,
        label=label,
    )
    return _create_tasks(
        project=project,
        instances=instances,
        limit=limit,
        repository=repository,
        repo_name=repo_name,
        actor=actor,
        progress=(lambda done: progress(done, total)) if progress else None,
    )
