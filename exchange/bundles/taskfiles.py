"""One task's files in the bundle layout (``layout``), before they are written.

``sql_files`` / ``swe_files`` fill a :class:`TaskFiles` with every file of the task folder but
the provenance; the writer adds those and streams everything in path order. The JSON
documents come from ``documents`` as values, and :meth:`TaskFiles.add` serialises them.
"""

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.databases import edited_copy
from hilbench_annotate.errors import DomainError
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.models import Task
from hilbench_annotate.spec import render_swe_statement
from hilbench_annotate.toolkit.archives import safe_name
from hilbench_annotate.toolkit.textbytes import UTF8, text_encode
from hilbench_annotate.vocabulary import Domain
from validators.requirements import resolve_requirements

from . import documents, layout, modes, release, release_runtime
from .repository import repository_export, sanitized_base
from .tarstream import file_sha256_cached


@dataclass
class TaskFiles:
    """A task's files before they are written: bytes, or a path streamed from disk.

    The one place a task's files become bytes: a document (a dict or list) is written as
    every JSON file of the bundle is (``layout.dumps``), a text (task.toml, an instruction,
    the gold SQL) as UTF-8 keeping any byte it was read from (``surrogateescape``)."""

    folder: str
    entries: dict[str, bytes | Path] = field(default_factory=dict)
    allow_internet: bool = False  # a lead's choice for this export (task.toml)

    def add(self, relative: str, content: bytes | str | Path | dict | list) -> bytes | Path:
        """Store ``content`` at ``relative``; returns what is stored."""
        if isinstance(content, dict | list):
            content = layout.dumps(content)
        elif isinstance(content, str):
            content = content.encode("utf-8", "surrogateescape")
        self.entries[f"{self.folder}/{relative}"] = content
        return content


def _modes(
    files: TaskFiles,
    *,
    task: Task,
    snapshot: dict,
    resource: str,
    attempt: str,
    mode_files,
) -> None:
    """Each mode's instruction, task.toml and self-contained folder (``modes``);
    ``mode_files(mode, image)`` gives the folder's other files."""
    texts = task_instructions(snapshot)
    for mode in MODES:
        image = f"hilbench-annotate/{files.folder}-{mode}:{attempt.rsplit('_', 1)[-1]}"
        files.add(f"{mode}/instruction.md", texts[mode])
        files.add(
            f"{mode}/task.toml",
            layout.task_toml(
                domain=task.domain,
                folder=files.folder,
                mode=mode,
                resource=resource,
                task_attempt_id=attempt,
                image=image,
                verifier=modes.verifier_toml(task.domain, mode),
                allow_internet=files.allow_internet,
            ),
        )
        for name, content in mode_files(mode, image).items():
            files.add(f"{mode}/{name}", content)


def _ids(task: Task, annotate: bytes, registry: bytes, data_sha: str) -> dict[str, str]:
    """Release-style ids: task_id from the source record, attempt_id from the content."""
    task_id = layout.stable_id(task.source, task.source_id)
    attempt = hashlib.sha256(annotate + registry + data_sha.encode()).hexdigest()[:24]
    return {"task_id": task_id, "attempt_id": attempt, "task_attempt_id": f"{task_id}_{attempt}"}


def sql_files(
    task: Task, snapshot: dict, files: TaskFiles, index: int, *, judge_settings: dict
) -> None:
    env = task.sql_environment
    annotate = files.add(layout.ANNOTATE, documents.annotate(task, snapshot))
    registry = files.add(layout.REGISTRY, documents.registry(snapshot, task.domain))
    database = None
    if env.database is not None:
        database = edited_copy(
            project_id=task.project_id, source=env.database.path, edit_script=env.edit_script
        )
        files.add(layout.SQL_DATABASE, Path(database))
    data_sha = (
        ""
        if database is None
        else env.database.sha256
        if Path(database) == env.database.path
        else file_sha256_cached(Path(database))
    )
    ids = _ids(task, annotate, registry, data_sha)
    # Each CSV in its source's encoding: an imported file's own bytes (toolkit/textbytes.py).
    csvs = {t: text_encode(text, env.description_encodings.get(t, UTF8))
            for t, text in env.descriptions.items()}  # fmt: skip
    for table, content in sorted(csvs.items()):
        if not safe_name(table):
            raise DomainError(f"Task {task.pk}: description name {table!r} is not a file name.")
        files.add(f"{layout.SQL_DESCRIPTIONS}/{table}.csv", content)
    business_info = files.add(layout.SQL_BUSINESS_INFO, documents.business_info(env))
    files.add(layout.SQL_GROUND_TRUTH, env.gold_sql)
    files.add(layout.SQL_GOLDEN_OUTPUT, env.golden_output)
    files.add(
        layout.METADATA,
        documents.sql_metadata(
            env=env, snapshot=snapshot, folder=files.folder, index=index, ids=ids,
            data_sha=data_sha,
        ),
    )  # fmt: skip
    data = {f"database_description/{t}.csv": csv for t, csv in csvs.items()}
    data["business_info.json"] = business_info
    if database is not None:
        data["database.sqlite"] = Path(database)
    _modes(
        files,
        task=task,
        snapshot=snapshot,
        resource=env.db_id,
        attempt=ids["task_attempt_id"],
        mode_files=lambda mode, image: modes.sql_mode_files(
            mode=mode,
            folder=files.folder,
            image=image,
            data=data,
            registry=registry,
            gold_sql=env.gold_sql,
            golden_output=env.golden_output,
            judge_settings=documents.with_context(judge_settings, snapshot),
        ),
    )


