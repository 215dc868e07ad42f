import csv
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import ijson
from django.conf import settings

from hilbench_annotate.models import SqlDatabase
from hilbench_annotate.toolkit.jsontext import json_loads

DESCRIPTION_HEADER = [
    "original_column_name",
    "column_name",
    "column_description",
    "data_format",
    "value_description",
]
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"created": self.created, "unchanged": self.unchanged, "notes": self.notes}

    def summary(self) -> str:
        text = f"{len(self.created)} task(s) imported, {len(self.unchanged)} already present"
        return text + "".join(f"\n  note: {n}" for n in self.notes)


class RecordStreamError(Exception):
    """The file itself is malformed at a given record."""

    def __init__(self, index: int, reason: str):
        super().__init__(reason)
        self.index = index
        self.reason = reason


# How deep a record's JSON may nest. Records nest a few levels; ``ijson.items`` keeps a prefix
# per level (memory grows with the square of the depth: 30,000 levels take gigabytes) and
# ``json.loads`` recurses, so deeper input is refused before either gets that far.
MAX_JSON_DEPTH = 64
_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})


def _array_items(handle) -> Iterator[Any]:
    """The items of the JSON array in ``handle``, streaming, each within MAX_JSON_DEPTH.

    Built from ijson's prefix-free events, so memory stays linear in the depth."""
    depth = 0
    builder = None
    for event, value in ijson.basic_parse(handle, use_float=True):
        depth += (event in _OPENS) - (event in _CLOSES)
        if depth > MAX_JSON_DEPTH + 1:  # + 1: the array around the records
            raise ValueError(f"it nests deeper than {MAX_JSON_DEPTH} levels")
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


def iter_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, record)`` from a JSON array or a JSON-lines file, streaming.

    A JSON-lines file is recognised by its extension or by a first character other than
    ``[``. A syntax error, or a record nested deeper than MAX_JSON_DEPTH, is raised as
    RecordStreamError naming the record where it occurred.
    """
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
        handle.seek(0)
        is_array = head.startswith(b"[") and path.suffix != ".jsonl"
        if is_array:
            index = -1
            try:
                for index, record in enumerate(_array_items(handle)):
                    yield index, record
            except (ijson.JSONError, ValueError) as exc:
                raise RecordStreamError(
                    index + 1, f"the file is not valid JSON here: {exc}"
                ) from None
            return
        for index, raw in enumerate(handle):
            if not raw.strip():
                continue
            try:
                yield index, json_loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise RecordStreamError(
                    index, f"line {index + 1} is not valid JSON: {exc}"
                ) from None


def decode_text(data: bytes) -> str:
    """Decode a text file as UTF-8 (with or without BOM), else as Windows-1252.

    BIRD's description CSVs come in both encodings.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def read_descriptions(directory: Path) -> tuple[dict[str, str], list[str]]:
    """Read ``<table>.csv`` description files: ``({table: csv text}, problems)``."""
    descriptions: dict[str, str] = {}
    problems: list[str] = []
    if not directory.is_dir():
        return descriptions, problems
    for csv_path in sorted(directory.glob("*.csv")):
        text = decode_text(csv_path.read_bytes())
        try:
            rows = list(csv.reader(io.StringIO(text)))
        except csv.Error as exc:
            problems.append(f"{csv_path.name}: not a readable CSV ({exc})")
            continue
        header = [h.strip().lower() for h in rows[0]] if rows else []
        if csv_path.stem != "table_descriptions" and header[:2] != DESCRIPTION_HEADER[:2]:
            problems.append(
                f"{csv_path.name}: header {rows[0] if rows else []} does not start with "
                f"{DESCRIPTION_HEADER[:2]}"
            )
            continue
        descriptions[csv_path.stem] = text
    return descriptions, problems


def sqlite_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable SQLite database file, or None.

    The header alone proves nothing (random bytes behind it import, then every page that
    reads the database fails), so SQLite checks the whole file (``PRAGMA quick_check``) on a
    read-only connection.
    """
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        return f"cannot read {path.name}: {exc.strerror}"
    if magic != SQLITE_MAGIC:
        return f"{path.name} is not a SQLite database file"
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
        try:
            findings = [row[0] for row in connection.execute("PRAGMA quick_check(5)")]
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return f"{path.name} is damaged or not a SQLite database ({exc})"
    if findings != ["ok"]:
        return f"{path.name} is damaged: {'; '.join(map(str, findings))}"
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def database_store(*, db_id: str, source: Path, descriptions: dict[str, str]) -> SqlDatabase:
    """Copy a database into the content-addressed store (once) and register it.

    The file is written under a temporary name and renamed, so a half-copied file is never
    taken for a stored one. Caller is inside the import's transaction; a file left by a
    rolled-back import is harmless (same content, same name) and reused next time.
    """
    sha = file_sha256(source)
    relative = f"{sha[:2]}/{sha}.sqlite"
    target = settings.DATABASE_STORE / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(fd)
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    database, _ = SqlDatabase.objects.get_or_create(
        db_id=db_id,
        sha256=sha,
        defaults={
            "size_bytes": target.stat().st_size,
            "storage_path": relative,
            "descriptions": descriptions,
        },
    )
    return database
