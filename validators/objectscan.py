"""Reading every object of a git store once, quickly: which objects hold which byte strings.

The leakage check needs, for a few dozen texts, the objects that hold them — among every
object of the store, reachable or not. Hyperscan finds every occurrence of every anchor at
gigabytes per second whatever their number (``grep -F`` and Aho–Corasick manage about
350 MB/s with a handful of patterns: slower than the ``git log -S`` this must beat).

Two ways to get every object's content to it, one answer:

* **In process** (:mod:`validators.objectread`, where pygit2 is installed and ids are SHA-1):
  libgit2 inflates each object in the process that searches it, this one and a helper
  taking runs of the pack-ordered listing; object types come from the pack's entry headers
  (:mod:`validators.packindex`), so trees are never inflated. No content crosses a pipe:
  for pytest's 1.1 GB that is about 0.4 s of system time and the second git process saved.
* **Through git** (the fallback): ``git cat-file --batch-check --batch-all-objects
  --unordered`` lists every object (id, type, size) in pack order; ``git cat-file --batch``
  then streams every blob, commit and tag in that order (git's delta cache likes it; trees
  hold only names and ids) through a 1 MB pipe. The listing says where each object lies in
  the stream, so Python never parses it: it cuts the commits and tags out as they pass
  (small: their dates and messages) and hands each chunk to Hyperscan in streaming mode.
  Match offsets turn into object ids; only those few candidate objects are then read whole.

An anchor is exact bytes, or ``(bytes, True)`` to find it in any letter case (ASCII): the
leakage check finds a resolution however it is capitalised.

Where Hyperscan is not installed (no wheel for the platform), the same pass searches with
``bytes.find``: the same result, slower. :attr:`Store.fast` says which ran.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import marshal
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import git_dir, git_env, run_git
from validators import objectread, packindex

# Hyperscan, a C library in its wheel: the scan works without it, slower.
hyperscan = objectread.hyperscan

TIMEOUT = 900  # seconds for any one pass over the store
PIPE_BYTES = 1 << 20  # the most an unprivileged process may ask for (fs.pipe-max-size)
CHUNK = 1 << 20
RUN = 16 << 20  # bytes of content dealt to one git process at a time (pack order kept)
# A helper process costs ≈ 0.1 s to start and list the store; pytest's 42 MB of packs take
# ≈ 1.1 s to read, so below this much a single process is done before a helper would help.
HELPER_MIN_PACK_BYTES = 8 << 20

Anchor = objectread.Anchor


@dataclass
class Store:
    """Every object's type, and the content of the ones the caller needs."""

    types: dict[str, str] = field(default_factory=dict)
    content: dict[str, bytes] = field(default_factory=dict)  # commits, tags, candidates
    candidates: set[str] = field(default_factory=set)  # objects holding an anchor
    fast: bool = True  # False: searched with bytes.find (no Hyperscan)


def _git(repo: Path, *args: str) -> list[str]:
    return ["git", f"--git-dir={git_dir(repo)}", *args]


