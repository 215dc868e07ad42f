"""One task's files in the bundle layout (``layout``), before they are written.

``sql_files`` / ``swe_files`` fill a :class:`TaskFiles` with every file of the task folder but
the provenance; the writer adds those and streams everything in path order.
"""

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.databases import edited_copy
from hilbench_annotate.envspec import eval_script, harness_parser, spec_as_written
from hilbench_annotate.errors import DomainError
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.models import Task
from hilbench_annotate.spec import render_swe_statement
from hilbench_annotate.toolkit.archives import safe_name
from hilbench_annotate.toolkit.textbytes import UTF8, text_encode
from hilbench_annotate.vocabulary import Domain
from judge.services import project_calibration, task_context
from validators.requirements import resolve_requirements

from . import layout, modes, release, release_runtime
from .layout import APPLIED_EDIT_SCRIPT
from .repository import repository_export, sanitized_base
from .tarstream import file_sha256_cached

# source_metadata key under which an imported SQL task keeps the database-edit script its
# shipped database already carries (see reader.read_annotate).


@dataclass
class TaskFiles:
    """A task's files before they are written: bytes, or a path streamed from disk."""

    folder: str
    entries: dict[str, bytes | Path] = field(default_factory=dict)
    allow_internet: bool = False  # a lead's choice for this export (task.toml)

    def add(self, relative: str, content: bytes | str | Path) -> None:
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogateescape")
        self.entries[f"{self.folder}/{relative}"] = content


def _registry(snapshot: dict, domain: str) -> dict:
    blockers = []
    for b in snapshot["blockers"]:
        entry = {
            "id": b["id"],
            "type": b["type"],
            "description": b["description"],
            "resolution": b["resolution"],
            "example_questions": list(b["trigger_questions"]),
        }
        if domain == Domain.SQL:
            entry["subtype"] = b["subtype"] or None
        blockers.append(entry)
    return {"blockers": blockers}


def _annotate(task: Task, snapshot: dict) -> dict:
    env = snapshot.get("environment", {})
    source_metadata = {k: v for k, v in task.source_metadata.items() if k != APPLIED_EDIT_SCRIPT}
    document = {
        "format_version": layout.FORMAT_VERSION,
        # The release's own files follow, kept byte for byte (bundles/release.py).
        "release_files": task.release_files.exists(),
        "source": task.source,
        "source_id": task.source_id,
        "title": task.title,
        "original_spec": snapshot["original_spec"],
        "blocked_spec": snapshot["blocked_spec"],
        "source_metadata": source_metadata,
        "blockers": [
            {"id": b["id"], "surfaces_in": b["surfaces_in"], "criteria": b["criteria"]}
            for b in snapshot["blockers"]
        ],
    }
    if task.domain == Domain.SQL:
        document["environment"] = {
            "original_sql": env.get("original_sql", ""),
            "difficulty": env.get("difficulty", ""),
            # The shipped database already carries these edits.
            "applied_edit_script": env.get("edit_script")
            or task.source_metadata.get(APPLIED_EDIT_SCRIPT, ""),
        }
    else:
        document["environment"] = {
            "setup_patch": env.get("setup_patch", ""),
            "environment_spec": spec_as_written(env.get("environment_spec") or {}),
        }
    return document


def judge_settings_for(project) -> dict:
    """The embedded judge's settings the ask-human sidecar uses: the project's calibration."""
    calibration = project_calibration(project)
    if calibration is None:
        return {}
    return {"version": calibration.version, "thresholds": calibration.thresholds}


def _with_context(judge_settings: dict, snapshot: dict) -> dict:
    """The sidecar's judge settings for one task: the project's, and the task's own text,
    which the judge reads to decide relevance (``judge.services.task_context``)."""
    return {**judge_settings, "context": task_context(snapshot)}


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


def _ids(task: Task, folder: str, annotate: bytes, registry: bytes, data_sha: str):
    """Release-style ids: task_id from the source record, attempt_id from the content."""
    task_id = layout.stable_id(task.source, task.source_id)
    attempt = hashlib.sha256(annotate + registry + data_sha.encode()).hexdigest()[:24]
    return task_id, attempt, f"{task_id}_{attempt}"


def sql_files(
    task: Task, snapshot: dict, files: TaskFiles, index: int, *, judge_settings: dict
) -> None:
    env = task.sql_environment
    annotate = layout.dumps(_annotate(task, snapshot))
    registry = layout.dumps(_registry(snapshot, task.domain))
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
    task_id, attempt_id, attempt = _ids(task, files.folder, annotate, registry, data_sha)
    # Each CSV in its source's encoding: an imported file's own bytes (toolkit/textbytes.py).
    csvs = {t: text_encode(text, env.description_encodings.get(t, UTF8))
            for t, text in env.descriptions.items()}  # fmt: skip
    for table, content in sorted(csvs.items()):
        if not safe_name(table):
            raise DomainError(f"Task {task.pk}: description name {table!r} is not a file name.")
        files.add(f"{layout.SQL_DESCRIPTIONS}/{table}.csv", content)
    files.add(
        layout.SQL_BUSINESS_INFO,
        layout.dumps({"database_name": env.db_id, "business_info": env.business_info}),
    )
    files.add(layout.SQL_GROUND_TRUTH, env.gold_sql)
    files.add(layout.SQL_GOLDEN_OUTPUT, env.golden_output)
    files.add(
        layout.METADATA,
        layout.dumps(
            {
                "csv_index": index,
                "dataset_name": files.folder,
                "hf_task_id": None,
                "task_id": task_id,
                "attempt_id": attempt_id,
                "task_attempt_id": attempt,
                "database_name": env.db_id,
                "num_blockers": len(snapshot["blockers"]),
                "database_sha256": data_sha or None,
            }
        ),
    )
    files.add(layout.REGISTRY, registry)
    files.add(layout.ANNOTATE, annotate)
    data = {f"database_description/{t}.csv": csv for t, csv in csvs.items()}
    data["business_info.json"] = files.entries[f"{files.folder}/{layout.SQL_BUSINESS_INFO}"]
    if database is not None:
        data["database.sqlite"] = Path(database)
    _modes(
        files,
        task=task,
        snapshot=snapshot,
        resource=env.db_id,
        attempt=attempt,
        mode_files=lambda mode, image: modes.sql_mode_files(
            mode=mode,
            folder=files.folder,
            image=image,
            data=data,
            registry=registry,
            gold_sql=env.gold_sql,
            golden_output=env.golden_output,
            judge_settings=_with_context(judge_settings, snapshot),
        ),
    )


