"""The bundle's ``.tar.gz``, written in chunks that workers make in parallel, then joined.

A gzip file may hold several gzip members back to back: readers (``tar``, Python's
``tarfile`` and ``gzip``) see the concatenation of what they hold. So each chunk of tasks
is compressed on its own (:class:`ChunkSpool`, by any worker) and the bundle is the chunks'
compressed bytes copied one after the other, with the manifest and the end of the archive
(:func:`assemble`): the last step compresses next to nothing.

Every byte is fixed by the files and the chunk size, never by the number of workers:
members in a fixed order, ustar headers with mtime 1700000000, uid/gid 0, no owner names,
mode 0644 (0755 for shell scripts); gzip members with no name or time.

Each byte once (issue 46; why this way: ``docs/bundle/README.md``, *Each content once*):

- A content every task carries the same — the app's own files (the sidecars' and verifiers'
  code, ``ChunkSpool``'s ``common``), a database, a file from disk of
  ``CROSS_TASK_LINK_BYTES`` or more — is stored once, at ``_shared/<group>/<sha256>`` (written
  by :func:`assemble` before every task folder; a copy per ``layout.LINK_GROUP`` folders, as
  a file system allows a file only so many names), and each of its names in a task folder is a
  hard link to it: ``tar -xzf`` gives every task folder its files, and one task extracted
  alone needs ``_shared`` beside it (``tar -xzf bundle.tar.gz _shared sql_3``).
- Another content carried more than once in a task folder is stored once there: its later
  names in the folder are hard links to the first. Such a link never leaves its folder.
- A chunk's members go in the order of their path *within* the task folder, then of the
  folder (every task's ``baseline/task.toml``, then every task's ``baseline/instruction.md``
  …): gzip's 32 KiB window then sees the previous task's copy of the same file, and the
  headers and texts that differ from task to task by a few words cost those words.

A content a chunk copies rather than compresses — a file from disk (a repository stream) or
one of ``INLINE_BYTES`` or more that two tasks of the chunk share, and every ``_shared``
content — is compressed once into ``blobs/<sha256>.gz``; the chunk copies those compressed
bytes at its first name in each task folder (a gzip member of its own in the chunk's data); a
smaller content is compressed with the files around it, cheaper than ending a gzip member for
it (and smaller). So the workers do the copying in parallel, and the last step copies each
chunk's data whole, the ``_shared`` blobs once each and the manifest (``contents``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from isal import isal_zlib

from . import contents as manifest_contents
from .layout import MANIFEST, shared_copy
from .tarheaders import BLOCK, MemberHeaders, padding, tar_header

CHUNK = 1 << 20
# A file from disk this large is stored once in the bundle (``_shared``), whoever carries it.
CROSS_TASK_LINK_BYTES = 64 << 20
# A content in memory several tasks share is compressed once and copied from this size up:
# below it, compressing it again (ISA-L: about 1.6 µs a KiB) costs less than the gzip member
# a copy needs (about 7 µs to end one and start the next).
INLINE_BYTES = 8 << 10
RECORD = 20 * BLOCK  # tar pads the end of an archive to whole records
# ISA-L's level 1: 3-5 times the speed of zlib's default level, a few percent larger.
LEVEL = 1
GZIP_WBITS = 31  # a gzip container


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


_FILE_SHAS: dict[tuple, str] = {}


def file_sha256_cached(path: Path) -> str:
    """``file_sha256``, remembered for the file as it is on disk (a stored database is hashed
    once per process, not once for each task and mode that carries it)."""
    stat = os.stat(path)
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    sha = _FILE_SHAS.get(key)
    if sha is None:
        sha = _FILE_SHAS[key] = file_sha256(path)
    return sha


def gzip_member(data: bytes) -> bytes:
    compressor = isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)
    return compressor.compress(data) + compressor.flush()


@dataclass(slots=True)
class Entry:
    """One file of the bundle: its name, its content (bytes, or a file on disk) and sha256;
    ``shared``: stored once at ``_shared/<sha>``, the name a hard link to it."""

    name: str
    content: bytes | Path
    sha: str
    size: int
    shared: bool = False


@dataclass
class ChunkRecord:
    """What a written chunk hands to :func:`assemble` (stored as JSON beside its data).

    ``items``: ``["data", offset, length, raw]`` — compressed bytes of the chunk's data
    file to copy, ``raw`` bytes once inflated. ``shared``: ``[copy, sha, size]`` of each copy
    in ``_shared/`` the chunk's links name (its content: the blob of that sha256).
    ``contents``: the file of the chunk's part of the manifest (``contents.write_part``).
    """

    data: str
    items: list[list] = field(default_factory=list)
    files: int = 0
    shared: list[list] = field(default_factory=list)
    contents: str = ""

    def as_dict(self) -> dict:
        return self.__dict__.copy()

    @classmethod
    def from_dict(cls, data: dict) -> ChunkRecord:
        return cls(**data)


class ChunkSpool:
    """Write one chunk of tasks into ``<work>/<name>.gz``; ``write`` returns its record.
    ``common``: the sha256 of the contents every task that carries them carries the same
    (the app's own files), stored once in ``_shared``, as a database is."""

    def __init__(self, work: Path, name: str, common: frozenset[str] = frozenset()):
        self.work = Path(work)
        self.blobs = self.work / "blobs"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.path = self.work / f"{name}.gz"
        self.common = common
        self.record = ChunkRecord(data=self.path.name, contents=f"{name}.contents")
        self._out = None
        self._compressor = None
        self._pending: list[bytes] = []  # raw bytes of the segment not yet compressed
        self._raw = 0  # raw bytes of the segment
        self._compressed = 0  # of which given to the compressor
        self._at = 0  # bytes written to the data file
        self._segment_start = 0  # where the segment's compressed bytes begin in it
        self._blobs: dict[str, bytes | None] = {}  # sha -> the blob's bytes, once read
        self._hashed: dict[int, tuple[bytes, str]] = {}
        self._files: dict[str, tuple] = {}  # a file from disk -> its sha256, size, shared
        self._copies: dict[tuple[str, str], str] = {}  # (folder, sha) -> its _shared copy
        self._shared: dict[str, tuple[str, int]] = {}  # a _shared copy -> its sha256, size
        self._headers = MemberHeaders()

    def entry(self, name: str, content: bytes | Path) -> Entry:
        """The entry of a file of the chunk. A file from disk is compressed into the blobs
        now, so the caller may delete it (a repository stream in a scratch folder)."""
        if isinstance(content, Path):
            # A file the chunk's tasks share (their database) is looked at once a chunk.
            known = self._files.get(str(content))
            if known is None:
                entry = Entry(name, content, file_sha256_cached(content), content.stat().st_size)
                entry.shared = bool(entry.size) and (
                    name.endswith(".sqlite") or entry.size >= CROSS_TASK_LINK_BYTES
                )
                if entry.size:
                    self._blob(entry)
                self._files[str(content)] = (entry.sha, entry.size, entry.shared)
                return entry
            return Entry(name, content, *known)
        # The sidecars' sources are the same bytes object in every task: hashed once. The
        # memo holds the object, so its id cannot be another's while the chunk lasts.
        seen = self._hashed.get(id(content))
        if seen is None:
            seen = self._hashed[id(content)] = (content, hashlib.sha256(content).hexdigest())
        return Entry(name, content, seen[1], len(content), bool(content) and seen[1] in self.common)

    def _blob(self, entry: Entry) -> None:
        if entry.sha not in self._blobs:
            _blob(self.blobs, entry)
            self._blobs[entry.sha] = None

    def _copy_blob(self, sha: str) -> None:
        """A blob's compressed bytes into the chunk's data. One of up to ``CHUNK`` bytes (the
        sidecars' larger sources, a small database) is read once by the chunk and kept; a
        larger one (a repository stream) is copied in reads of ``CHUNK``, never held."""
        data = self._blobs.get(sha)
        if data is not None:
            self._write(data)
            return
        path = self.blobs / f"{sha}.gz"
        if path.stat().st_size <= CHUNK:
            data = self._blobs[sha] = path.read_bytes()
            self._write(data)
            return
        with open(path, "rb") as source:
            while data := source.read(CHUNK):
                self._write(data)

    def write(self, tasks: Iterable[list[Entry]]) -> ChunkRecord:
        """``tasks``: each task's entries (from :meth:`entry`), a task folder each. They go
        in the order of their path within the folder, then of the task (module docstring).
        A file from disk is never read again here: it is copied from its blob."""
        tasks = list(tasks)
        copied = _copied_shas(tasks)
        first: dict[tuple[str, str], str] = {}  # (folder, sha) -> the first name there
        names: dict[str, list[str]] = defaultdict(list)  # sha -> the chunk's names of it
        # A path within the folder -> its entries, each with its folder and that path. Each
        # folder and path is held once (``known``), not once a member: 27,000 members of a
        # 250-task chunk name 250 folders and about 110 paths.
        by_path: dict[str, list[tuple[str, str, Entry]]] = defaultdict(list)
        known: dict[str, str] = {}
        for entries in tasks:
            for entry in entries:
                folder, _, within = entry.name.partition("/")
                if not within:  # no path within a folder: its headers take the name whole
                    folder = entry.name
                folder, within = known.setdefault(folder, folder), known.setdefault(within, within)
                by_path[within or entry.name].append((folder, within, entry))
        partial = self.path.with_name(self.path.name + ".part")
        with open(partial, "wb") as self._out:
            for path in sorted(by_path):
                self._add_path(by_path[path], first, copied, names)
            self._end_segment()
        os.replace(partial, self.path)
        manifest_contents.write_part(self.work / self.record.contents, names)
        self.record.shared = [[copy, *shared] for copy, shared in sorted(self._shared.items())]
        self.record.files = sum(map(len, tasks))
        return self.record

    def _add_path(
        self,
        members: list[tuple[str, str, Entry]],
        first: dict[tuple[str, str], str],
        copied: set[str],
        names: dict[str, list[str]],
    ) -> None:
        """The members of one path within the chunk's folders, each with its folder and
        that path (or its whole name as its folder, that path empty). Most are links: to its
        folder's ``_shared`` copy of a shared content, or to the first name of a content the
        folder carries twice; the others are files (:meth:`_add_file`)."""
        headers = self._headers
        for folder, within, entry in members:
            names[entry.sha].append(entry.name)
            if entry.shared:
                link = self._copies.get((folder, entry.sha)) or self._shared_copy(entry, folder)
            else:
                link = first.get((folder, entry.sha)) if entry.size else None
                if link is None:
                    self._add_file(entry, folder, within, first, copied)
                    continue
            self._member(headers.link(folder, within, link))

    def _shared_copy(self, entry: Entry, folder: str) -> str:
        """The ``_shared`` copy the folder's names of a shared content link to, its blob made
        and the copy recorded for the assembly."""
        self._blob(entry)
        link = self._copies[folder, entry.sha] = shared_copy(folder, entry.sha)
        self._shared[link] = (entry.sha, entry.size)
        return link

    def _add_file(
        self,
        entry: Entry,
        folder: str,
        within: str,
        first: dict[tuple[str, str], str],
        copied: set[str],
    ) -> None:
        """The first name of a content in its folder (or an empty file): its header and
        bytes, copied from its blob when the chunk copies that content."""
        if entry.size:
            first[folder, entry.sha] = entry.name
        if entry.sha in copied and entry.size:
            self._blob(entry)
            self._member(self._headers.file(folder, within, entry.size))
            self._end_segment()
            at = self._at
            self._copy_blob(entry.sha)
            self._data(at, self._at - at, entry.size + len(padding(entry.size)))
            return
        self._member(self._headers.file(folder, within, entry.size) + _inline(entry))

    def _member(self, data: bytes) -> None:
        """Raw bytes of the current segment: gathered, compressed together at its end (or
        when a megabyte has gathered)."""
        if not self._raw:
            self._segment_start = self._at
        self._pending.append(data)
        self._raw += len(data)
        if self._raw - self._compressed > CHUNK:
            self._compress()

    def _compress(self) -> None:
        if self._compressor is None:
            self._compressor = isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)
        self._write(self._compressor.compress(b"".join(self._pending)))
        self._pending = []
        self._compressed = self._raw

    def _end_segment(self) -> None:
        if not self._raw:
            return
        start = self._segment_start  # a long segment has had some of it written already
        if self._compressor is None:  # all of it gathered: one member at once
            self._write(gzip_member(b"".join(self._pending)))
            self._pending = []
        else:
            self._compress()
            self._write(self._compressor.flush())
            self._compressor = None
        self._data(start, self._at - start, self._raw)
        self._raw = self._compressed = 0

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._at += len(data)

    def _data(self, offset: int, length: int, raw: int) -> None:
        """Compressed bytes of the data file to copy: one item with the data just before."""
        items = self.record.items
        last = items[-1] if items else None
        if last and last[0] == "data" and last[1] + last[2] == offset:
            last[2] += length
            last[3] += raw
        else:
            items.append(["data", offset, length, raw])


