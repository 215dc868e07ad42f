"""The type of every object in a repository's packs, read from the pack index and the entry
headers, without inflating anything.

:mod:`validators.objectread` needs each object's type before it reads it (trees are skipped:
they hold names and ids, never a line of text). Asking libgit2 (``Odb.read_header``) costs
≈ 2.4 µs an object — 0.27 s for pytest's 112,324, a quarter of the whole read. A pack says
it in its entry headers: the first byte of an entry carries its type (commit, tree, blob,
tag) or says it is a delta, whose type is its base's (an earlier entry of the same pack at
a given distance, ``OFS_DELTA``, or an object named by id, ``REF_DELTA``). numpy does the
whole pack at once: ≈ 10 ms. Each function imports numpy itself, when a scan runs (at module
level it was 0.04 s of every process's start-up: the validators' registry imports this
module from ``AppConfig.ready``); they run once a pack, never once an object.

Only what this module is sure of is given: index version 2 and SHA-1 ids, bases found in
the same pack, chains that end; anything else (loose objects, alternates, a base in another
pack, an unknown layout) has no type here, and the reader asks libgit2. Files are opened
read-only.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

OID_BYTES = 20  # SHA-1: objectread is only used on SHA-1 stores
_IDX_MAGIC = b"\xfftOc"
_OFS_DELTA, _REF_DELTA = 6, 7
_MAX_DEPTH = 5_000  # git stops at 4,095: a longer chain is left to libgit2


def _keys(ids: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each id as a number: searching numbers is some ten times faster
    than searching 20-byte strings (a match is then checked on the whole id)."""
    import numpy as np

    rows = np.ascontiguousarray(ids).view(np.uint8).reshape(-1, OID_BYTES)
    # Native byte order: numpy searches big-endian numbers several times slower.
    return rows[:, :8].copy().view(">u8").ravel().astype(np.uint64)


