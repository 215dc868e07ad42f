"""Safe extraction of uploaded archives (zip, tar, tar.gz).

Every member is checked before anything is written: no absolute paths, no ``..``
components, no symbolic links, no hard links except to a regular file earlier in the same
tar, directly or through links before it (how a bundle stores a file it carries twice), no
devices, no name twice, and bounded
member count and total size (zip-slip and zip-bomb safe). Sizes are the sizes the headers
declare, so a sparse member claiming 10 GB is refused from its header, without reading (or
writing) its data; a zip member's data is cut at its declared size, and one whose data says
otherwise fails its checksum. Past ``RATIO_FLOOR_BYTES`` an archive may unpack to at most
``max_ratio`` times its own size (a decompression bomb of a 1 MB zip holding 1 GB of zeros is
refused). One bad member refuses the whole archive.

Messages name the archive by ``label`` (what the user called the upload) when given, never
by where it is stored.
"""

import contextlib
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.trees import remove_tree

MAX_MEMBERS = 50_000
MAX_TOTAL_BYTES = 4 * 1024**3
MAX_RATIO = 100.0
# Folders deep a member may lie: Python's tarfile, zipfile and shutil recurse once a level, and
# every tree the app walks comes from somewhere (a SWE repository nests about a dozen).
MAX_DEPTH = 128
# Below this many unpacked bytes the ratio is not checked: small text archives compress well.
RATIO_FLOOR_BYTES = 64 * 1024**2
# How many problems a refusal names (the count is always complete).
SHOWN_PROBLEMS = 20


class ArchiveRefused(DomainError):
    """An archive with at least one bad member; nothing was extracted."""

    def __init__(self, archive: Path, problems: list[str], *, label: str | None = None):
        self.problems = problems
        shown = "; ".join(problems[:SHOWN_PROBLEMS])
        more = (
            f"; … and {len(problems) - SHOWN_PROBLEMS} more"
            if len(problems) > SHOWN_PROBLEMS
            else ""
        )
        super().__init__(f"{label or Path(archive).name} refused: {shown}{more}")


def _check_name(name: str) -> str | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return f"{name!r} is an absolute path"
    if ".." in path.parts:
        return f"{name!r} leaves the archive's folder"
    if "\x00" in name:
        return f"{name!r} holds a NUL character"
    if len(path.parts) > MAX_DEPTH:
        return f"{name[:80]!r}… is {len(path.parts)} folders deep (at most {MAX_DEPTH})"
    return None


def _normal(name: str) -> str:
    return str(PurePosixPath(name.replace("\\", "/")))


def _tar_member_allowed(info: tarfile.TarInfo, regular: set[str]) -> bool:
    """A file, a folder, or a hard link to a file earlier in the archive, directly or through
    links before it (an export's chunks link to their first copy, which may itself link to
    the bundle's); a file or such a link may be linked to in turn (added to ``regular``)."""
    inside = info.islnk() and _normal(info.linkname) in regular
    if info.isfile() or inside:
        regular.add(_normal(info.name))
    return info.isfile() or info.isdir() or inside


def check_archive(
    archive: Path,
    *,
    max_members: int = MAX_MEMBERS,
    max_bytes: int = MAX_TOTAL_BYTES,
    max_ratio: float = MAX_RATIO,
    label: str | None = None,
) -> list:
    """The archive's members (``ZipInfo`` or ``TarInfo``), or ArchiveRefused naming every
    bad member. Reads headers only; stops counting at ``max_members + 1``."""
    archive = Path(archive)
    packed = archive.stat().st_size
    limit = min(max_bytes, max(RATIO_FLOOR_BYTES, int(packed * max_ratio)))
    problems: list[str] = []
    seen: set[str] = set()
    regular: set[str] = set()  # files so far, or links to them: what a hard link may name
    total = 0

    def check(name: str, size: int, is_regular_or_dir: bool) -> None:
        nonlocal total
        problem = _check_name(name)
        if not problem and not is_regular_or_dir:
            problem = f"{name!r} is a link or special file"
        if not problem and _normal(name) in seen:
            problem = f"{name!r} appears twice"
        if problem:
            problems.append(problem)
        seen.add(_normal(name))
        total += max(size, 0)

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > max_members:
                raise ArchiveRefused(
                    archive, [f"{len(members)} members, more than {max_members}"], label=label
                )
            for info in members:
                mode = (info.external_attr >> 16) & 0o170000
                check(info.filename, info.file_size, not mode or mode in (0o100000, 0o040000))
    else:
        try:
            is_tar = tarfile.is_tarfile(archive)
        except OSError:
            is_tar = False
        if not is_tar:
            raise ArchiveRefused(archive, ["neither a zip nor a tar archive"], label=label)
        members = []
        try:
            with tarfile.open(archive) as tf:
                for info in tf:
                    members.append(info)
                    if len(members) > max_members:
                        raise ArchiveRefused(
                            archive, [f"more than {max_members} members"], label=label
                        )
                    check(info.name, info.size, _tar_member_allowed(info, regular))
                    if info.isfile() and info.sparse is not None:
                        problems.append(f"{info.name!r} is a sparse file")
                    if total > limit:
                        # Stop early: a member claiming terabytes need not be followed further.
                        break
        except (tarfile.TarError, EOFError, OSError) as exc:
            if not problems and total <= limit:
                raise ArchiveRefused(
                    archive, [f"not a readable archive ({exc})"], label=label
                ) from exc
    if total > max_bytes:
        problems.append(f"unpacks to {total} bytes or more, more than {max_bytes}")
    elif total > limit:
        problems.append(
            f"unpacks to {total} bytes or more, more than {max_ratio:g} times the archive's "
            f"{packed} bytes"
        )
    if problems:
        raise ArchiveRefused(archive, problems, label=label)
    return members


def extract_archive(
    archive: Path,
    target: Path,
    *,
    max_members: int = MAX_MEMBERS,
    max_bytes: int = MAX_TOTAL_BYTES,
    max_ratio: float = MAX_RATIO,
    label: str | None = None,
) -> Path:
    """Extract ``archive`` into ``target`` (which must not exist) or raise DomainError; a
    failure part-way removes what was written."""
    members = check_archive(
        archive, max_members=max_members, max_bytes=max_bytes, max_ratio=max_ratio, label=label
    )
    target.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(target)  # noqa: S202 - every member was checked above
            return target
        with tarfile.open(archive) as tf:
            # Re-read: the members above belong to a closed archive. Names were checked.
            checked = {m.name for m in members}
            tf.extractall(  # noqa: S202 - checked above, and the data filter checks again
                target, members=[m for m in tf if m.name in checked], filter="data"
            )
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        with contextlib.suppress(OSError):
            remove_tree(target)
        # OSError's text carries the path written to; the archive's name is enough.
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise DomainError(f"{label or Path(archive).name} refused: {reason}") from exc
    return target


def safe_name(value: object) -> bool:
    """A db_id or folder name that cannot escape a directory."""
    return (
        isinstance(value, str)
        and bool(value)
        and value not in {".", ".."}
        and "/" not in value
        and "\\" not in value
        and "\x00" not in value
    )