def _inline(entry: Entry) -> bytes:
    """An entry's bytes and their padding, to follow its header. A file from disk is always
    shared but when it is empty: then it has no bytes."""
    if isinstance(entry.content, Path):
        return b""
    return entry.content + padding(entry.size)


def _copied_shas(tasks: list[list[Entry]]) -> set[str]:
    """Contents copied from their blob: files from disk, and contents of ``INLINE_BYTES`` or
    more that two tasks carry."""
    owners: dict[str, int] = {}
    shared: set[str] = set()
    for number, entries in enumerate(tasks):
        for entry in entries:
            if isinstance(entry.content, Path) or (
                entry.size >= INLINE_BYTES and owners.setdefault(entry.sha, number) != number
            ):
                shared.add(entry.sha)
    return shared


def _blob(blobs: Path, entry: Entry) -> None:
    """``blobs/<sha>.gz``: the content and its padding, compressed once for every chunk."""
    target = blobs / f"{entry.sha}.gz"
    if target.exists():
        return
    partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.part")
    compressor = isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)
    with open(partial, "wb") as out:
        if isinstance(entry.content, Path):
            with open(entry.content, "rb") as source:
                for chunk in iter(lambda: source.read(CHUNK), b""):
                    out.write(compressor.compress(chunk))
        else:
            out.write(compressor.compress(entry.content))
        out.write(compressor.compress(padding(entry.size)))
        out.write(compressor.flush())
    os.replace(partial, target)