def _search(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """``np.searchsorted`` with the needles sorted first: three times faster on 100,000
    needles in no order (each search starts where the last one ended)."""
    import numpy as np

    order = np.argsort(needles, kind="stable")
    found = np.empty(len(needles), dtype=np.int64)
    found[order] = np.searchsorted(haystack, needles[order])
    return np.clip(found, 0, len(haystack) - 1)


def _find(ids: np.ndarray, keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``wanted`` is in the sorted ``ids`` (``keys`` their numbers), and
    whether it is there. Two ids sharing their first 8 bytes may be missed: never
    wrongly found."""
    found = _search(keys, _keys(wanted))
    return found, ids[found] == wanted


def _map(path: Path) -> np.ndarray:
    import numpy as np

    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mapped, dtype=np.uint8)


def pack_types(idx: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, types)`` of one pack: its sorted object ids (``S20``) and each one's type
    (1 commit, 2 tree, 3 blob, 4 tag, 0 not known here). Empty when the index is not one
    this module reads."""
    import numpy as np

    empty = (np.empty(0, dtype=f"S{OID_BYTES}"), np.empty(0, dtype=np.uint8))
    pack_path = idx.with_suffix(".pack")
    if not pack_path.is_file() or idx.stat().st_size < 8 + 256 * 4:
        return empty
    index = _map(idx)
    if bytes(index[:4]) != _IDX_MAGIC or int.from_bytes(bytes(index[4:8]), "big") != 2:
        return empty
    count = int(index[8 : 8 + 256 * 4].view(">u4")[-1])
    start = 8 + 256 * 4
    if len(index) < start + count * (OID_BYTES + 8):
        return empty
    ids = index[start : start + count * OID_BYTES].view(f"S{OID_BYTES}")
    start += count * OID_BYTES + count * 4  # past the CRCs
    offsets = index[start : start + count * 4].view(">u4").astype(np.int64)
    large = offsets >= 1 << 31  # an index into the table of 8-byte offsets
    if pack_path.stat().st_size < 12:
        return empty
    pack = _map(pack_path)
    # A damaged or crafted index (an offset past its table or its pack, an entry header
    # running off the end) is one this module does not read: the reader asks libgit2.
    try:
        if large.any():
            table = index[start + count * 4 :].view(np.uint8)
            where = (offsets[large] & 0x7FFFFFFF) * 8
            wide = np.ascontiguousarray(table[where[:, None] + np.arange(8)])
            offsets[large] = wide.view(">u8").ravel().astype(np.int64)
        if bytes(pack[:4]) != b"PACK" or count == 0:
            return empty
        if offsets.min() < 12 or offsets.max() >= len(pack):
            return empty
        return ids, _entry_types(pack, ids, offsets)
    except IndexError:
        return empty


def _entry_types(pack: np.ndarray, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    import numpy as np

    first = pack[offsets]
    kinds = ((first >> 4) & 7).astype(np.uint8)
    # Past the size: seven bits a byte while the high bit is set.
    position = offsets + 1
    going = np.nonzero(first & 0x80)[0]
    while going.size:
        byte = pack[np.minimum(position[going], len(pack) - 1)]
        position[going] += 1
        going = going[(byte & 0x80) != 0]
    base = np.full(len(ids), -1, dtype=np.int64)
    order = np.argsort(offsets)
    sorted_offsets = offsets[order]

    deltas = np.nonzero(kinds == _OFS_DELTA)[0]
    if deltas.size:  # a distance back, in git's own varint (each continuation adds one)
        at = position[deltas]
        byte = pack[np.minimum(at, len(pack) - 1)].astype(np.int64)
        distance = byte & 0x7F
        going = np.nonzero(byte & 0x80)[0]
        while going.size:
            at[going] += 1
            byte = pack[np.minimum(at[going], len(pack) - 1)].astype(np.int64)
            distance[going] = ((distance[going] + 1) << 7) | (byte & 0x7F)
            going = going[(byte & 0x80) != 0]
        wanted = offsets[deltas] - distance
        found = _search(sorted_offsets, wanted)
        exact = sorted_offsets[found] == wanted
        base[deltas[exact]] = order[found[exact]]

    deltas = np.nonzero(kinds == _REF_DELTA)[0]
    if deltas.size:  # a base named by id: found when it is in this pack
        at = np.minimum(position[deltas][:, None] + np.arange(OID_BYTES), len(pack) - 1)
        wanted = np.ascontiguousarray(pack[at]).view(f"S{OID_BYTES}").ravel()
        found, exact = _find(ids, _keys(ids), wanted)
        base[deltas[exact]] = found[exact]

    types = np.where(kinds <= 4, kinds, 0).astype(np.uint8)  # 0 invalid, 5 reserved
    pending = np.nonzero((kinds == _OFS_DELTA) | (kinds == _REF_DELTA))[0]
    step = pending, base[pending]
    for _ in range(_MAX_DEPTH):
        pending, toward = step
        pending, toward = pending[toward >= 0], toward[toward >= 0]
        if not pending.size:
            break
        resolved = types[toward]
        types[pending[resolved > 0]] = resolved[resolved > 0]
        # A base that is itself a delta: look at its base next.
        further = (resolved == 0) & ((kinds[toward] == _OFS_DELTA) | (kinds[toward] == _REF_DELTA))
        step = pending[further], base[toward[further]]
    return types


def store_types(objects: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, types)`` over every pack of the ``objects`` directory (not its alternates),
    ids sorted; an object in two packs appears twice, with the same type."""
    import numpy as np

    parts = [pack_types(idx) for idx in sorted((objects / "pack").glob("pack-*.idx"))]
    parts = [part for part in parts if part[0].size]
    if not parts:
        return np.empty(0, dtype=f"S{OID_BYTES}"), np.empty(0, dtype=np.uint8)
    ids = np.concatenate([part[0] for part in parts])
    types = np.concatenate([part[1] for part in parts])
    order = np.argsort(_keys(ids), kind="stable")
    return ids[order], types[order]


def listing_types(objects: Path, listing: bytes) -> bytes:
    """One byte per id of ``listing`` (ids end to end, 20 bytes each): its type code, 0
    where the packs do not say."""
    import numpy as np

    wanted = np.frombuffer(listing, dtype=f"S{OID_BYTES}")
    ids, types = store_types(objects)
    if not ids.size or not wanted.size:
        return bytes(len(wanted))
    found, exact = _find(ids, _keys(ids), wanted)
    return np.where(exact, types[found], 0).astype(np.uint8).tobytes()
