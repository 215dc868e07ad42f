"""Every object of a git store read in process with libgit2 and searched with Hyperscan.

The fast path of :mod:`validators.objectscan`. ``git cat-file --batch`` pushes every byte of
every blob through a pipe to Python (1.1 GB for pytest: ≈ 0.4 s of system time on top of
git's inflating); here libgit2 (pygit2) inflates each object into the process that searches
it, and no content crosses a pipe. libgit2 lists the objects in pack order (what delta
chains want: a base is met before its deltas); the listing is cut into :data:`RUNS`
consecutive runs, which this process and a helper process (``python -I`` on this file: it
imports only pygit2 and Hyperscan, so it starts in ≈ 60 ms) take from one pipe holding a
byte per run until it is empty — whoever gets a core does more, and each run is read by
exactly one of them. Processes rather than threads: neither pygit2's reads nor Hyperscan's
scans let go of the GIL.

Each object is searched on its own (Hyperscan block mode, or ``bytes.find`` where Hyperscan
is not installed), so a match always lies inside one object. Trees are not read (their type
comes from the pack's entry headers, :mod:`validators.packindex`): they hold file names and
ids, never a line of text.

Nothing here imports the project (the helper runs it as a script) and nothing writes to the
store: libgit2 opens the objects directory only (no configuration, no refs, no hooks).
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
import sys
from collections.abc import Callable, Iterable

try:
    import hyperscan
except ImportError:  # pragma: no cover - every platform we build for has the wheel
    hyperscan = None

RUNS = 64  # consecutive stretches of the listing: the unit the processes share out
TYPES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}  # libgit2's and the pack's codes
TREE, BLOB = 2, 3

Anchor = tuple[bytes, bool]  # (bytes, in any letter case): lower-cased when True


def compile_literals(anchors: list[Anchor], mode):
    """A Hyperscan database finding every anchor as a literal, in ``mode`` (block, stream)."""
    database = hyperscan.Database(mode=mode)
    database.compile(
        expressions=[text for text, _caseless in anchors],
        ids=list(range(len(anchors))),
        elements=len(anchors),
        # Given per expression: the literal compiler needs it.
        flags=[hyperscan.HS_FLAG_CASELESS if caseless else 0 for _text, caseless in anchors],
        literal=True,
    )
    return database


# (types, content, candidates, runs done): plain values, so the helper's answer marshals
# without this module being importable under the helper's name (``__main__``).
Share = tuple[dict[str, str], dict[str, bytes], set[str], list[int]]


class StoreError(Exception):
    """libgit2 cannot open the objects directory."""


@functools.cache
def _pygit2():
    """libgit2's wheel, or None without it (objectscan then streams objects through git
    cat-file). Loaded when a scan first asks, not with the module: 0.03 s of every process's
    start-up, since the validators' registry imports this module from ``AppConfig.ready``."""
    try:
        import pygit2
    except ImportError:  # pragma: no cover - every platform we build for has the wheel
        return None
    return pygit2


def available() -> bool:
    return _pygit2() is not None


def open_store(objects: str):
    """The object database of the ``objects`` directory, alternates included, as git sees it.

    Strict hash verification is libgit2's default: it hashes every object it inflates again
    (SHA-1 with collision detection), which triples the time of a full read. git's
    ``cat-file`` does not verify either; what is searched is the content, whatever its id.
    The option is process-wide; nothing else in the project uses pygit2.
    """
    pygit2 = _pygit2()
    pygit2.option(pygit2.GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0)
    try:
        return pygit2.Odb(objects)
    except (pygit2.GitError, OSError) as error:
        raise StoreError(str(error)) from error