class _Output:
    """The bundle file being written: compressed bytes copied in, small raw bytes gathered
    and compressed together, the inflated size kept as it goes. A chunk's bytes are copied
    file to file by the kernel (``copy_file_range``) while a thread hashes them from the
    source in the same order as every other write, one step at a time: the assembly, the
    serial end of an export, took the sum of writing and hashing 530 MB (1.1 s), now the
    longer of the two. ``close()`` returns the sha256; ``handle`` is unbuffered."""

    def __init__(self, handle):
        self.handle = handle
        self.digest = hashlib.sha256()
        self.pending: list[bytes] = []
        self.raw = 0
        self._hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bundle-sha256")
        self._hashing: list = []  # the hashing steps handed to the thread, not yet checked

    def write_raw(self, data: bytes) -> None:
        self.pending.append(data)
        self.raw += len(data)

    def copy(self, path: Path, offset: int, length: int, raw: int) -> None:
        self.flush()
        with open(path, "rb") as source:
            fd = source.fileno()
            self._hash(lambda: _hash_range(fd, offset, length))
            try:
                _copy_range(fd, self.handle.fileno(), offset, length, path)
            finally:
                self._hashed()  # the source stays open until it is read
        self.raw += raw

    def compress_file(self, path: Path) -> None:
        """A file's bytes, with the raw bytes written before (not yet flushed), compressed
        as one gzip member a read at a time (the manifest: never held whole)."""
        compressor = isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, GZIP_WBITS)
        pending, self.pending = b"".join(self.pending), []
        compressed = [compressor.compress(pending)]
        with open(path, "rb") as source:
            while block := source.read(CHUNK):
                self.raw += len(block)
                compressed.append(compressor.compress(block))
                if sum(map(len, compressed)) >= CHUNK:
                    self._put(b"".join(compressed))
                    compressed = []
        compressed.append(compressor.flush())
        self._put(b"".join(compressed))

    def flush(self) -> None:
        if self.pending:
            self._put(gzip_member(b"".join(self.pending)))
            self.pending = []

    def close(self) -> str:
        """Wait for the hashing; the bundle's sha256."""
        try:
            self._hashed()
        finally:
            self._hasher.shutdown(wait=True)
        return self.digest.hexdigest()

    def _put(self, data: bytes) -> None:
        self._hash(lambda: (data,))
        _write_all(self.handle.fileno(), data)

    def _hash(self, blocks: Callable[[], Iterable[bytes]]) -> None:
        """Hash the bytes ``blocks()`` gives after everything handed over before (the one
        thread takes its steps in order)."""
        self._hashing.append(self._hasher.submit(self._update, blocks))

    def _update(self, blocks: Callable[[], Iterable[bytes]]) -> None:
        for block in blocks():
            self.digest.update(block)

    def _hashed(self) -> None:
        """Wait for every step handed over; the first one's error, if any, is raised."""
        steps, self._hashing = self._hashing, []
        for step in steps:
            step.result()


