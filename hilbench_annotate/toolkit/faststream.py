"""A ``git fast-import`` stream from outside, passed on only if it is what ``fast-export`` writes.

``git fast-import`` obeys commands inside its stream, and some of them reach past the
repository it fills: ``option git export-pack-edges=<path>`` opens any file the worker may
write for appending, ``feature export-marks=<path>`` writes one, ``cat-blob`` / ``ls`` /
``get-mark`` answer on other descriptors. A bundle's repository stream is task-supplied bytes,
so it is read here first, command by command (the payload of each ``data <n>`` skipped whole,
never parsed as commands), and only the commands a plain ``fast-export`` of one branch writes
are forwarded: a stream holding anything else is refused before ``fast-import`` has seen a
single byte of the offending command — nothing it names is opened, and nothing the stream
made so far is kept (the caller removes the half-filled repository).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from hilbench_annotate.errors import DomainError

MAX_LINE = 64 * 1024  # a command line (an `M` line carries a path; git's own limit is PATH_MAX)
CHUNK = 1 << 20

# The commands `git fast-export` writes for one branch (no tags, no notes, no marks files).
TOP_LEVEL = frozenset({b"blob", b"commit", b"reset", b"done", b"progress", b"checkpoint"})
IN_COMMAND = frozenset(
    {
        b"mark",
        b"original-oid",
        b"author",
        b"committer",
        b"encoding",
        b"from",
        b"merge",
        b"M",
        b"D",
        b"C",
        b"R",
        b"deleteall",
    }
)
_DATA = re.compile(rb"^data (\d{1,12})$")


class StreamRefused(DomainError):
    """The stream holds a command the app does not forward (named, with its line number)."""


def checked_stream(source: BinaryIO, *, branch: str) -> Iterator[bytes]:
    """The bytes of ``source``, in pieces, as long as every command is one ``fast-export``
    writes for ``refs/heads/<branch>``; StreamRefused at the first that is not (before it is
    yielded). ``data`` payloads are passed through unread."""
    ref = f"refs/heads/{branch}".encode()
    number = 0
    while True:
        line = source.readline(MAX_LINE + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE:
            raise StreamRefused(f"line {number} of the repository stream is over {MAX_LINE} bytes")
        text = line.rstrip(b"\n")
        word = text.split(b" ", 1)[0]
        data = _DATA.match(text)
        if data:
            yield line
            yield from _payload(source, int(data.group(1)), number)
            continue
        if text.startswith(b"data "):
            raise StreamRefused(
                f"line {number} of the repository stream: only `data <count>` is accepted "
                "(fast-export never writes delimited data)"
            )
        _check_command(text, word, ref=ref, number=number)
        yield line


def _check_command(text: bytes, word: bytes, *, ref: bytes, number: int) -> None:
    if not text or text.startswith(b"#"):
        return
    if word not in TOP_LEVEL and word not in IN_COMMAND:
        shown = word[:40].decode("utf-8", "replace")
        raise StreamRefused(
            f"line {number} of the repository stream: the command `{shown}` is not accepted "
            "(only what `git fast-export` writes for one branch: no option, feature, tag, "
            "notes, marks or cat-blob commands)"
        )
    if word in (b"commit", b"reset") and text != word + b" " + ref:
        shown = text[:200].decode("utf-8", "replace")
        raise StreamRefused(
            f"line {number} of the repository stream: `{shown}` names a ref other than "
            f"{ref.decode()}"
        )


def _payload(source: BinaryIO, size: int, number: int) -> Iterator[bytes]:
    left = size
    while left:
        piece = source.read(min(CHUNK, left))
        if not piece:
            raise StreamRefused(
                f"line {number} of the repository stream announces {size} bytes of data; "
                "the stream ends first"
            )
        left -= len(piece)
        yield piece