def read_objects(repo: Path, home: Path, oids: Iterable[str]) -> dict[str, bytes]:
    """The content of ``oids`` (one ``cat-file --batch`` process)."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    request = ("\n".join(wanted) + "\n").encode()
    done = run_git(repo, ["cat-file", "--batch"], home=home, input=request, timeout=TIMEOUT)
    out, data, position = {}, done.stdout, 0
    while position < len(data):
        end = data.index(b"\n", position)
        header = data[position:end].split()
        if len(header) != 3:  # "<oid> missing"
            position = end + 1
            continue
        size = int(header[2])
        out[header[0].decode()] = data[end + 1 : end + 1 + size]
        position = end + 1 + size + 1
    return out


class _HyperscanMatcher:
    """Every occurrence of every anchor across chunks of one stream (matches may straddle
    chunks): ``(end offset, anchor index)`` pairs."""

    def __init__(self, anchors: list[Anchor]):
        self.database = objectread.compile_literals(anchors, hyperscan.HS_MODE_STREAM)
        self.found: list[tuple[int, int]] = []
        # Held here: the binding keeps no reference to its handler (a bound method made on
        # the fly is freed under it, and the scan crashes).
        self._handler = self._on_match
        self._context = self.database.stream(match_event_handler=self._handler)
        self._stream = self._context.__enter__()

    def _on_match(self, anchor: int, _start: int, end: int, _flags: int, _context) -> None:
        self.found.append((end, anchor))

    def feed(self, chunk: bytes) -> None:
        self._stream.scan(chunk)

    def close(self) -> list[tuple[int, int]]:
        self._context.__exit__(None, None, None)
        return self.found


class _PythonMatcher:
    """The same with ``bytes.find``, keeping the last bytes of a chunk for the next one."""

    def __init__(self, anchors: list[Anchor]):
        self.anchors = anchors  # those in any letter case come lower-cased (scan_objects)
        self.any_caseless = any(caseless for _text, caseless in anchors)
        self.keep = max(len(text) for text, _caseless in anchors) - 1
        self.tail, self.tail_start, self.found = b"", 0, []
        self.seen: set[tuple[int, int]] = set()

    def feed(self, chunk: bytes) -> None:
        data = self.tail + chunk
        lowered = data.lower() if self.any_caseless else data
        for index, (anchor, caseless) in enumerate(self.anchors):
            haystack = lowered if caseless else data
            position = haystack.find(anchor)
            while position >= 0:
                end = self.tail_start + position + len(anchor)
                if (end, index) not in self.seen:
                    self.seen.add((end, index))
                    self.found.append((end, index))
                position = haystack.find(anchor, position + 1)
        cut = max(0, len(data) - self.keep)
        self.tail_start += cut
        self.tail = data[cut:]

    def close(self) -> list[tuple[int, int]]:
        return self.found


class _Reader:
    """One ``git cat-file --batch`` process and the thread that reads what it answers.

    The dispatcher hands it runs of ``(oid, type, size)`` (:meth:`send`); as it names them
    to git it also records where each will lie in the answer (``--batch`` answers in the
    order asked: ``<oid> <type> <size>\\n<content>\\n``), so the stream is never parsed. The
    thread cuts the commits and tags out as they pass and hands every chunk to the matcher.
    """

    def __init__(self, repo: Path, home: Path, anchors: list[Anchor], deadline: float):
        self.anchors, self.deadline = anchors, deadline
        self.matcher = None
        if anchors:
            self.matcher = (_HyperscanMatcher if hyperscan is not None else _PythonMatcher)(anchors)
        self.starts: list[int] = []  # where each object's content starts in the stream
        self.ends: list[int] = []
        self.oids: list[str] = []
        self.kept: list[tuple[int, int, str, bytes]] = []  # (header start, end, oid, header)
        self.content: dict[str, bytes] = {}
        self.total = 0  # bytes the stream will hold for the objects sent so far
        self.process = subprocess.Popen(
            _git(repo, "cat-file", "--buffer", "--batch"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_env(home),
            cwd=home,
        )
        with contextlib.suppress(OSError):  # else the default pipe (a lower limit): slower
            fcntl.fcntl(self.process.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        # Requests are written by a thread of their own: a run of many small objects fills
        # git's stdin pipe until git has answered most of it, and the dealer must not wait.
        self.requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.feeder = threading.Thread(target=self._feed, daemon=True)
        self.feeder.start()

    def _feed(self) -> None:
        stdin = self.process.stdin
        try:
            while (data := self.requests.get()) is not None:
                stdin.write(data)
                stdin.flush()
        except (BrokenPipeError, ValueError):  # git died or was killed: read() reports it
            pass
        finally:
            with contextlib.suppress(BrokenPipeError, ValueError):
                stdin.close()

    def send(self, rows: list[tuple[str, str, int]]) -> None:
        for oid, kind, size in rows:
            header = f"{oid} {kind} {size}\n".encode()
            start = self.total + len(header)
            self.starts.append(start)
            self.ends.append(start + size)
            self.oids.append(oid)
            if kind in ("commit", "tag"):
                self.kept.append((self.total, start + size, oid, header))
            self.total = start + size + 1
        self.requests.put("".join(f"{oid}\n" for oid, _kind, _size in rows).encode())

    def finish(self) -> None:
        self.requests.put(None)

    def read(self) -> list[tuple[int, int]]:
        """Read the whole answer: ``(end offset, anchor index)`` of every anchor found."""
        descriptor, offset, following, parts = self.process.stdout.fileno(), 0, 0, []
        buffer = bytearray(CHUNK)  # one buffer, filled again and again: no fresh pages
        while length := os.readv(descriptor, [buffer]):
            chunk = memoryview(buffer)[:length]
            limit = offset + length
            while following < len(self.kept):  # the commits and tags in this chunk
                first, last, oid, header = self.kept[following]
                if first >= limit:
                    break
                parts.append(bytes(chunk[max(first, offset) - offset : min(last, limit) - offset]))
                if last > limit:
                    break
                data, parts = b"".join(parts), []
                if not data.startswith(header):
                    raise DomainError("The repository changed while it was being read; run again.")
                self.content[oid] = data[len(header) :]
                following += 1
            if self.matcher is not None:
                self.matcher.feed(chunk)
            offset = limit
            if time.monotonic() > self.deadline:
                raise DomainError(f"Reading every object took longer than {TIMEOUT} s.")
        if self.process.wait(timeout=60) != 0:
            message = self.process.stderr.read().decode("utf-8", "replace").strip()
            raise DomainError(f"git cat-file failed: {message}")
        if offset != self.total:  # an object went missing between the listing and now
            raise DomainError("The repository changed while it was being read; run again.")
        return self.matcher.close() if self.matcher is not None else []

    def holder(self, start: int, end: int) -> str | None:
        """The object whose content holds the bytes ``start:end`` of the stream."""
        index = bisect.bisect_right(self.starts, start) - 1
        if index < 0 or end > self.ends[index]:
            return None  # across a header: not in any one object
        return self.oids[index]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.requests.put(None)
        self.feeder.join(timeout=60)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe and not pipe.closed:
                pipe.close()


def _anchor(anchor: bytes | Anchor) -> Anchor:
    text, caseless = (anchor, False) if isinstance(anchor, bytes) else anchor
    return (text.lower() if caseless else text, bool(caseless))


def scan_objects(
    repo: Path,
    home: Path,
    anchors: Iterable[bytes | Anchor],
    *,
    streams: int | None = None,
    in_process: bool | None = None,
) -> Store:
    """Every object's type; the content of every commit and tag, and of every object
    holding one of ``anchors`` (listed in :attr:`Store.candidates`). Trees are not searched:
    they hold file names and object ids, never a line of text.

    Read in process with libgit2 (:mod:`validators.objectread`: this process and
    ``streams - 1`` helpers share the objects out) when pygit2 is installed and the store
    uses SHA-1 ids (``in_process``: None picks, False forces the fallback). Otherwise the
    ``git cat-file`` listing is read as git writes it and dealt out in runs of about
    :data:`RUN` bytes to ``streams`` git processes, each read by its own thread: the
    listing, the inflating and the searching overlap. ``streams`` is by default one per
    core, at most four — and for the in-process read one when the store has less than
    :data:`HELPER_MIN_PACK_BYTES` of packs."""
    anchors = sorted({_anchor(anchor) for anchor in anchors} - {(b"", False), (b"", True)})
    if in_process is None:
        in_process = objectread.available() and _object_format(repo, home) == "sha1"
    if in_process and objectread.available():
        wanted = streams or (_cores() if _pack_bytes(repo) >= HELPER_MIN_PACK_BYTES else 1)
        helpers = max(0, min(4, wanted) - 1)
        try:
            return _scan_in_process(repo, anchors, helpers=helpers)
        except objectread.StoreError:  # a store libgit2 cannot open: git reads it
            pass
    return _scan_streams(repo, home, anchors, streams=streams)


def _pack_bytes(repo: Path) -> int:
    return sum(pack.stat().st_size for pack in (git_dir(repo) / "objects" / "pack").glob("*.pack"))


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _object_format(repo: Path, home: Path) -> str:
    """ "sha1" or "sha256": pygit2's libgit2 reads SHA-1 stores only (SHA-256 support is an
    experimental build option its wheels leave out)."""
    found = run_git(repo, ["rev-parse", "--show-object-format"], home=home, check=False)
    return found.stdout.decode().strip() if found.returncode == 0 else "unknown"


def _scan_in_process(repo: Path, anchors: list[Anchor], *, helpers: int) -> Store:
    """This process and ``helpers`` helper processes take the runs of
    :mod:`validators.objectread` from one pipe holding one byte per run; a run a helper
    took but did not report (it died) is read here afterwards."""
    objects = git_dir(repo) / "objects"
    claims, tokens = os.pipe()
    started: list[subprocess.Popen] = []
    try:
        started = [helper for helper in (_start_helper(claims) for _ in range(helpers)) if helper]
        os.write(tokens, bytes(range(objectread.RUNS)))  # 64 bytes: never blocks
        os.close(tokens)
        tokens = -1  # closed: once the runs are taken, a read says so
        return _share_out(objects, anchors, claims, started)
    finally:
        for helper in started:
            if helper.poll() is None:
                helper.kill()
                helper.wait()
            for pipe in (helper.stdin, helper.stdout):
                if not pipe.closed:
                    pipe.close()
        os.close(claims)
        if tokens >= 0:
            os.close(tokens)


def _start_helper(claims: int) -> subprocess.Popen | None:
    """A helper process; its start-up (≈ 60 ms) overlaps the listing here."""
    try:
        return subprocess.Popen(
            [sys.executable, "-I", objectread.__file__],  # -I: no user site, no script folder
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # a helper that fails only leaves its runs to us
            pass_fds=(claims,),
        )
    except OSError:  # no helper: this process reads every run
        return None


def _share_out(
    objects: Path, anchors: list[Anchor], claims: int, helpers: list[subprocess.Popen]
) -> Store:
    reader = objectread.open_store(str(objects))
    listing, ids, digest = objectread.list_objects(reader)
    codes = packindex.listing_types(objects, ids)
    fast = hyperscan is not None
    request = (str(objects), anchors, claims, objectread.RUNS, digest, codes, fast)
    # Written by threads: the request (a byte per object) may be more than a pipe holds,
    # and this process has its own share to read meanwhile.
    senders = [threading.Thread(target=_send, args=(helper, request)) for helper in helpers]
    for sender in senders:
        sender.start()
    deadline, take = time.monotonic() + TIMEOUT, objectread.pipe_claim(claims)

    def claim() -> int | None:
        if time.monotonic() > deadline:
            raise DomainError(f"Reading every object took longer than {TIMEOUT} s.")
        return take()

    shares = [objectread.scan_share(reader, listing, codes, anchors, claim, objectread.RUNS, fast)]
    for helper, sender in zip(helpers, senders, strict=True):
        sender.join()
        shares.extend(_helper_share(helper, digest))
    missing = set(range(objectread.RUNS)).difference(*(share[3] for share in shares))
    if missing:  # a helper died: what it had taken is read here
        remaining = iter(sorted(missing))
        shares.append(
            objectread.scan_share(
                reader,
                listing,
                codes,
                anchors,
                lambda: next(remaining, None),
                objectread.RUNS,
                fast,
            )
        )
    store = Store(fast=fast)
    for types, content, candidates, _done in shares:
        store.types.update(types)
        store.content.update(content)
        store.candidates |= candidates
    return store


def _send(helper: subprocess.Popen, request: tuple) -> None:
    with contextlib.suppress(OSError):  # it died: its runs are read here
        helper.stdin.write(marshal.dumps(request))
    with contextlib.suppress(OSError):
        helper.stdin.close()


def _helper_share(helper: subprocess.Popen, digest: str) -> list[objectread.Share]:
    """The helper's share, or nothing when it failed (its runs are then read here)."""
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        helper.kill()

    watchdog = threading.Timer(TIMEOUT, stop)
    watchdog.start()
    try:
        out = helper.stdout.read()  # written at the very end: nothing to wait for meanwhile
        helper.wait()
    finally:
        watchdog.cancel()
    if timed_out.is_set():
        raise DomainError(f"Reading every object took longer than {TIMEOUT} s.")
    if helper.returncode != 0:
        return []
    try:
        theirs, share = marshal.loads(out)  # noqa: S302 - from the helper objectread started
    except (EOFError, ValueError, TypeError):
        return []
    if theirs != digest:  # it listed other objects: the store changed under us
        raise DomainError("The repository changed while it was being read; run again.")
    return [share]