def _hash_range(fd: int, offset: int, length: int):
    """The bytes of ``fd`` from ``offset``, ``CHUNK`` at a time (``pread``: no shared seek)."""
    while length > 0:
        block = os.pread(fd, min(CHUNK, length), offset)
        if not block:
            return
        offset += len(block)
        length -= len(block)
        yield block


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# copy_file_range refused: across file systems (old kernels), not there, not for these files,
# or forbidden (a container's seccomp profile); the reads and writes then go on from there.
_NO_KERNEL_COPY = frozenset(
    {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EPERM, errno.EBADF}
)


def _copy_range(source: int, target: int, offset: int, length: int, path: Path) -> None:
    """``length`` bytes of ``source`` from ``offset`` appended to ``target``, in the kernel;
    by reads and writes where the file systems do not allow it."""
    try:
        while length > 0:
            copied = os.copy_file_range(source, target, length, offset)
            if not copied:  # the end of the file, or a file system that copies nothing
                break
            offset += copied
            length -= copied
    except OSError as exc:
        if exc.errno not in _NO_KERNEL_COPY:
            raise
    while length > 0:  # what the kernel did not copy
        block = os.pread(source, min(CHUNK, length), offset)
        if not block:
            raise OSError(f"{path.name} ends before its record says")
        _write_all(target, block)
        offset += len(block)
        length -= len(block)


