"""Preparing the tree a run works on: a commit's files from a bare mirror (never touching the
mirror), the task's patches applied with ``git apply`` (which runs no hook), and the files an
environment's install generated that the task's tree must carry too."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import clean_path, resolve_commit, run_git, stderr_text
from hilbench_annotate.toolkit.patches import PatchRefused

CHECKOUT_TIMEOUT_S = 300


def _tree_rows(repo_path: Path, sha: str) -> list[tuple[str, str, str, str]]:
    output = run_git(repo_path, ["ls-tree", "-r", "-z", "--full-tree", sha]).stdout
    rows = []
    for record in output.split(b"\x00"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, object_type, oid = meta.decode().split()
        rows.append((mode, object_type, oid, name.decode("utf-8", "surrogateescape")))
    return rows


def _read_blobs(repo_path: Path, oids: list[str]) -> dict[str, bytes]:
    """Blob contents by oid, from one ``git cat-file --batch``."""
    if not oids:
        return {}
    data = run_git(
        repo_path,
        ["cat-file", "--batch"],
        input=("\n".join(oids) + "\n").encode(),
        timeout=CHECKOUT_TIMEOUT_S,
    ).stdout
    blobs: dict[str, bytes] = {}
    position = 0
    while position < len(data):
        end = data.index(b"\n", position)
        header = data[position:end].decode().split()
        if len(header) != 3:
            raise DomainError(f"git cat-file could not read object {header[0]}.")
        size = int(header[2])
        blobs[header[0]] = data[end + 1 : end + 1 + size]
        position = end + 1 + size + 1
    return blobs


def checkout(repo_path: Path, commit: str, dest: Path) -> Path:
    """Write the tree of ``commit`` from the bare mirror into ``dest`` and return ``dest``.

    Read with ``ls-tree`` and ``cat-file`` (plumbing that only reads the mirror) rather than
    ``git archive``: archive honours the tree's ``.gitattributes``, so ``export-ignore`` would
    silently drop files (often the tests) and ``export-subst`` would rewrite others. The tree
    is written as committed: no end-of-line conversion, no filters, executable bits kept,
    submodules as empty directories. Paths are checked (no ``..``, no ``.git``) and symbolic
    links are created last, so no file is ever written through one.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    sha = resolve_commit(repo_path, commit)
    rows = _tree_rows(repo_path, sha)
    blobs = _read_blobs(repo_path, sorted({oid for _, kind, oid, _ in rows if kind == "blob"}))
    links = []
    for mode, kind, oid, name in rows:
        path = clean_path(name)
        if any(part.lower() == ".git" for part in path.split("/")):
            raise DomainError(f"The tree at {commit} has a path inside .git: {path!r}.")
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "commit":
            target.mkdir(exist_ok=True)
        elif mode == "120000":
            links.append((target, blobs[oid]))
        else:
            target.write_bytes(blobs[oid])
            target.chmod(0o755 if mode == "100755" else 0o644)
    for target, link in links:
        os.symlink(os.fsdecode(link), target)
    return dest


def apply_patches(dest: Path, patches: list[tuple[str, str]]) -> None:
    """Apply ``(label, text)`` patches to the plain tree in ``dest``, in order.

    ``git apply`` outside a repository behaves like ``patch -p1`` without fuzz and refuses
    paths that leave the directory. ``GIT_CEILING_DIRECTORIES`` stops it from discovering a
    repository above ``dest`` (which would make it apply relative to that repository).
    Whitespace is not judged here: that is the patch check's job, and upstream patches may
    legitimately contain trailing spaces. Empty patches are skipped. A refusal raises
    :class:`~toolkit.patches.PatchRefused` naming the patch (``label``) with git's message.
    """
    dest = Path(dest).resolve()
    for label, text in patches:
        if not text or not text.strip():
            continue
        result = run_git(
            None,
            ["apply", "--whitespace=nowarn", "-"],
            input=text.encode("utf-8", "surrogateescape"),
            cwd=dest,
            env={"GIT_CEILING_DIRECTORIES": str(dest.parent)},
            check=False,
            timeout=CHECKOUT_TIMEOUT_S,
        )
        if result.returncode != 0:
            message = stderr_text(result)
            raise PatchRefused(
                f"The {label} does not apply to the checked-out tree. git apply says:\n{message}",
                label=label,
                git_message=message,
            )


def overlay_generated(source: Path, files: list[str], dest: Path) -> int:
    """Copy ``files`` (relative paths an environment's install generated, e.g. a version
    module or ``*.egg-info``) from the environment's repository into ``dest`` where ``dest``
    has none; returns how many were copied. Paths are checked like the tree's own."""
    copied = 0
    for relative in files:
        path = clean_path(relative)
        origin, target = Path(source) / path, Path(dest) / path
        if target.exists() or target.is_symlink() or origin.is_symlink() or not origin.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target)
        copied += 1
    return copied
