"""Preparing the tree a run works on: a commit's files from a bare mirror (never touching the
mirror), the task's patches applied with ``git apply`` (which runs no hook), and the files an
environment's install generated that the task's tree must carry too. Files task code wrote are
read back, and generated files copied, one folder at a time without following a symbolic
link: the worker may be root, and task code decides what is a link in its trees."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import clean_path, resolve_commit, run_git, stderr_text
from hilbench_annotate.toolkit.patches import PatchRefused

from .base import SandboxResult

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
    links, made = [], set()
    try:
        for mode, kind, oid, name in rows:
            path = clean_path(name)
            parts = path.split("/")
            if any(part.lower() == ".git" for part in parts):
                raise DomainError(f"The tree at {commit} has a path inside .git: {path!r}.")
            target = dest / path
            _make_folders(dest, parts[:-1], made)
            if kind == "commit":
                target.mkdir(exist_ok=True)
            elif mode == "120000":
                links.append((target, blobs[oid]))
            else:
                target.write_bytes(blobs[oid])
                target.chmod(0o755 if mode == "100755" else 0o644)
        for target, link in links:
            os.symlink(os.fsdecode(link), target)
    except OSError as exc:  # a path longer than the system allows, a full disk
        raise DomainError(f"The tree at {commit} could not be written: {exc}") from exc
    return dest


def _make_folders(dest: Path, parts: list[str], made: set[str]) -> None:
    """The folders of one path of the tree, made a level at a time: ``Path.mkdir`` with
    ``parents`` recurses once per missing level, and a committed tree may be thousands deep."""
    relative = ""
    for part in parts:
        relative = f"{relative}/{part}" if relative else part
        if relative not in made:
            (dest / relative).mkdir(exist_ok=True)
            made.add(relative)


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


def _folder_fd(root_fd: int, parts: tuple[str, ...], *, create: bool) -> int | None:
    """An fd of the folder ``root/parts…``, walked one component at a time without following
    a symbolic link (``O_NOFOLLOW`` relative to the previous folder's fd), so no component can
    lead outside ``root``. Missing folders are made when ``create``; None when a component is
    a link, not a folder, or missing. The caller closes the fd."""
    fd = os.dup(root_fd)
    for part in parts:
        try:
            try:
                next_fd = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                next_fd = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                return None
            raise
        os.close(fd)
        fd = next_fd
    return fd


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open_regular(folder_fd: int, name: str):
    """The regular file ``name`` in the folder, opened (a binary file object) with its
    status, or None when it is a link, a pipe, a device or missing: never followed, never
    blocked on (``O_NONBLOCK``). The caller closes it."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder_fd)
    except OSError:
        return None
    handle = os.fdopen(fd, "rb")
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        handle.close()
        return None
    return handle, status


def _read_regular(folder_fd: int, name: str, limit: int | None = None) -> tuple[bytes, int] | None:
    """(contents, mode) of the regular file ``name`` in the folder (``_open_regular``)."""
    opened = _open_regular(folder_fd, name)
    if opened is None:
        return None
    handle, status = opened
    with handle:
        return handle.read(-1 if limit is None else limit + 1), status.st_mode


def read_run_file(path: Path, limit: int = 1 << 20) -> bytes | None:
    """A file a sandboxed run could write (a reward, a manifest of an old build), read on
    the host: None when it is missing, larger than ``limit``, or not a plain file — a
    symbolic link planted by task code is not followed to a host file, a pipe does not block
    the worker. Its folder must be one the caller made (it is not walked)."""
    path = Path(path)
    try:
        folder_fd = os.open(path.parent, _FOLDER_FLAGS)
    except OSError:  # gone, or itself a link
        return None
    try:
        found = _read_regular(folder_fd, path.name, limit)
    finally:
        os.close(folder_fd)
    if found is None or len(found[0]) > limit:
        return None
    return found[0]


def overlay_generated(source: Path, files: list[str], dest: Path) -> tuple[int, list[str]]:
    """Copy ``files`` (relative paths an environment's install generated, e.g. a version
    module or ``*.egg-info``) from the environment's repository into ``dest`` where ``dest``
    has none; returns how many were copied and, for each one refused, why.

    Both trees are walked one folder at a time without following a symbolic link: a
    repository may commit ``evil`` as a link to a host folder that its install replaced with
    a real one, and a copy through the link would write onto the host (the worker may be
    root). An entry whose path in ``dest`` (or in ``source``) passes through a link is
    refused, not copied; so is one that is not a plain file."""
    copied, refused = 0, []
    if not files:
        return copied, refused
    source_fd = os.open(source, _FOLDER_FLAGS)
    dest_fd = os.open(dest, _FOLDER_FLAGS)
    try:
        for relative in files:
            path = clean_path(relative)
            why = _overlay_one(source_fd, dest_fd, tuple(path.split("/")))
            if why is None:
                copied += 1
            elif why:
                refused.append(f"{path}: {why}")
    finally:
        os.close(source_fd)
        os.close(dest_fd)
    return copied, refused


def _overlay_one(source_fd: int, dest_fd: int, parts: tuple[str, ...]) -> str | None:
    """None when copied, "" when ``dest`` already has the file (nothing to do), else why not."""
    folders, name = parts[:-1], parts[-1]
    origin_folder = _folder_fd(source_fd, folders, create=False)
    if origin_folder is None:
        return "its folder in the environment is a symbolic link or missing"
    try:
        opened = _open_regular(origin_folder, name)
    finally:
        os.close(origin_folder)
    if opened is None:
        return "not a plain file in the environment"
    source, status = opened
    with source:
        target_folder = _folder_fd(dest_fd, folders, create=True)
        if target_folder is None:
            return "a folder on its path is a symbolic link (or a file) in the task's tree"
        try:
            try:
                fd = os.open(
                    name,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o755 if status.st_mode & 0o111 else 0o644,
                    dir_fd=target_folder,
                )
            except FileExistsError:
                return ""  # the tree has its own (a file, or a link left as committed)
            with os.fdopen(fd, "wb") as handle:
                # Streamed (a built extension may be tens of MB), its times kept as a copy
                # keeps them, so tools that rebuild by modification time do not.
                shutil.copyfileobj(source, handle, 1 << 20)
                handle.flush()
                os.utime(handle.fileno(), ns=(status.st_atime_ns, status.st_mtime_ns))
        finally:
            os.close(target_folder)
    return None


def note_refused_overlay(result: SandboxResult, refused: list[str]) -> SandboxResult:
    """The run's log starts by naming the install's generated files the tree did not get
    (a symbolic link on their path), so a test that misses one says why."""
    if refused:
        lines = "".join(f"hilbench: generated file not copied, {why}\n" for why in refused)
        result.output = lines + result.output
        result.details["generated_not_copied"] = refused
    return result
