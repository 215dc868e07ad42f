"""A deterministic, streamed ``.tar.gz`` writer that hashes every file it adds.

Same files in the same order give the same bytes: fixed mtime, uid/gid 0, no owner names,
mode 0644, gzip header without name or time. Files are copied from disk in chunks and the
``path: sha256`` index is kept in a temporary file, not in memory, so the memory used depends
neither on the files' sizes nor on their number; :meth:`BundleTar.add_manifest` streams the
index into ``manifest.json`` at the end.

A file added again from the same source on disk (the database in every mode folder, the
repository in ``environment/`` and ``tests/``) or with the same large content is stored
once: later names are hard links to the first (``tar`` and Python's ``tarfile`` extract them
as such; the manifest lists every name with its sha256).
"""

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from pathlib import Path

from .layout import FILE_MODE, TAR_MTIME

CHUNK = 1 << 20
LINK_MIN_BYTES = 4096  # a link costs a 512-byte header (and a PAX one for long names)


class _HashingReader:
    def __init__(self, handle):
        self.handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data


class BundleTar:
    """Write members one by one; ``close()`` finishes the archive and moves it into place."""

    def __init__(self, out: Path, *, compresslevel: int = 6):
        self.out = Path(out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.partial = self.out.with_name(self.out.name + ".part")
        self._raw = open(self.partial, "wb")  # noqa: SIM115 - closed in close()/abort()
        self._gzip = gzip.GzipFile(
            filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=compresslevel
        )
        self._tar = tarfile.open(  # noqa: SIM115 - closed in close()/abort()
            fileobj=self._gzip, mode="w", format=tarfile.PAX_FORMAT
        )
        self._index = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()/abort()
        self.count = 0
        self.linked_bytes = 0  # what the hard links saved
        self._by_source: dict[tuple, tuple[str, str]] = {}  # (path, size, mtime) -> name, sha
        self._by_sha: dict[str, str] = {}  # sha256 of a large member -> its first name

    def _record(self, name: str, sha: str) -> str:
        line = f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(sha)}\n"
        self._index.write(line.encode())
        self.count += 1
        return sha

    def _info(self, name: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size = size
        info.mtime = TAR_MTIME
        info.mode = FILE_MODE
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.type = tarfile.REGTYPE
        return info

    def _link(self, name: str, target: str, sha: str, size: int) -> str:
        info = self._info(name, 0)
        info.type = tarfile.LNKTYPE
        info.linkname = target
        self._tar.addfile(info)
        self._forget()
        self.linked_bytes += size
        return self._record(name, sha)

    def add_bytes(self, name: str, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if len(data) >= LINK_MIN_BYTES:
            if sha in self._by_sha:
                return self._link(name, self._by_sha[sha], sha, len(data))
            self._by_sha[sha] = name
        info = self._info(name, len(data))
        self._tar.addfile(info, io.BytesIO(data))
        self._forget()
        return self._record(name, sha)

    def add_file(self, name: str, source: Path) -> str:
        stat = os.stat(source)
        key = (str(Path(source).resolve()), stat.st_size, stat.st_mtime_ns)
        if key in self._by_source:
            first, sha = self._by_source[key]
            return self._link(name, first, sha, stat.st_size)
        with open(source, "rb") as handle:
            sha = self.add_stream(name, handle)
        if stat.st_size >= LINK_MIN_BYTES:
            self._by_source[key] = (name, sha)
            self._by_sha.setdefault(sha, name)
        return sha

    def add_stream(self, name: str, handle) -> str:
        """Add the rest of the open binary file ``handle`` (from its current position)."""
        size = os.fstat(handle.fileno()).st_size - handle.tell()
        reader = _HashingReader(handle)
        self._tar.addfile(self._info(name, size), reader)
        self._forget()
        return self._record(name, reader.digest.hexdigest())

    def add_manifest(self, name: str, header: dict) -> None:
        """Add ``header`` as JSON (sorted keys, indent 2) with ``"files"``: every file added so
        far with its sha256, in the order added, streamed from the index file."""
        marker = "\x00files\x00"
        text = json.dumps({**header, "files": marker}, sort_keys=True, indent=2, ensure_ascii=False)
        before, after = text.split(json.dumps(marker), 1)
        with tempfile.TemporaryFile() as manifest:
            manifest.write(before.encode() + b"{")
            self._index.seek(0)
            for number, line in enumerate(self._index):
                manifest.write((b",\n    " if number else b"\n    ") + line.rstrip(b"\n"))
            manifest.write(b"\n  }" + after.encode() + b"\n")
            manifest.seek(0)
            self.add_stream(name, manifest)

    def _forget(self) -> None:
        # TarFile keeps every member's TarInfo (for reading back); a writer needs none.
        self._tar.members.clear()

    def close(self) -> Path:
        self._tar.close()
        self._gzip.close()
        self._raw.close()
        self._index.close()
        os.replace(self.partial, self.out)
        return self.out

    def abort(self) -> None:
        for closer in (self._tar.close, self._gzip.close, self._raw.close, self._index.close):
            # Tearing down after a failure that is already being raised.
            with contextlib.suppress(Exception):
                closer()
        self.partial.unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
