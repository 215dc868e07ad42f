"""Safe extraction of uploaded archives (zip, tar, tar.gz).

Every member is checked before anything is written: no absolute paths, no ``..``
components, no links, no devices, and bounded member count and total size (zip-slip and
zip-bomb safe). One bad member refuses the whole archive.
"""

import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from hilbench_annotate.errors import DomainError

MAX_MEMBERS = 50_000
MAX_TOTAL_BYTES = 4 * 1024**3


def _check_name(name: str) -> str | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return f"{name!r} is an absolute path"
    if ".." in path.parts:
        return f"{name!r} leaves the archive's folder"
    return None


def extract_archive(
    archive: Path, target: Path, *, max_members: int = MAX_MEMBERS, max_bytes: int = MAX_TOTAL_BYTES
) -> Path:
    """Extract ``archive`` into ``target`` (which must not exist) or raise DomainError."""
    problems: list[str] = []
    total = 0
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > max_members:
                raise DomainError(
                    f"{archive.name}: {len(members)} members, more than {max_members}"
                )
            for info in members:
                problem = _check_name(info.filename)
                mode = (info.external_attr >> 16) & 0o170000
                if not problem and mode and mode not in (0o100000, 0o040000):
                    problem = f"{info.filename!r} is a link or special file"
                if problem:
                    problems.append(problem)
                total += info.file_size
            if total > max_bytes:
                problems.append(f"unpacks to {total} bytes, more than {max_bytes}")
            if problems:
                raise DomainError(f"{archive.name} refused: " + "; ".join(problems[:20]))
            target.mkdir(parents=True)
            zf.extractall(target)  # noqa: S202 - every member was checked above
        return target
    if not tarfile.is_tarfile(archive):
        raise DomainError(f"{archive.name} is neither a zip nor a tar archive")
    with tarfile.open(archive) as tf:
        members = []
        for info in tf:
            members.append(info)
            if len(members) > max_members:
                raise DomainError(f"{archive.name}: more than {max_members} members")
            problem = _check_name(info.name)
            if not problem and not (info.isfile() or info.isdir()):
                problem = f"{info.name!r} is a link or special file"
            if problem:
                problems.append(problem)
            total += info.size
        if total > max_bytes:
            problems.append(f"unpacks to {total} bytes, more than {max_bytes}")
        if problems:
            raise DomainError(f"{archive.name} refused: " + "; ".join(problems[:20]))
        target.mkdir(parents=True)
        try:
            tf.extractall(target, members=members, filter="data")  # noqa: S202 - checked above
        except tarfile.TarError as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise DomainError(f"{archive.name} refused: {exc}") from exc
    return target
