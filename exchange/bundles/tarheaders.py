"""The tar headers of a bundle's members: ustar blocks as Python's ``tarfile`` writes them
with our fixed attributes (mode 0644, 0755 for shell scripts; owner 0; the fixed mtime),
a PAX header before a name or link ustar cannot hold. Split from ``tarstream``, which
writes them."""

from __future__ import annotations

import tarfile

from .layout import FILE_MODE, TAR_MTIME

BLOCK = 512

# The fields after the size that never change: mtime, and (after the checksum) the type,
# link name, magic, version, owner names and device numbers, filled in by tar_header.
_MODE_UID_GID = b"%07o\0" % FILE_MODE + b"0000000\0" * 2
# Shell scripts (solve.sh, test.sh, run_script.sh) keep their exec bit, as the release has it.
EXEC_MODE = 0o755
_EXEC_MODE_UID_GID = b"%07o\0" % EXEC_MODE + b"0000000\0" * 2
_EXEC_DELTA = sum(_EXEC_MODE_UID_GID) - sum(_MODE_UID_GID)


def executable(name: str) -> bool:
    return name.endswith(".sh")


_MTIME = b"%011o\0" % TAR_MTIME
_MAGIC = b"ustar\x0000" + b"\0" * 80  # then owner names and device numbers, empty
_END = b"\0" * 12
_FIXED_SUM = sum(_MODE_UID_GID) + sum(_MTIME) + sum(_MAGIC) + 8 * 0x20  # 0x20: the spaces
_PAD = b"\0" * BLOCK


def _split(name: bytes) -> tuple[bytes, bytes] | None:
    """ustar's (prefix, name) for a path: the shortest prefix that leaves a name of at most
    100 bytes, split at a slash, as ``tarfile`` splits it; None if there is none."""
    if len(name) <= 100:
        return b"", name
    components = name.split(b"/")
    for i in range(1, len(components)):
        prefix, rest = b"/".join(components[:i]), b"/".join(components[i:])
        if len(prefix) <= 155 and len(rest) <= 100:
            return prefix, rest
    return None


def tar_header(name: str, size: int, link: str = "") -> bytes:
    """The header block(s) of a regular file (or, with ``link``, a hard link) as Python's
    ``tarfile`` writes it in the ustar format with our fixed attributes; a name or link
    that ustar cannot hold (not ASCII, too long) gets tarfile's PAX header before it."""
    try:
        raw, raw_link = name.encode("ascii"), link.encode("ascii")
        parts = _split(raw)
    except UnicodeEncodeError:
        parts = None
    if parts is None or len(raw_link) > 100 or size >= 8**11:
        return _pax_header(name, size, link)
    prefix, short = parts
    digits = b"%011o\0" % size
    kind = b"1" if link else b"0"
    scripted = executable(name)
    # The checksum is the sum of the header's bytes, its own field counted as spaces; the
    # zero padding adds nothing, the fixed fields a constant.
    checksum = _FIXED_SUM + sum(short) + sum(digits) + kind[0] + sum(raw_link) + sum(prefix)
    checksum += _EXEC_DELTA if scripted else 0
    return b"".join(
        (
            short.ljust(100, b"\0"),
            _EXEC_MODE_UID_GID if scripted else _MODE_UID_GID,
            digits,
            _MTIME,
            b"%06o\0 " % checksum,
            kind,
            raw_link.ljust(100, b"\0"),
            _MAGIC,
            prefix.ljust(155, b"\0"),
            _END,
        )
    )


_LINK_FIXED = _FIXED_SUM + sum(b"%011o\0" % 0) + ord("1") + ord("/")


class LinkHeaders:
    """``tar_header(name, 0, link)`` for the hard links of a chunk, from parts remembered:
    a chunk names each of its folders, each path within a folder and each link target
    thousands of times (78 of a task's 108 members are links), and building every header
    whole was a fifth of an export's time. The same bytes as ``tar_header``; a name it
    cannot take apart (not ASCII, over 100 bytes once joined) is left to it."""

    def __init__(self) -> None:
        self._parts: dict[str, tuple[bytes, int]] = {}

    def _part(self, text: str) -> tuple[bytes, int]:
        known = self._parts.get(text)
        if known is None:
            raw = text.encode("ascii")
            known = self._parts[text] = (raw, sum(raw))
        return known

    def __call__(self, name: str, link: str) -> bytes:
        folder, _, within = name.partition("/")
        try:
            (raw_folder, sum_folder), (raw_within, sum_within) = (
                self._part(folder),
                self._part(within),
            )
            raw_link, sum_link = self._part(link)
        except UnicodeEncodeError:
            return tar_header(name, 0, link)
        if not within or len(raw_folder) + 1 + len(raw_within) > 100 or len(raw_link) > 100:
            return tar_header(name, 0, link)
        scripted = executable(name)
        checksum = _LINK_FIXED + sum_folder + sum_within + sum_link
        checksum += _EXEC_DELTA if scripted else 0
        return b"".join(
            (
                (raw_folder + b"/" + raw_within).ljust(100, b"\0"),
                _EXEC_MODE_UID_GID if scripted else _MODE_UID_GID,
                b"%011o\0" % 0,
                _MTIME,
                b"%06o\0 " % checksum,
                b"1",
                raw_link.ljust(100, b"\0"),
                _MAGIC,
                _NO_PREFIX,
                _END,
            )
        )


_NO_PREFIX = b"\0" * 155


def _pax_header(name: str, size: int, link: str) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = TAR_MTIME
    info.mode = EXEC_MODE if executable(name) else FILE_MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if link:
        info.type = tarfile.LNKTYPE
        info.linkname = link
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def padding(size: int) -> bytes:
    return _PAD[: -size % BLOCK]