class _Finder:
    """Whether one object's content holds any anchor."""

    def __init__(self, anchors: list[Anchor], fast: bool):
        self.anchors = anchors
        self.database = None
        if anchors and fast and hyperscan is not None:
            self.database = compile_literals(anchors, hyperscan.HS_MODE_BLOCK)
        self.any_caseless = any(caseless for _text, caseless in anchors)
        self.found = False
        # Held here: the binding keeps no reference to its handler.
        self._handler = self._on_match

    def _on_match(self, *_match) -> None:
        self.found = True

    def holds(self, data: bytes) -> bool:
        if not self.anchors:
            return False
        if self.database is not None:
            self.found = False
            self.database.scan(data, match_event_handler=self._handler)
            return self.found
        data = bytes(data)  # a blob comes as a memoryview
        lowered = data.lower() if self.any_caseless else data
        return any(text in (lowered if caseless else data) for text, caseless in self.anchors)


def list_objects(store) -> tuple[list, bytes, str]:
    """Every object of every backend (packs, loose objects, alternates) once, in libgit2's
    order — each pack's own order, which is what its delta chains want; their ids end to
    end; and a digest of that listing, which tells whether two processes listed the same."""
    listing = list(dict.fromkeys(store))
    ids = b"".join(oid.raw for oid in listing)
    return listing, ids, hashlib.blake2b(ids, digest_size=16).hexdigest()


def scan_share(
    store,
    listing: list,
    codes: bytes,
    anchors: Iterable[Anchor],
    claim: Callable[[], int | None],
    runs: int,
    fast: bool,
) -> Share:
    """Read and search the objects of every run of ``listing`` that ``claim`` hands out
    until it says None: every object's type, the content of commits, tags and objects
    holding an anchor. ``codes`` gives each object's type where the packs say it
    (:mod:`validators.packindex`; 0: ask libgit2). ``fast``: with Hyperscan where installed
    (else ``bytes.find``: the same answer)."""
    pygit2 = _pygit2()
    finder = _Finder(list(anchors), fast)
    objects = pygit2.Repository()  # no path: no configuration, refs or work tree; only...
    objects.set_odb(store)  # ...this store, whose blobs it hands out as buffers
    types: dict[str, str] = {}
    content: dict[str, bytes] = {}
    candidates: set[str] = set()
    done = []
    while (run := claim()) is not None:
        done.append(run)
        first, last = run * len(listing) // runs, (run + 1) * len(listing) // runs
        for oid, code in zip(listing[first:last], codes[first:last], strict=True):
            name = str(oid)
            try:
                if not code:
                    code = int(store.read_header(oid)[0])
                if code == TREE:
                    types[name] = "tree"
                    continue
                blob = objects[oid] if code == BLOB else None
                if isinstance(blob, pygit2.Blob):  # searched where libgit2 inflated it
                    data = memoryview(blob)
                else:
                    code, data = store.read(oid)
            except (pygit2.GitError, KeyError, ValueError):  # corrupt: nobody can read it
                types[name] = "unreadable"
                continue
            kind = types[name] = TYPES.get(int(code), "unknown")
            if kind in ("commit", "tag"):
                content[name] = data
            if finder.holds(data):
                candidates.add(name)
                content[name] = bytes(data)
    return types, content, candidates, done


def pipe_claim(descriptor: int) -> Callable[[], int | None]:
    """Runs from a pipe holding one byte per run (read one at a time: atomic between
    processes); None once it is empty and its writer closed."""

    def claim() -> int | None:
        byte = os.read(descriptor, 1)
        return byte[0] if byte else None

    return claim


def main() -> None:
    """The helper: a request ``(objects, anchors, claim descriptor, runs, digest, codes,
    fast)`` marshalled on stdin; ``(digest, share)`` marshalled on stdout — the share only
    when this process listed the same objects as the one that asked (the same digest)."""
    # From objectscan, which started this process (the same interpreter: same format).
    request = marshal.loads(sys.stdin.buffer.read())  # noqa: S302
    objects, anchors, descriptor, runs, digest, codes, fast = request
    store = open_store(objects)
    listing, _ids, mine = list_objects(store)
    share = None
    if mine == digest:
        share = scan_share(store, listing, codes, anchors, pipe_claim(descriptor), runs, fast)
    sys.stdout.buffer.write(marshal.dumps((mine, share)))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
