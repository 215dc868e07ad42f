"""Reading files that task code wrote: a trial's logs, artifacts and results.

A folder a trial's containers wrote into may hold links (to another run's files, the app's
database, ``/dev/zero``), pipes that never end, or files of any size. Every read here opens
each step of the path without following a link (``O_NOFOLLOW``, relative to the folder
already opened), takes only a regular file, and reads at most ``max_bytes``: a link is an
error naming it, never a file of this machine. ``regular_files`` walks a folder the same way.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(ValueError):
    """The file is a link, not a regular file, or larger than allowed; the message says which."""


def _open(root: Path, relative: str) -> int:
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("..", "/") for part in parts):
        raise UnsafeFile(f"{relative}: not a path inside {root.name}")
    folder = os.open(root, _DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, _DIRECTORY, dir_fd=folder)
            except OSError as error:
                raise _refusal(relative, part, error) from None
            os.close(folder)
            folder = inner
        try:
            return os.open(parts[-1], _FILE, dir_fd=folder)
        except OSError as error:
            raise _refusal(relative, parts[-1], error) from None
    finally:
        os.close(folder)


def _refusal(relative: str, part: str, error: OSError) -> Exception:
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        return UnsafeFile(f"{relative}: {part} is a link or not a folder; not followed")
    return error  # FileNotFoundError and the like: the caller's to handle


def read_regular(root: Path, relative: str, *, max_bytes: int) -> bytes:
    """The bytes of the regular file ``root/relative``; ``UnsafeFile`` when a step of the
    path is a link, the file is not a regular file, or it holds more than ``max_bytes``."""
    fd = _open(Path(root), relative)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{relative}: not a regular file; not read")
        if info.st_size > max_bytes:
            raise UnsafeFile(f"{relative}: {info.st_size} bytes, more than {max_bytes}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnsafeFile(f"{relative}: more than {max_bytes} bytes")
    return data


def is_regular(root: Path, relative: str) -> bool:
    """Whether ``root/relative`` is a regular file reached without a link."""
    try:
        fd = _open(Path(root), relative)
    except (OSError, UnsafeFile):
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def regular_files(root: Path, relative: str = "") -> Iterator[str]:
    """Paths (relative to ``root``) of the regular files under ``root/relative``, in order,
    never entering a link; what is not a folder or a regular file is skipped."""
    step = Path(root)
    for part in PurePosixPath(relative).parts:  # no link on the way to where the walk starts
        step = step / part
        try:
            if not stat.S_ISDIR(os.lstat(step).st_mode):
                return
        except OSError:
            return
    stack = [relative]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(Path(root) / current), key=lambda e: e.name)
        except OSError:
            continue
        folders = []
        for entry in entries:
            path = f"{current}/{entry.name}" if current else entry.name
            if entry.is_dir(follow_symlinks=False):
                folders.append(path)
            elif entry.is_file(follow_symlinks=False):
                yield path
        stack.extend(reversed(folders))