def assemble(
    out: Path,
    work: Path,
    records: list[ChunkRecord],
    manifest: dict,
    *,
    tasks: manifest_contents.TaskList | None = None,
) -> dict:
    """Join the chunks into ``out`` (a ``.tar.gz``): ``_shared/`` first (each content the
    chunks' links name, once), then each chunk's data, then ``manifest.json`` — ``manifest``
    with ``contents`` merged from the chunks' parts, and ``tasks`` from its file. Returns the
    bundle's size, sha256 and number of files (in task folders and at the top; ``_shared``
    and the manifest not counted)."""
    out, work = Path(out), Path(work)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    shared = {copy: (sha, size) for record in records for copy, sha, size in record.shared}
    shared = dict(sorted(shared.items()))
    output = None
    try:
        with open(partial, "wb", buffering=0) as handle:
            output = _Output(handle)
            for copy, (sha, size) in shared.items():
                blob = work / "blobs" / f"{sha}.gz"
                output.write_raw(tar_header(copy, size))
                output.copy(blob, 0, blob.stat().st_size, size + len(padding(size)))
            for record in records:
                data = work / record.data
                for _, offset, length, raw in record.items:
                    output.copy(data, offset, length, raw)
            text = work / MANIFEST
            size = manifest_contents.write_manifest(
                text, manifest, [work / r.contents for r in records],
                shared=[(sha, copy) for copy, (sha, _) in shared.items()], tasks=tasks,
            )  # fmt: skip
            output.write_raw(tar_header(MANIFEST, size))
            output.compress_file(text)
            output.write_raw(padding(size) + b"\0" * (2 * BLOCK))
            output.write_raw(b"\0" * (-output.raw % RECORD))
            output.flush()
            sha256 = output.close()
        os.replace(partial, out)
    except BaseException:
        if output is not None:
            with contextlib.suppress(Exception):
                output.close()
        partial.unlink(missing_ok=True)
        raise
    return {
        "size": out.stat().st_size,
        "sha256": sha256,
        "files": sum(r.files for r in records),
    }