def _scan_streams(repo: Path, home: Path, anchors: list[Anchor], *, streams: int | None) -> Store:
    """The fallback: ``git cat-file`` streams, searched as they pass."""
    deadline = time.monotonic() + TIMEOUT
    store = Store(fast=hyperscan is not None)
    count = streams or max(1, min(4, os.cpu_count() or 1))
    lister = subprocess.Popen(
        _git(repo, "cat-file", "--batch-all-objects", "--unordered", "--batch-check"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=git_env(home),
        cwd=home,
    )
    readers: list[_Reader] = []
    try:
        readers = [_Reader(repo, home, anchors, deadline) for _ in range(count)]
        with ThreadPoolExecutor(max_workers=count) as pool:
            reading = [pool.submit(reader.read) for reader in readers]
            try:
                _deal(lister, readers, store, deadline)
            finally:
                for reader in readers:
                    reader.finish()
            found = [future.result() for future in reading]
        if lister.wait(timeout=60) != 0:
            message = lister.stderr.read().decode("utf-8", "replace").strip()
            raise DomainError(f"git cat-file failed: {message}")
    finally:
        for reader in readers:
            reader.close()
        if lister.poll() is None:
            lister.kill()
            lister.wait()
        for pipe in (lister.stdout, lister.stderr):
            pipe.close()
    for reader, matches in zip(readers, found, strict=True):
        store.content.update(reader.content)
        for end, index in matches:
            oid = reader.holder(end - len(anchors[index][0]), end)
            if oid is not None:
                store.candidates.add(oid)
    store.content.update(read_objects(repo, home, store.candidates - store.content.keys()))
    return store


def _deal(lister: subprocess.Popen, readers: list[_Reader], store: Store, deadline: float):
    """Read the listing; send every object but trees to the readers in turn, a run each."""
    turn, run, size_of_run = 0, [], 0
    for line in lister.stdout:
        fields = line.decode().split()
        if len(fields) != 3:  # "<oid> missing": a corrupt object nobody can read
            store.types[fields[0]] = "unreadable"
            continue
        oid, kind, size = fields
        store.types[oid] = kind
        if kind == "tree":
            continue
        run.append((oid, kind, int(size)))
        size_of_run += int(size)
        if size_of_run >= RUN:
            readers[turn].send(run)
            turn, run, size_of_run = (turn + 1) % len(readers), [], 0
            if time.monotonic() > deadline:
                raise DomainError(f"Reading every object took longer than {TIMEOUT} s.")
    if run:
        readers[turn].send(run)
