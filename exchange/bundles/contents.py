"""``manifest.json``'s ``contents``: each content of the bundle named once, by its sha256,
with every path that carries it, in path order (its copy in ``_shared/`` among them).

A chunk writes its part (:func:`write_part`): a line per content, sorted by sha256 —
``<sha>\\t<path>\\t<path>…``, each path as JSON writes it, in order. The assembly merges the
parts a line at a time (:func:`write_manifest`) into the manifest's text, written as every
JSON file of the bundle is (sorted keys, indent 2, UTF-8), without holding it in memory: ten
thousand tasks name a million paths. A content's paths from each chunk are sorted runs, which
the assembly's sort merges (Python's sort finds runs): a content every task carries has up
to seven paths a task, and the assembly is the one step of an export no worker shares.

The manifest's ``tasks`` is written the same way (:class:`TaskList`): the assembly adds each
chunk's tasks to a file as it reads the chunk, and :func:`write_manifest` copies that file
into its place, so the assembly holds one chunk's entries at a time, not every task's.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring
from pathlib import Path

from . import layout

SHA_LENGTH = 64
_MARK = "\x00contents\x00"
_TASKS = "\x00tasks\x00"
# An entry of ``tasks`` in the manifest: a list's item in a key of the top object.
_TASK_INDENT = b"    "


class TaskList:
    """``manifest.json``'s ``tasks``, an entry at a time, into ``path``: each entry as
    ``layout.dumps`` writes it inside the manifest (indented to its depth, without the
    final newline), the entries joined by ``,\\n``. (Where ``layout.dumps`` falls back to
    json for an integer past 64 bits, it does so for that entry or the header alone, not
    for the whole manifest: no entry the export writes holds one.)"""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.count = 0
        self._handle = open(self.path, "wb")  # noqa: SIM115 - closed by close()

    def add(self, entry: dict) -> None:
        text = layout.dumps(entry).rstrip(b"\n").replace(b"\n", b"\n" + _TASK_INDENT)
        self._handle.write((b",\n" if self.count else b"") + _TASK_INDENT + text)
        self.count += 1

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> TaskList:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_part(path: Path, contents: dict[str, list[str]]) -> None:
    """A chunk's part: ``contents`` (sha256 -> its paths in the chunk), each content's paths
    in order (as the manifest lists them, by their JSON text)."""
    with open(path, "w", encoding="utf-8") as out:
        for sha in sorted(contents):
            out.write(sha + "\t" + "\t".join(sorted(map(encode_basestring, contents[sha]))) + "\n")


def _lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        yield from handle


def _shared_lines(shared: Iterable[tuple[str, str]]) -> Iterator[str]:
    for sha, path in sorted(shared):
        yield f"{sha}\t{encode_basestring(path)}\n"


def write_manifest(
    out: Path,
    header: dict,
    parts: list[Path],
    *,
    shared: Iterable[tuple[str, str]],
    tasks: TaskList | None = None,
) -> int:
    """``manifest.json`` into ``out``: ``header``'s fields, ``contents``, merged from the
    chunks' ``parts`` and ``shared`` (``(sha256, path)`` of each copy in ``_shared/``), and
    ``tasks`` from its file (closed) when given. Returns its size in bytes."""
    mark = layout.dumps(_MARK).decode().rstrip("\n")
    fields = {**header, "contents": _MARK, **({"tasks": _TASKS} if tasks is not None else {})}
    before, after = layout.dumps(fields).decode().split(mark, 1)
    merged = heapq.merge(
        _shared_lines(shared),
        *(_lines(p) for p in parts),
        key=lambda line: line[:SHA_LENGTH],
    )
    size = 0
    with open(out, "wb") as handle:

        def write(text: str) -> None:
            nonlocal size
            size += handle.write(text.encode())

        write(before)
        opened = False
        for sha, lines in itertools.groupby(merged, key=lambda line: line[:SHA_LENGTH]):
            # In path order: the same whatever the chunks. Each chunk's are a sorted run
            # (write_part), but a part written otherwise is sorted all the same.
            paths: list[str] = []
            for line in lines:
                paths.extend(line[SHA_LENGTH + 1 :].rstrip("\n").split("\t"))
            paths.sort()
            text = ",\n      ".join(paths)
            write((",\n" if opened else "{\n") + f'    "{sha}": [\n      {text}\n    ]')
            opened = True
        write("\n  }" if opened else "{}")
        if tasks is None:
            write(after)
            return size
        between, after = after.split(layout.dumps(_TASKS).decode().rstrip("\n"), 1)
        write(between)
        if not tasks.count:
            write("[]")
        else:
            write("[\n")
            with open(tasks.path, "rb") as listed:
                while block := listed.read(1 << 20):
                    size += handle.write(block)
            write("\n  ]")
        write(after)
    return size
