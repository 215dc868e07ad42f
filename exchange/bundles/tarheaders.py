"""The tar headers of a bundle's members: ustar blocks as Python's ``tarfile`` writes them
with our fixed attributes (mode 0644, 0755 for shell scripts; owner 0; the fixed mtime),
a PAX header before a name or link ustar cannot hold. Split from ``tarstream``, which
writes them."""

from __future__ import annotations

import struct
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


def _joined(folder: str, within: str) -> str:
    return f"{folder}/{within}" if within else folder


_NO_PREFIX = b"\0" * 155
# A header whose name needs no prefix, in four parts: the name (padded), the mode, owner,
# size and mtime (48 bytes), the checksum and type, the link name (padded), then the magic,
# owner names, device numbers and the empty prefix. ``struct`` pads a short bytes with NULs.
_USTAR = struct.Struct("100s48s9s100s255s")
_AFTER_LINK = _MAGIC + _NO_PREFIX + _END
_LINK_MID = _MODE_UID_GID + b"%011o\0" % 0 + _MTIME
_EXEC_LINK_MID = _EXEC_MODE_UID_GID + b"%011o\0" % 0 + _MTIME
_LINK_FIXED = _FIXED_SUM + sum(b"%011o\0" % 0) + ord("1") + ord("/")
_FILE_FIXED = _FIXED_SUM + ord("0") + ord("/")


class MemberHeaders:
    """``tar_header`` for the members of a chunk, from parts remembered: a chunk names each
    of its folders, each path within a folder and each link target hundreds of times (78 of
    a task's 108 members are links), and building every header whole was a fifth of an
    export's time. A member is named by its folder and its path within it; a name without a
    path within a folder is given whole as ``folder``, ``within`` empty. The same bytes as
    ``tar_header``, which makes the headers it cannot make from parts: a name or link not
    ASCII, a name or link over 100 bytes, a size of 8**11 bytes or more, a name without a
    path within a folder."""

    def __init__(self) -> None:
        # None: a part left to tar_header (not ASCII; or empty, a name without a folder).
        self._parts: dict[str, tuple[bytes, int, bool] | None] = {"": None}
        self._sizes: dict[int, tuple[bytes, int]] = {}

    def _part(self, text: str) -> tuple[bytes, int, bool] | None:
        """``text`` as ASCII, the sum of its bytes and whether it names a script; None if it
        is not ASCII."""
        known = self._parts.get(text, False)
        if known is False:  # not seen
            try:
                raw = text.encode("ascii")
            except UnicodeEncodeError:
                known = self._parts[text] = None
            else:
                known = self._parts[text] = (raw, sum(raw), executable(text))
        return known

    def link(self, folder: str, within: str, link: str) -> bytes:
        parts = self._parts
        name, path, target = parts.get(folder), parts.get(within), parts.get(link)
        if name is None or path is None or target is None:  # not seen yet, or not ASCII
            name, path, target = self._part(folder), self._part(within), self._part(link)
            if name is None or path is None or target is None:
                return tar_header(_joined(folder, within), 0, link)
        raw_name = name[0] + b"/" + path[0]
        if len(raw_name) > 100 or len(target[0]) > 100:
            return tar_header(_joined(folder, within), 0, link)
        checksum = _LINK_FIXED + name[1] + path[1] + target[1]
        if path[2]:
            return _USTAR.pack(
                raw_name, _EXEC_LINK_MID, b"%06o\0 1" % (checksum + _EXEC_DELTA), target[0],
                _AFTER_LINK,
            )  # fmt: skip
        return _USTAR.pack(raw_name, _LINK_MID, b"%06o\0 1" % checksum, target[0], _AFTER_LINK)

    def file(self, folder: str, within: str, size: int) -> bytes:
        parts = self._parts
        name, path = parts.get(folder), parts.get(within)
        if name is None or path is None:
            name, path = self._part(folder), self._part(within)
            if name is None or path is None:
                return tar_header(_joined(folder, within), size)
        raw_name = name[0] + b"/" + path[0]
        if len(raw_name) > 100 or size >= 8**11:
            return tar_header(_joined(folder, within), size)
        digits = self._sizes.get(size)
        if digits is None:
            text = b"%011o\0" % size
            digits = self._sizes[size] = (text, sum(text))
        checksum = _FILE_FIXED + name[1] + path[1] + digits[1]
        if path[2]:
            mid, checksum = _EXEC_MODE_UID_GID + digits[0] + _MTIME, checksum + _EXEC_DELTA
        else:
            mid = _MODE_UID_GID + digits[0] + _MTIME
        return _USTAR.pack(raw_name, mid, b"%06o\0 0" % checksum, b"", _AFTER_LINK)


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
