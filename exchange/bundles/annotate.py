"""Our own files in a task folder (``annotate/``): what the release's layout cannot carry —
both specifications, the blockers' extra fields, the environment edits and the repository
stream. The release importer calls :func:`read_annotate` when a folder has them.
"""

import json
import shutil
from pathlib import Path
from typing import Any

from hilbench_annotate.envspec import spec_clean
from hilbench_annotate.errors import DomainError
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.spec import render_swe_statement
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.vocabulary import Domain, TaskSource

from . import layout
from .layout import APPLIED_EDIT_SCRIPT
from .repository import rebuild_base, repository_unpack

_TEXT_SPEC = {
    "sql": ("question", "evidence"),
    "swe": ("problem_statement", "requirements", "interface"),
}


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "surrogateescape")


def read_annotate(folder: Path, item: dict[str, Any], workdir: Path) -> list[str]:
    """Fill ``item`` (from the release reader) with ``annotate/task.json``'s authoring state;
    return the problems. Checks that the release files agree with it."""
    try:
        annotate = json_loads(_text(folder / layout.ANNOTATE))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return [f"{layout.ANNOTATE} is not valid JSON: {exc}"]
    if not isinstance(annotate, dict) or annotate.get("format_version") != layout.FORMAT_VERSION:
        return [f"{layout.ANNOTATE} is not format version {layout.FORMAT_VERSION}"]
    domain = item["domain"]
    problems = []
    for key in ("original_spec", "blocked_spec"):
        spec = annotate.get(key)
        if (
            not isinstance(spec, dict)
            or set(spec) != set(_TEXT_SPEC[domain])
            or not all(isinstance(v, str) for v in spec.values())
        ):
            problems.append(f"{layout.ANNOTATE}: {key} must hold the sections {_TEXT_SPEC[domain]}")
    source = annotate.get("source")
    if source not in TaskSource.values:
        problems.append(f"{layout.ANNOTATE}: unknown source {source!r}")
    if not isinstance(annotate.get("source_id"), str) or not annotate.get("source_id"):
        problems.append(f"{layout.ANNOTATE}: source_id must be non-empty text")
    extras = {b.get("id"): b for b in annotate.get("blockers", []) if isinstance(b, dict)}
    if [b["key"] for b in item["blockers"]] != [b.get("id") for b in annotate.get("blockers", [])]:
        problems.append(f"{layout.ANNOTATE}: blockers do not match the registry's")
    environment = annotate.get("environment")
    if not isinstance(environment, dict):
        problems.append(f"{layout.ANNOTATE}: environment must be an object")
    if problems:
        return problems

    for blocker in item["blockers"]:
        extra = extras[blocker["key"]]
        blocker["surfaces_in"] = extra.get("surfaces_in") or ""
        blocker["criteria"] = extra.get("criteria") or {}
    source_metadata = dict(annotate.get("source_metadata") or {})
    env = item["environment"]
    if domain == Domain.SQL:
        env["original_sql"] = environment.get("original_sql", "")
        env["difficulty"] = environment.get("difficulty", "")
        # The shipped database already carries the edits: keep the script for the record,
        # never run it again on that database.
        env["edit_script"] = ""
        if environment.get("applied_edit_script"):
            source_metadata[APPLIED_EDIT_SCRIPT] = environment["applied_edit_script"]
    else:
        env["setup_patch"] = environment.get("setup_patch", "")
        item["annotated_base"] = environment.get("base_commit", "")
        try:
            env["environment_spec"] = spec_clean(environment.get("environment_spec") or {})
        except DomainError as exc:
            problems.append(f"{layout.ANNOTATE}: {exc}")
        problems.extend(_read_repository(folder, item, workdir))
        statement = _text(folder / layout.SWE_STATEMENT)
        if render_swe_statement(annotate["blocked_spec"]) != statement:
            problems.append(f"{layout.SWE_STATEMENT} differs from the blocked specification")
    item["release"] = bool(annotate.get("release_files"))
    item.update(
        source=source,
        source_id=annotate["source_id"],
        title=annotate.get("title") or annotate["source_id"],
        spec=annotate["original_spec"],
        blocked_spec=annotate["blocked_spec"],
        metadata=source_metadata,
        notes=[
            n
            for n in item["notes"]
            if "repository_source" not in item or not n.startswith("Repository ")
        ],
        from_bundle=True,
    )
    problems.extend(_check_instructions(folder, item))
    return problems


def _check_instructions(folder: Path, item: dict) -> list[str]:
    snapshot = {
        "domain": item["domain"],
        "blocked_spec": item["blocked_spec"],
        "environment": {"db_id": item["environment"].get("db_id", "")},
        "blockers": [
            {"description": b["description"], "resolution": b["resolution"]}
            for b in item["blockers"]
        ],
    }
    expected = task_instructions(snapshot)
    return [
        f"{mode}/instruction.md differs from what the specification and registry give"
        for mode in MODES
        if not (folder / mode / "instruction.md").is_file()
        or _text(folder / mode / "instruction.md") != expected[mode]
    ]


def _read_repository(folder: Path, item: dict, workdir: Path) -> list[str]:
    stream = folder / layout.SWE_REPOSITORY
    if not stream.is_file():
        return []
    target = workdir / f"repo-{folder.name}"
    if target.exists():
        shutil.rmtree(target)
    env = item["environment"]
    try:
        head = repository_unpack(stream=stream, dest=target)
        base = rebuild_base(repo=target, head=head, setup_patch=env["setup_patch"])
    except DomainError as exc:
        return [f"{layout.SWE_REPOSITORY}: {exc}"]
    if head != env["base_commit"]:
        return [
            f"{layout.SWE_REPOSITORY}: its head is {head[:12]}, metadata.json's base_commit "
            f"says {env['base_commit'][:12]}"
        ]
    expected = item.get("annotated_base") or base
    if base != expected:
        return [
            f"{layout.SWE_REPOSITORY}: its tree before the setup patch is {base[:12]}, "
            f"{layout.ANNOTATE} says {expected[:12]}"
        ]
    env["base_commit"] = base
    item["repository_source"] = (target, base)
    return []
