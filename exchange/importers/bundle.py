"""Import bundles: ours (with ``manifest.json``) and the release's task folders.

An archive is checked member by member before anything is unpacked (``archives``: absolute
paths, ``..``, links, devices, duplicates, size and file-count limits from settings); then
every file is checked against the manifest's sha256 and the manifest must list exactly the
files present. Only then are task folders read — through the release importer
(``importers.hilbench``), which reads our extra files with ``annotate.read_annotate`` — and every
task is created in one transaction. Any bad entry refuses the whole bundle: nothing is
imported.
"""

import json
import os
import tempfile
from pathlib import Path

from django.conf import settings

from exchange.bundles import layout
from exchange.bundles.tarstream import file_sha256
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.toolkit.archives import ArchiveRefused, extract_archive
from hilbench_annotate.toolkit.jsontext import json_loads

from .hilbench import import_hilbench


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
        manifest = json_loads(manifest_path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportRefused(f"manifest.json is not valid JSON: {exc}", []) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != layout.FORMAT:
        raise ImportRefused(f"manifest.json is not a {layout.FORMAT} manifest.", [])
    version = manifest.get("format_version")
    if isinstance(version, bool) or version not in layout.BUNDLE_VERSIONS:
        raise ImportRefused(
            f"Bundle format version {manifest.get('format_version')!r}; this app reads "
            + " and ".join(str(v) for v in layout.BUNDLE_VERSIONS)
            + ".",
            [],
        )
    listed = _listed(manifest, problems)
    present = set(files) - {layout.MANIFEST}
    for name in sorted(set(listed) - present):
        problems.append(f"{name}: listed in the manifest but absent")
    for name in sorted(present - set(listed)):
        problems.append(f"{name}: present but not listed in the manifest")
    hashed: dict[tuple[int, int], str] = {}  # a content stored once (hard links): hashed once
    for name in sorted(present & set(listed)):
        stat = (root / name).stat()
        inode = (stat.st_dev, stat.st_ino)
        if inode not in hashed:
            hashed[inode] = file_sha256(root / name)
        if hashed[inode] != listed[name]:
            problems.append(f"{name}: sha256 does not match the manifest (changed or corrupt)")
    if problems:
        raise ImportRefused(
            f"{len(problems)} file(s) of the bundle fail verification; nothing was imported.",
            [("file", p) for p in problems],
        )
    return manifest


def _listed(manifest: dict, problems: list[str]) -> dict[str, str]:
    """Path -> sha256 of every file the manifest lists: version 2 names each content once
    with its paths (``contents``), version 1 each path with its content (``files``)."""
    if manifest["format_version"] == 1:
        listed = manifest.get("files")
        if not isinstance(listed, dict):
            raise ImportRefused('manifest.json has no "files" object.', [])
        return listed
    contents = manifest.get("contents")
    if not isinstance(contents, dict) or not all(
        isinstance(paths, list) and all(isinstance(p, str) for p in paths)
        for paths in contents.values()
    ):
        raise ImportRefused('manifest.json has no "contents" object of lists of paths.', [])
    listed: dict[str, str] = {}
    for sha, paths in contents.items():
        for name in paths:
            if name in listed:
                problems.append(f"{name}: listed twice in the manifest")
            listed[name] = sha
    return listed


def _bundle_root(extracted: Path) -> Path:
    """The folder holding the manifest or the task folders (one wrapping folder allowed)."""
    if (extracted / layout.MANIFEST).is_file():
        return extracted
    children = [p for p in extracted.iterdir()]
    if len(children) == 1 and children[0].is_dir() and not children[0].is_symlink():
        return children[0]
    return extracted


def import_bundle(*, project, path: Path, actor=None, label: str | None = None):
    """Import a bundle file (``.tar.gz`` / ``.tar`` / ``.zip``) or folder into ``project``.

    Returns the ImportReport; raises ImportRefused (nothing imported) on any bad entry.
    ``label`` names the file in messages (the name it was uploaded as).
    """
    path = Path(path)
    label = label or path.name
    if not path.exists():
        raise ImportRefused(f"{label} does not exist.", [])
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
                    max_ratio=settings.UNPACK_MAX_RATIO,
                    label=label,
                )
            except ArchiveRefused as exc:
                raise ImportRefused(
                    f"{label} refused; nothing was imported.",
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