_SWE_STATS = {
    "missing parameters": "missing_parameter",
    "ambiguous requirements": "ambiguous_requirement",
    "contradictory requirements": "contradictory_requirement",
}


def _patched_files(patch: str) -> list[str]:
    """Paths a unified diff touches, in order (``diff --git a/X b/X`` headers)."""
    paths: list[str] = []
    for line in patch.splitlines():
        if line.startswith("diff --git ") and " b/" in line:
            path = line.rsplit(" b/", 1)[1]
            if path not in paths:
                paths.append(path)
    return paths


def _swe_metadata(
    task: Task, snapshot: dict, folder: str, spec: dict, ids: dict, base: str, head: str | None
) -> dict:
    """``shared/metadata.json`` of a SWE task authored in the app, in the release's fields."""
    env = task.swe_environment
    stats = {"total": len(snapshot["blockers"]), **{v: 0 for v in _SWE_STATS.values()}}
    for b in snapshot["blockers"]:
        if b["type"] in _SWE_STATS:
            stats[_SWE_STATS[b["type"]]] += 1
    return {
        "instance_id": task.source_metadata.get("instance_id") or task.source_id,
        "dataset_name": folder,
        "test_files": _patched_files(env.test_patch),
        # The release runs prebuilt images; ours are built from environment/, with the run
        # script and parser (when the task has them) where the release keeps them.
        "image_archive": None,
        "run_script_path": "/root/run_script.sh" if spec.get("run_script") else None,
        "parser_script_path": "/root/parser.py" if spec.get("parser_script") else None,
        "repo_name": "app",
        "repo_name_source": env.repo_name,
        # The commit the shipped repository is at (the setup patch applied): the one the
        # release's evaluator resets to. annotate/ keeps the tree before it.
        "base_commit": base,
        # The release's naming: the hil CLI runs a hilbench-swe:* image as it is (repository
        # at /app, dependencies installed); build_images.sh of ``hil_workspace`` builds it.
        "image_name": f"hilbench-swe:{ids['task_attempt_id']}",
        "log_parser": harness_parser(spec.get("log_parser") or "pytest"),
        "language": spec.get("language") or task.source_metadata.get("repo_language") or "unknown",
        "blocker_stats": stats,
        "swe_bench_metadata": {"FAIL_TO_PASS": env.fail_to_pass, "PASS_TO_PASS": env.pass_to_pass},
        "test_cmd": env.test_command,
        "test_patch": env.test_patch,
        **ids,
        "repository_archive": layout.SWE_REPOSITORY.removeprefix("shared/") if head else None,
        "repository_head": head,
    }


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
    document = _annotate(task, snapshot)
    if env.repository is not None:
        document["environment"]["base_commit"] = sanitized_base(
            mirror=env.repository.path, base_commit=env.base_commit
        )
    annotate = layout.dumps(document)
    registry = layout.dumps(_registry(snapshot, task.domain))
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
    task_id, attempt_id, attempt = _ids(task, files.folder, annotate, registry, head or "")
    spec = snapshot["environment"].get("environment_spec") or {}
    files.add(layout.SWE_STATEMENT, render_swe_statement(snapshot["blocked_spec"]))
    ids = {"task_id": task_id, "attempt_id": attempt_id, "task_attempt_id": attempt}
    files.add(
        layout.METADATA,
        layout.dumps(_swe_metadata(task, snapshot, files.folder, spec, ids, head or base, head)),
    )
    files.add(layout.REGISTRY, registry)
    files.add(layout.ANNOTATE, annotate)
    tests = {
        "fail_to_pass": env.fail_to_pass,
        "pass_to_pass": env.pass_to_pass,
        "test_command": eval_script(spec, env.test_command),
        "log_parser": spec.get("log_parser") or "pytest",
    }
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
        attempt=attempt,
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
            judge_settings=_with_context(judge_settings, snapshot),
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
    files.add(layout.ANNOTATE, layout.dumps(_annotate(task, snapshot)))
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
        judge_settings=_with_context(judge_settings, snapshot),
        llm_judge=llm_judge,
    )
    for path, content in added.items():
        files.add(path, content)
    note = release_runtime.data_note(present, task.domain)
    document = release_runtime.generated_document(
        [*added, release_runtime.GENERATED], note, release_runtime.missing_parts(kept)
    )
    files.add(release_runtime.GENERATED, layout.dumps(document))
