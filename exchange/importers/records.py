"""Files of records (a JSON array, or JSON lines), read streaming; when one is not valid JSON,
where it breaks: the line and column, the line itself and a caret under the column.

ijson's parser (the C yajl one) streams a file of any size in little memory but says only
"parse error" with a snippet in which line breaks are blanks, and never where. So once it
fails, the file is read again with Python's parser, which tells the position, one record at a
time (a few records kept, never the file), up to where ijson stopped.
"""

import codecs
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson

from hilbench_annotate.toolkit.jsontext import TOO_DEEP, json_loads

# How deep a record's JSON may nest. Records nest a few levels; ``ijson.items`` keeps a prefix
# per level (memory grows with the square of the depth: 30,000 levels take gigabytes) and
# ``json.loads`` recurses, so deeper input is refused before either gets that far.
MAX_JSON_DEPTH = 64
_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})

NOT_UTF8 = "bytes that are not UTF-8 text"
ENDS_EARLY = "the file ends before its array of records is closed with ]"
# A .json file whose first line is not a record (a whole object spread over lines, say).
NOT_RECORDS = "(a .json file holds a JSON array of records, [ {…}, {…} ], or one record per line)"
EXCERPT_BEFORE = 60  # characters of the line shown before the column, and after it
EXCERPT_AFTER = 40


class RecordStreamError(Exception):
    """The file is malformed at a place.

    ``where`` names the place as ``ImportRefused`` shows it: ``line 3, column 44`` where the
    file is not valid JSON, else the index of a record that cannot be read (one nested too
    deep). ``reason`` says what is wrong; for a syntax error it shows the line with a caret
    under the column. ``syntax``: the refusal's first line, for a syntax error (else empty).
    """

    def __init__(self, where: int | str, reason: str, *, syntax: str = ""):
        super().__init__(reason)
        self.where = where
        self.reason = reason
        self.syntax = syntax

    @classmethod
    def at(cls, *, line: int, column: int, problem: str, text: str, index: int):
        """A syntax error at ``line``, ``column`` (1-based); ``text`` is (the end of) that
        line, ``index`` the column's place in it."""
        shown = excerpt(text, index, cut_before=column - 1 > index)
        where = f"line {line}, column {column}"
        return cls(where, f"{problem}\n{shown}", syntax=f"not valid JSON at {where}")


def excerpt(text: str, index: int, *, cut_before: bool = False) -> str:
    """``text`` (one line, cut around ``index`` when long; ``cut_before``: it is already the
    end of a longer line) and a caret under ``index``, each indented as a refusal's detail.
    One character a column: tabs and other unprintable characters are shown as blanks, so
    the caret stays under its character."""
    start = max(0, index - EXCERPT_BEFORE)
    end = index + EXCERPT_AFTER
    shown = "".join(c if c.isprintable() else " " for c in text[start:end])
    left = "…" if start or cut_before else ""
    right = "…" if end < len(text) else ""
    return f"    {left}{shown}{right}\n    {' ' * (len(left) + index - start)}^"


class _TooDeep(ValueError):
    pass


def _array_items(handle) -> Iterator[Any]:
    """The items of the JSON array in ``handle``, streaming, each within MAX_JSON_DEPTH.

    Built from ijson's prefix-free events, so memory stays linear in the depth."""
    depth = 0
    builder = None
    for event, value in ijson.basic_parse(handle, use_float=True):
        depth += (event in _OPENS) - (event in _CLOSES)
        if depth > MAX_JSON_DEPTH + 1:  # + 1: the array around the records
            raise _TooDeep(f"it nests deeper than {MAX_JSON_DEPTH} levels")
        if builder is not None:
            builder.event(event, value)
            if depth == 1:
                yield builder.value
                builder = None
        elif depth == 2 and event in _OPENS:
            builder = ijson.ObjectBuilder()
            builder.event(event, value)
        elif depth == 1 and event not in _OPENS:
            yield value


class _CountingReader:
    """A binary file whose ``read`` counts the bytes it hands out: ijson reads ahead in
    blocks, so when it fails, the fault lies within what it read."""

    def __init__(self, handle):
        self.handle = handle
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.count += len(data)
        return data


