"""Walking and removing trees that untrusted code wrote (a sandbox's build or run folder).

Neither recurses: ``shutil.rmtree``, ``os.walk`` and ``Path.rglob`` do (Python 3.11), so a
folder a few thousand levels deep stops them with ``RecursionError``, which
``ignore_errors=True`` does not catch. Here one folder is open at a time: the walk goes down
by name (``O_NOFOLLOW``, so never through a symbolic link) and back up through ``..``,
checked to be the folder it came from, so neither the depth nor the length of a path is
bounded by the stack, ``PATH_MAX`` or the number of open files. A folder it cannot open or
empty (odd permissions: ``chmod 000``) is, when removing, opened again after giving it
back to its owner; what still fails is skipped and reported, never raised halfway.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Folder:
    """One folder of a walk. ``fd`` is open during the visit only; ``files`` are its entries
    that are not folders, as ``(name, kind)`` with kind ``"file"`` (a regular file),
    ``"link"`` or ``"other"``; ``folders`` its sub-folders, entered after the visit (a name
    the visit removes is skipped)."""

    fd: int
    parts: tuple[str, ...]
    files: list[tuple[str, str]] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)


def _kind(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return "link"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _open_folder(parent_fd: int, name: str, *, repair: bool = False) -> int:
    """The folder ``name`` of ``parent_fd``, opened without following a link; with
    ``repair``, one its owner closed (no read or search permission) is opened up for its
    owner first."""
    try:
        return os.open(name, _FOLDER, dir_fd=parent_fd)
    except PermissionError:
        if not repair:
            raise
        _repair(parent_fd, name)
        return os.open(name, _FOLDER, dir_fd=parent_fd)


def _repair(parent_fd: int, name: str) -> None:
    """Give the folder ``name`` read, write and search to its owner, through an ``O_PATH``
    fd of the folder itself (``chmod`` by name would follow a link put there meanwhile)."""
    fd = os.open(name, _PATH, dir_fd=parent_fd)
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        os.chmod(f"/proc/self/fd/{fd}", mode | stat.S_IRWXU)
    finally:
        os.close(fd)


def _read(fd: int, parts: tuple[str, ...]) -> Folder:
    folder = Folder(fd, parts)
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folder.folders.append(entry.name)
            else:
                folder.files.append((entry.name, _kind(entry)))
    return folder


def _up(fd: int, expected: os.stat_result) -> int:
    """The parent of the folder ``fd``, checked to be the one the walk came down from."""
    parent = os.open("..", _FOLDER, dir_fd=fd)
    found = os.fstat(parent)
    if (found.st_dev, found.st_ino) != (expected.st_dev, expected.st_ino):
        os.close(parent)
        raise OSError(errno.ESTALE, "a folder moved while its tree was walked")
    return parent


def _open_root(root: str | Path, *, repair: bool = False) -> int:
    parent, name = os.path.split(os.path.abspath(root))
    parent_fd = os.open(parent, _FOLDER & ~os.O_NOFOLLOW)  # the caller's own path
    try:
        return _open_folder(parent_fd, name, repair=repair)
    finally:
        os.close(parent_fd)


def _walk(root: str | Path, errors: list[str], *, after=None, repair=False) -> Iterator[Folder]:
    """Folders of ``root``, parents before children (``after(folder_fd, name)`` is called on
    the parent once a child and everything under it were visited)."""
    try:
        fd = _open_root(root, repair=repair)
    except FileNotFoundError:
        return
    stack: list[tuple[Folder, os.stat_result, Iterator[str]]] = []
    parts: tuple[str, ...] = ()
    try:
        while True:
            try:
                folder = _read(fd, parts)
            except OSError as exc:
                errors.append(f"{'/'.join(parts) or '.'}: {exc.strerror}")
                folder = Folder(fd, parts)
            yield folder
            stack.append((folder, os.fstat(fd), iter(list(folder.folders))))
            while stack:
                top, _status, pending = stack[-1]
                top.fd = fd
                name = next(pending, None)
                if name is not None:
                    try:
                        child = _open_folder(fd, name, repair=repair)
                    except OSError as exc:
                        errors.append(f"{'/'.join((*top.parts, name))}: {exc.strerror}")
                        continue
                    os.close(fd)
                    fd, parts = child, (*top.parts, name)
                    break
                stack.pop()
                if not stack:
                    return
                parent = _up(fd, stack[-1][1])
                os.close(fd)
                fd = parent
                if after is not None:
                    after(fd, top.parts[-1])
    finally:
        os.close(fd)


def walk(root: str | Path, errors: list[str] | None = None) -> Iterator[Folder]:
    """Every folder under ``root`` (itself first), without following a symbolic link and
    without recursing. Folders that cannot be read are skipped, each named in ``errors``."""
    yield from _walk(root, [] if errors is None else errors)


def files_under(root: str | Path, *, kinds=("file",)) -> Iterator[tuple[str, str]]:
    """``(relative path, kind)`` of every entry under ``root`` that is not a folder and whose
    kind (``"file"``, ``"link"``, ``"other"``) is in ``kinds``."""
    for folder in walk(root):
        prefix = "/".join(folder.parts)
        for name, kind in folder.files:
            if kind in kinds:
                yield (f"{prefix}/{name}" if prefix else name), kind


def _remove(folder_fd: int, name: str, remove, errors: list[str]) -> None:
    """``remove(name)`` in the folder; once more after giving the folder write permission
    back to its owner (a run may leave a folder ``chmod 500``)."""
    for attempt in range(2):
        try:
            remove(name, dir_fd=folder_fd)
            return
        except FileNotFoundError:
            return
        except PermissionError as exc:
            if attempt:
                errors.append(f"{name}: {exc.strerror}")
                return
            try:
                mode = stat.S_IMODE(os.fstat(folder_fd).st_mode)
                os.fchmod(folder_fd, mode | stat.S_IRWXU)
            except OSError:
                errors.append(f"{name}: {exc.strerror}")
                return
        except OSError as exc:
            errors.append(f"{name}: {exc.strerror}")
            return


def remove_tree(path: str | Path) -> None:
    """Remove ``path`` and everything under it (nothing when it is missing; a link is removed,
    never followed). Whatever can be removed is; ``OSError`` then names what could not."""
    path = Path(os.path.abspath(path))
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(status.st_mode):
        path.unlink()
        return
    errors: list[str] = []

    def remove_folder(parent_fd: int, name: str) -> None:
        _remove(parent_fd, name, os.rmdir, errors)

    for folder in _walk(path, errors, after=remove_folder, repair=True):
        for name, _kind_of in folder.files:
            _remove(folder.fd, name, os.unlink, errors)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        shown = "; ".join(errors[:5])
        raise OSError(exc.errno, f"{path} not removed: {exc.strerror} ({shown})") from exc


def own_tree(root: str | Path, uid: int, gid: int, *, folder_mode: int | None = None) -> None:
    """Give ``root`` and everything under it to ``uid:gid`` (links themselves, not what they
    name), and each folder ``folder_mode`` when given."""
    root_fd = _open_root(root)
    try:
        os.fchown(root_fd, uid, gid)
    finally:
        os.close(root_fd)
    for folder in walk(root):
        if folder_mode is not None:
            os.fchmod(folder.fd, folder_mode)
        for name in [*(n for n, _ in folder.files), *folder.folders]:
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, uid, gid, dir_fd=folder.fd, follow_symlinks=False)
