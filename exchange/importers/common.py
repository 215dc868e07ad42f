import csv
import hashlib
import io
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings

from hilbench_annotate.models import SqlDatabase
from hilbench_annotate.toolkit.textbytes import UTF8, text_decode

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


def read_descriptions(directory: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Read ``<table>.csv`` description files: ``({table: csv text}, {table: encoding},
    problems)``. BIRD's come in UTF-8, UTF-8 with a byte order mark and Windows-1252; the
    text is what the workspace shows, and ``encodings`` (each file not plain UTF-8) lets the
    export write the source's bytes back (``toolkit/textbytes.py``)."""
    descriptions: dict[str, str] = {}
    encodings: dict[str, str] = {}
    problems: list[str] = []
    if not directory.is_dir():
        return descriptions, encodings, problems
    for csv_path in sorted(directory.glob("*.csv")):
        text, encoding = text_decode(csv_path.read_bytes())
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
        if encoding != UTF8:
            encodings[csv_path.stem] = encoding
    return descriptions, encodings, problems


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


def database_store(
    *,
    db_id: str,
    source: Path,
    descriptions: dict[str, str],
    encodings: dict[str, str] | None = None,
) -> SqlDatabase:
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
            "description_encodings": encodings or {},
        },
    )
    return database
