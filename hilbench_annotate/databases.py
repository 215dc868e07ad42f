"""Task databases on disk: the limits of every query, each project's edited copies, its quota.

An edited copy (a task database with its edit script applied, ``toolkit/sqledit.py``) is a
cache, rebuilt from the stored database and the script whenever it is missing, so copies can
be deleted freely. Each project's copies live in their own folder,
``DATABASE_STORE/edited/project-<id>/``, and count against the project's quota together with
the stored databases its tasks use. When a new copy would pass the quota, the project's copies
nobody used for ``IN_USE_S`` make room, oldest first; if that is not enough the copy is refused
with a message saying what takes the room. The beat's ``databases.sweep`` deletes every copy
unused for ``EDITED_DATABASE_TTL_S``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import Sum

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import SqlDatabase, SqlEnvironment
from hilbench_annotate.toolkit.compare import golden_output_csv
from hilbench_annotate.toolkit.sqlconsole import QueryLimits, StorageFull, amount, run_select
from hilbench_annotate.toolkit.sqledit import edited_database

# A copy used this recently may be open in another request or job (an evaluation pass, an
# export): it never makes room.
IN_USE_S = 1800
# A builder's temp file this old was left by a process that died.
ABANDONED_S = 3600
BUILDING_SUFFIX = ".building"
# The most rows a golden output is filled with from the gold SQL's result.
GOLDEN_ROW_CAP = 200_000


def query_limits() -> QueryLimits:
    """The limits of every query on a task database, from the settings (read at each query,
    so a test's or an operator's change applies at once)."""
    return QueryLimits(
        value_bytes=settings.SQL_VALUE_BYTES,
        memory_bytes=settings.SQL_MEMORY_MB * 1024 * 1024,
        cell_bytes=settings.SQL_CONSOLE_CELL_BYTES,
        result_bytes=settings.SQL_CONSOLE_RESULT_BYTES,
        exact_result_bytes=settings.SQL_EXACT_RESULT_BYTES,
    )


def gold_sql_output(database: Path, gold_sql: str) -> str:
    """``golden_output.csv`` from the gold SQL's result on ``database``, every value exact:
    what the workspace's "Fill from the gold SQL's result" puts in the form and what an import
    stores for a SQL task that came without one. Raises DomainError when the query is refused
    or times out (``SQL_CHECK_TIMEOUT_S``) or returns more than ``GOLDEN_ROW_CAP`` rows."""
    result = run_select(
        database,
        gold_sql,
        timeout_s=settings.SQL_CHECK_TIMEOUT_S,
        row_cap=GOLDEN_ROW_CAP,
        exact=True,
    )
    if result.truncated:
        raise DomainError(f"The gold SQL returns more than {GOLDEN_ROW_CAP:,} rows; narrow it.")
    return golden_output_csv(result.columns, result.rows)


def edited_root() -> Path:
    return Path(settings.DATABASE_STORE) / "edited"


def edited_dir(project_id: int) -> Path:
    return edited_root() / f"project-{int(project_id)}"


@dataclass(frozen=True)
class Storage:
    """A project's database disk, in bytes."""

    quota: int
    stored: int
    edited: int


@dataclass(frozen=True)
class _File:
    path: Path
    size: int
    used_at: float


def _files(folder: Path) -> list[_File]:
    """The files in ``folder``, least recently used first."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    files = []
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                files.append(_File(Path(entry.path), st.st_size, st.st_mtime))
        except FileNotFoundError:
            continue  # deleted meanwhile by a sweep or another request
    return sorted(files, key=lambda f: f.used_at)


def _stored_bytes(project_id: int) -> int:
    used = SqlEnvironment.objects.filter(task__project_id=project_id).values("database_id")
    total = SqlDatabase.objects.filter(pk__in=used).aggregate(total=Sum("size_bytes"))["total"]
    return int(total or 0)


def project_storage(project_id: int) -> Storage:
    return Storage(
        quota=settings.PROJECT_DATABASE_QUOTA_MB * 1_000_000,
        stored=_stored_bytes(project_id),
        edited=sum(f.size for f in _files(edited_dir(project_id))),
    )


def _make_room(project_id: int, need: int) -> int:
    """Bytes a new copy may take within the project's quota, after deleting as many of its
    copies unused for ``IN_USE_S`` as it takes (least recently used first) to fit ``need``."""
    storage = project_storage(project_id)
    free = storage.quota - storage.stored - storage.edited
    now = time.time()
    for file in _files(edited_dir(project_id)):
        if free >= need or now - file.used_at < IN_USE_S:
            break  # the rest were used more recently still
        building = file.path.name.endswith(BUILDING_SUFFIX)
        if building and now - file.used_at < ABANDONED_S:
            continue
        file.path.unlink(missing_ok=True)
        free += file.size
    return free


def edited_copy(
    *, project_id: int, source: Path, edit_script: str, timeout_s: float | None = None
) -> Path:
    """``source`` with ``edit_script`` applied, cached for the project within its quota.

    An empty script gives ``source`` (an export asks it of every task). Raises
    EditScriptError when the script fails and StorageFull, naming the quota and what takes
    it, when the copy does not fit.
    """
    if not (edit_script or "").strip():
        return Path(source)
    try:
        return edited_database(
            source=Path(source),
            edit_script=edit_script,
            cache_dir=edited_dir(project_id),
            timeout_s=settings.SQL_CHECK_TIMEOUT_S if timeout_s is None else timeout_s,
            room=lambda need: _make_room(project_id, need),
        )
    except StorageFull as exc:
        storage = project_storage(project_id)
        raise StorageFull(
            f"No room for this task's edited database: {exc}. The project may keep "
            f"{amount(storage.quota)} of task databases; its stored databases take "
            f"{amount(storage.stored)} and edited copies in use {amount(storage.edited)}. "
            f"Copies unused for {IN_USE_S // 60} minutes make room automatically; an operator "
            "can raise HILBENCH_PROJECT_DATABASE_QUOTA_MB."
        ) from None


def edited_copies_sweep(*, now: float | None = None) -> int:
    """Delete every edited copy unused for ``EDITED_DATABASE_TTL_S`` and every temp file a
    dead builder left; returns how many files were deleted."""
    now = time.time() if now is None else now
    # Never below IN_USE_S: a copy a job is still reading must outlive a short TTL.
    ttl = max(settings.EDITED_DATABASE_TTL_S, IN_USE_S)
    removed = 0
    for folder, _dirs, names in os.walk(edited_root()):
        for name in names:
            path = Path(folder) / name
            limit = ABANDONED_S if name.endswith(BUILDING_SUFFIX) else ttl
            try:
                if now - path.lstat().st_mtime > limit:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
    return removed