def iter_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, record)`` from a JSON array or a JSON-lines file, streaming.

    A JSON-lines file is recognised by its extension or by a first character other than
    ``[``. RecordStreamError names where the file is not valid JSON (line and column), or
    the record nested deeper than MAX_JSON_DEPTH. An array of up to ``WHOLE_ARRAY_BYTES``
    that ``_whole_array`` reads as ijson would is read at once.
    """
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
        handle.seek(0)
        if head.startswith(b"[") and path.suffix != ".jsonl":
            records = _whole_array(handle) if _size(handle) <= WHOLE_ARRAY_BYTES else None
            if records is not None:
                yield from enumerate(records)
                return
            handle.seek(0)
            yield from _array_records(path, handle)
        else:
            yield from _line_records(path, handle)


# An array file up to this size is parsed whole by Python's C parser, several times faster
# than ijson's events built into records in Python (10,000 BIRD questions: 42 -> 13 ms). A
# larger one is streamed: parsed whole, a file's records take some ten times its bytes, and
# an importer reads it twice (it was 32 MiB: an import job of 50,000 BIRD records, 12 MB,
# held some 250 MB of its own; streamed, each pass costs 0.2 s more; issue 46).
WHOLE_ARRAY_BYTES = 4 * 1024 * 1024
# Escapes of UTF-16 surrogates: json makes a lone one a string no database can store,
# where ijson replaces it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _size(handle) -> int:
    return os.fstat(handle.fileno()).st_size


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):  # 1e400: ijson refuses it as an overflow
        raise _Unreadable(f"the number {text[:20]}, too large for a float")
    return value


def _ijson_int(text: str) -> int:
    value = int(text)
    if not -_INT64 < value < _INT64:  # yajl's range: -2**63 is an overflow to it too
        raise _Unreadable(f"the integer {text[:20]}, too large for the parser")
    return value


def _whole_array(handle) -> list | None:
    """The file's records, parsed at once, when json reads them exactly as the streaming
    path would: UTF-8 text (json would take UTF-16 or a raw surrogate too), no NaN or
    Infinity, no float past a double or integer past 64 bits, no surrogate escape, every
    record within MAX_JSON_DEPTH. None otherwise — an error, or a construct the two read
    differently — and the streaming path, with its messages, reads the file instead."""
    try:
        text = handle.read().decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _SURROGATE_ESCAPE.search(text):
        return None
    try:
        records = json_loads(
            text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_ijson_int
        )
    except ValueError:
        return None
    if not isinstance(records, list) or not all(map(_within_depth, records)):
        return None
    return records


def _within_depth(record: Any) -> bool:
    """Whether ``record`` nests at most MAX_JSON_DEPTH containers deep."""
    if not isinstance(record, dict | list):
        return True
    pending = [(record, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            return False
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, dict | list):
                pending.append((child, depth + 1))
    return True


def _array_records(path: Path, handle) -> Iterator[tuple[int, Any]]:
    reader = _CountingReader(handle)
    index = -1
    try:
        for index, record in enumerate(_array_items(reader)):
            yield index, record
    except _TooDeep as exc:
        raise RecordStreamError(index + 1, str(exc)) from None
    except (ijson.JSONError, ValueError) as exc:
        found = _array_syntax_error(path, reader.count)
        if found is None:  # Python's parser reads it, yajl does not: yajl's words, no place
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            found = RecordStreamError(
                "the file", f"not valid JSON ({first})", syntax="not valid JSON"
            )
        raise found from None


def _line_records(path: Path, handle) -> Iterator[tuple[int, Any]]:
    seen_one = False
    for index, raw in enumerate(handle):
        if not raw.strip():
            continue
        try:
            yield index, json_loads(raw)
        except json.JSONDecodeError as exc:
            if exc.msg == TOO_DEEP:
                raise RecordStreamError(index, TOO_DEEP) from None
            hint = f" {NOT_RECORDS}" if not seen_one and path.suffix != ".jsonl" else ""
            raise _line_error(raw, index, exc.pos, _words(exc) + hint) from None
        except UnicodeDecodeError as exc:
            raise _line_error(raw, index, None, NOT_UTF8, bad_byte=exc.start) from None
        seen_one = True


def _line_error(
    raw: bytes, index: int, pos: int | None, problem: str, *, bad_byte: int = 0
) -> RecordStreamError:
    """The error at ``pos`` of line ``index`` (0-based); ``pos`` None: at byte ``bad_byte``."""
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    if pos is None:
        pos = len(raw[:bad_byte].decode("utf-8", "replace"))
    pos = _not_past_the_end(text, pos)
    return RecordStreamError.at(
        line=index + 1, column=pos + 1, problem=problem, text=text, index=pos
    )


def _words(exc: json.JSONDecodeError) -> str:
    """Python's message without its dangling "at" ("Unterminated string starting at"), as
    the place is said apart."""
    return re.sub(r"( starting)? at$", "", exc.msg)


def _not_past_the_end(text: str, pos: int) -> int:
    """``pos``, or where the text ends if only blanks follow: "the file ends here" points
    just past the last character, not at a blank line after it."""
    return len(text[:pos].rstrip()) if not text[pos:].strip() else pos


# Python's parser takes what yajl refuses: NaN and Infinity, and integers past 64 bits.
_INT64 = 2**63


class _Unreadable(ValueError):
    pass


def _no_constant(name: str):
    raise _Unreadable(f"{name}, which JSON does not allow")


def _int64(text: str) -> int:
    value = int(text)
    if not -_INT64 <= value < _INT64:
        raise _Unreadable(f"the integer {text[:20]}…, too large for the parser (64 bits)")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_int=_int64)
_BLANKS = re.compile(r"[ \t\n\r]*")
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8 (surrogateescape)
_CHUNK = 1 << 16
_HEAD = 200  # characters kept of a line's start once parsed (for the excerpt)


class _Window:
    """A file's text read forward, up to ``limit`` bytes, keeping what is not parsed yet:
    the line and column it starts at, and the end of the line before it (``head``)."""

    def __init__(self, handle, limit: int):
        self.handle = handle
        self.left = limit
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.text = ""
        self.line, self.column, self.head = 1, 1, ""
        self.ended = False
        self.bad_at: int | None = None  # where the first byte that is not UTF-8 is

    def grow(self) -> bool:
        """Read as much again as is kept (a long record is parsed a few times, not once a
        block); False once the limit is reached."""
        if self.ended:
            return False
        data = self.handle.read(min(max(_CHUNK, len(self.text)), self.left))
        self.left -= len(data)
        self.ended = not data or self.left <= 0
        piece = self.decoder.decode(data, final=self.ended)
        if self.bad_at is None and (bad := _ESCAPED.search(piece)):
            self.bad_at = len(self.text) + bad.start()
        self.text += piece
        return True

    def drop(self, count: int) -> None:
        gone, self.text = self.text[:count], self.text[count:]
        if (newline := gone.rfind("\n")) >= 0:
            self.line += gone.count("\n")
            self.head = gone[newline + 1 :][-_HEAD:]
            self.column = len(gone) - newline
        else:
            self.head = (self.head + gone)[-_HEAD:]
            self.column += count
        if self.bad_at is not None:
            self.bad_at -= count

    def error(self, pos: int, problem: str) -> RecordStreamError:
        if self.bad_at is not None and self.bad_at <= pos:
            pos, problem = self.bad_at, NOT_UTF8
        if self.ended:
            pos = _not_past_the_end(self.text, pos)
        before = self.text[:pos]
        start = before.rfind("\n") + 1
        end = self.text.find("\n", pos)
        line_text = self.text[start : end if end >= 0 else len(self.text)].rstrip("\r")
        if start:
            line, column, index = self.line + before.count("\n"), pos - start + 1, pos - start
        else:
            line_text = self.head + line_text
            line, column, index = self.line, self.column + pos, len(self.head) + pos
        return RecordStreamError.at(
            line=line, column=column, problem=problem, text=line_text, index=index
        )


def _array_syntax_error(path: Path, limit: int) -> RecordStreamError | None:
    """Where the JSON array in ``path`` first breaks, within its first ``limit`` bytes;
    None if Python's parser finds no fault there."""
    with open(path, "rb") as handle:
        window = _Window(handle, limit)
        expect, pos = "[", 0  # then "first" (a record or ]), "next" (, or ]), "record", "end"
        while True:
            pos = _BLANKS.match(window.text, pos).end()
            if pos == len(window.text):
                if window.grow():
                    continue
                if expect == "end":
                    return None
                return window.error(pos, "Expecting value" if expect == "[" else ENDS_EARLY)
            char = window.text[pos]
            if expect in ("first", "record") and not (expect == "first" and char == "]"):
                try:
                    _record, end = _DECODER.raw_decode(window.text, pos)
                except json.JSONDecodeError as exc:
                    if window.grow():  # the record may go on past what was read
                        continue
                    return window.error(exc.pos, _words(exc))
                except (_Unreadable, RecursionError) as exc:
                    if isinstance(exc, RecursionError):
                        return None
                    return window.error(pos, f"this record holds {exc}")
                if end == len(window.text) and window.grow():
                    continue  # a number at the end of what was read may go on
                if window.bad_at is not None and window.bad_at < end:
                    return window.error(window.bad_at, NOT_UTF8)
                window.drop(end)
                expect, pos = "next", 0
                continue
            if expect == "[" and char == "[":
                expect = "first"
            elif expect in ("first", "next") and char == "]":
                expect = "end"
            elif expect == "next" and char == ",":
                expect = "record"
            else:
                problem = {"next": "Expecting ',' delimiter", "end": "Extra data"}
                return window.error(pos, problem.get(expect, "Expecting value"))
            pos += 1
