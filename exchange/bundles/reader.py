"""Import bundles: ours (with ``manifest.json``) and the release's task folders.

An archive is checked member by member before anything is unpacked (``archives``: absolute
paths, ``..``, links, devices, duplicates, size and file-count limits from settings); then
every file is checked against the manifest's sha256 and the manifest must list exactly the
files present. Only then are task folders read — through the release importer
(``importers.hilbench``), which calls :func:`read_annotate` for our extra files — and every
task is created in one transaction. Any bad entry refuses the whole bundle: nothing is
imported.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings

from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.spec import render_swe_statement
from hilbench_annotate.toolkit.archives import ArchiveRefused, extract_archive
from hilbench_annotate.vocabulary import Domain, TaskSource

from . import layout
from .tarstream import file_sha256

_TEXT_SPEC = {
    "sql": ("question", "evidence"),
    "swe": ("problem_statement", "requirements", "interface"),
}


def _walk_files(root: Path) -> tuple[list[str], list[str]]:
    """Relative paths of the regular files under ``root``, and what else is there."""
    files, problems = [], []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                problems.append(f"{relative!r} is a link")
            elif name in filenames and not path.is_file():
                problems.append(f"{relative!r} is a special file")
            elif name in filenames:
                files.append(relative)
    return sorted(files), problems


def verify_manifest(root: Path) -> dict | None:
    """Check ``root/manifest.json`` against the files; None when there is no manifest
    (release folders). Raises ImportRefused naming every mismatch."""
    files, problems = _walk_files(root)
    manifest_path = root / layout.MANIFEST
    if not manifest_path.is_file():
        if problems:
            raise ImportRefused(
                "The bundle holds links or special files; nothing was imported.",
                [("bundle", p) for p in problems],
            )
        return None
    try:
        manifest = json.loads(manifest_path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportRefused(f"manifest.json is not valid JSON: {exc}", []) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != layout.FORMAT:
        raise ImportRefused(f"manifest.json is not a {layout.FORMAT} manifest.", [])
    if manifest.get("format_version") != layout.FORMAT_VERSION:
        raise ImportRefused(
            f"Bundle format version {manifest.get('format_version')!r}; this app reads "
            f"{layout.FORMAT_VERSION}.",
            [],
        )
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise ImportRefused('manifest.json has no "files" object.', [])
    present = set(files) - {layout.MANIFEST}
    for name in sorted(set(listed) - present):
        problems.append(f"{name}: listed in the manifest but absent")
    for name in sorted(present - set(listed)):
        problems.append(f"{name}: present but not listed in the manifest")
    for name in sorted(present & set(listed)):
        if file_sha256(root / name) != listed[name]:
            problems.append(f"{name}: sha256 does not match the manifest (changed or corrupt)")
    if problems:
        raise ImportRefused(
            f"{len(problems)} file(s) of the bundle fail verification; nothing was imported.",
            [("file", p) for p in problems],
        )
    return manifest


def _bundle_root(extracted: Path) -> Path:
    """The folder holding the manifest or the task folders (one wrapping folder allowed)."""
    if (extracted / layout.MANIFEST).is_file():
        return extracted
    children = [p for p in extracted.iterdir()]
    if len(children) == 1 and children[0].is_dir() and not children[0].is_symlink():
        return children[0]
    return extracted


def import_bundle(*, project, path: Path, actor=None):
    """Import a bundle file (``.tar.gz`` / ``.tar`` / ``.zip``) or folder into ``project``.

    Returns the ImportReport; raises ImportRefused (nothing imported) on any bad entry.
    """
    from exchange.importers.hilbench import import_hilbench

    path = Path(path)
    if not path.exists():
        raise ImportRefused(f"{path} does not exist.", [])
    settings.UPLOAD_STORE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=settings.UPLOAD_STORE, prefix=".bundle-") as scratch:
        if path.is_dir():
            root = path
        else:
            try:
                extracted = extract_archive(
                    path,
                    Path(scratch) / "bundle",
                    max_members=settings.BUNDLE_MAX_FILES,
                    max_bytes=settings.BUNDLE_MAX_BYTES,
                )
            except ArchiveRefused as exc:
                raise ImportRefused(
                    f"{path.name} refused; nothing was imported.",
                    [("archive", p) for p in exc.problems],
                ) from exc
            except DomainError as exc:
                raise ImportRefused(str(exc), []) from exc
            root = _bundle_root(extracted)
        manifest = verify_manifest(root)
        report = import_hilbench(project=project, root=root, actor=actor)
        if manifest and manifest.get("draft"):
            report.notes.append(
                "This is a draft bundle: its tasks did not all pass every gate when exported."
            )
        return report


# --- our extra files, read for the release importer ------------------------------------------


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "surrogateescape")


def read_annotate(folder: Path, item: dict[str, Any], workdir: Path) -> list[str]:
    """Fill ``item`` (from the release reader) with ``annotate/task.json``'s authoring state;
    return the problems. Checks that the release files agree with it."""
    try:
        annotate = json.loads(_text(folder / layout.ANNOTATE))
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
            from .taskfiles import APPLIED_EDIT_SCRIPT

            source_metadata[APPLIED_EDIT_SCRIPT] = environment["applied_edit_script"]
    else:
        env["setup_patch"] = environment.get("setup_patch", "")
        problems.extend(_read_repository(folder, item, workdir))
        statement = _text(folder / layout.SWE_STATEMENT)
        if render_swe_statement(annotate["blocked_spec"]) != statement:
            problems.append(f"{layout.SWE_STATEMENT} differs from the blocked specification")
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
    from .repository import rebuild_base, repository_unpack

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
    if base != env["base_commit"]:
        return [
            f"{layout.SWE_REPOSITORY}: its base commit is {base[:12]}, metadata.json says "
            f"{env['base_commit'][:12]}"
        ]
    item["repository_source"] = (target, base)
    return []