def swe_files(
    task: Task,
    snapshot: dict,
    files: TaskFiles,
    index: int,
    workdir: Path,
    *,
    judge_settings: dict,
) -> None:
    env = task.swe_environment
    document = documents.annotate(task, snapshot)
    if env.repository is not None:
        document["environment"]["base_commit"] = sanitized_base(
            mirror=env.repository.path, base_commit=env.base_commit
        )
    annotate = files.add(layout.ANNOTATE, document)
    registry = files.add(layout.REGISTRY, documents.registry(snapshot, task.domain))
    head, base = None, env.base_commit
    if env.repository is not None:
        stream = workdir / "repository.fast-export"
        head = repository_export(
            mirror=env.repository.path,
            base_commit=env.base_commit,
            setup_patch=env.setup_patch,
            out=stream,
            workdir=workdir,
        )
        base = sanitized_base(mirror=env.repository.path, base_commit=env.base_commit)
        files.add(layout.SWE_REPOSITORY, stream)
    ids = _ids(task, annotate, registry, head or "")
    spec = snapshot["environment"].get("environment_spec") or {}
    files.add(layout.SWE_STATEMENT, render_swe_statement(snapshot["blocked_spec"]))
    files.add(
        layout.METADATA,
        documents.swe_metadata(task, snapshot, files.folder, spec, ids, head or base, head),
    )
    tests = documents.swe_tests(env, spec)
    requirements = None
    if spec.get("requirement_files") and env.repository is not None:
        requirements = resolve_requirements(
            Path(env.repository.path),
            spec.get("requirements_commit") or env.base_commit,
            spec["requirement_files"],
        ).text
    _modes(
        files,
        task=task,
        snapshot=snapshot,
        resource=env.repo_name,
        attempt=ids["task_attempt_id"],
        mode_files=lambda mode, image: modes.swe_mode_files(
            mode=mode,
            folder=files.folder,
            image=image,
            repository=stream if head else None,
            spec=spec,
            registry=registry,
            gold_patch=env.gold_patch,
            test_patch=env.test_patch,
            tests=tests,
            requirements=requirements,
            judge_settings=documents.with_context(judge_settings, snapshot),
        ),
    )


def release_task_files(
    task: Task, snapshot: dict, files: TaskFiles, *, judge_settings: dict, llm_judge=None
) -> None:
    """A task imported from the release: its release files (as kept, or rewritten where
    edited), our annotate/ file, the database if the app holds one, and what Harbor needs
    to run it that the release does not publish (``release_runtime``, listed in
    ``provenance/generated.json``)."""
    kept = release.export_files(task, snapshot)
    for path, content in kept.items():
        files.add(path, content)
    files.add(layout.ANNOTATE, documents.annotate(task, snapshot))
    present: dict[str, bytes | Path] = dict(kept)
    if task.domain == Domain.SQL and task.sql_environment.database is not None:
        env = task.sql_environment
        database = edited_copy(
            project_id=task.project_id, source=env.database.path, edit_script=env.edit_script
        )
        files.add(layout.SQL_DATABASE, Path(database))
        present[layout.SQL_DATABASE] = Path(database)
    added = release_runtime.generated_files(
        snapshot,
        present,
        judge_settings=documents.with_context(judge_settings, snapshot),
        llm_judge=llm_judge,
    )
    for path, content in added.items():
        files.add(path, content)
    note = release_runtime.data_note(present, task.domain)
    document = release_runtime.generated_document(
        [*added, release_runtime.GENERATED], note, release_runtime.missing_parts(kept)
    )
    files.add(release_runtime.GENERATED, document)
