"""Edited database copies cannot fill the disk (issue 19, item 4a).

The red team filled 200 MB in 0.37 s: every distinct edit script left a copy in
``var/databases/edited/`` that nothing deleted. Copies now live per project, count against the
project's quota with its stored databases, make room for each other when unused, and are swept
by the beat. Real SQLite files and real directories throughout.
"""

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from hilbench_annotate.databases import (
    IN_USE_S,
    edited_copies_sweep,
    edited_copy,
    edited_dir,
    project_storage,
)
from hilbench_annotate.models import SqlDatabase
from hilbench_annotate.toolkit.sqlconsole import StorageFull, run_select
from tests.factories import ProjectFactory, TaskFactory

pytestmark = pytest.mark.django_db

FILLER_ROWS = 60  # 60 rows of 10 kB: a database of about 0.6 MB


def _stored_database(project, *, db_id: str = "shop") -> tuple[SqlDatabase, object]:
    """A real database file in the store, used by one task of ``project``."""
    staging = Path(django_settings.DATABASE_STORE) / "staging.sqlite"
    staging.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(staging)
    conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, blob BLOB)")
    conn.executemany(
        "INSERT INTO filler VALUES (?, randomblob(10000))", [(i,) for i in range(FILLER_ROWS)]
    )
    conn.commit()
    conn.close()
    sha = hashlib.sha256(staging.read_bytes()).hexdigest()
    relative = f"{sha[:2]}/{sha}.sqlite"
    target = Path(django_settings.DATABASE_STORE) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)
    database = SqlDatabase.objects.create(
        db_id=db_id, sha256=sha, size_bytes=target.stat().st_size, storage_path=relative
    )
    task = TaskFactory(project=project)
    task.sql_environment.database = database
    task.sql_environment.save()
    return database, task


def _script(n: int) -> str:
    return f"CREATE TABLE codes_{n} (code TEXT); INSERT INTO codes_{n} VALUES ('{n}');"  # noqa: S608


def _age(path: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(path, (when, when))


def test_copies_are_kept_per_project_and_counted_with_its_stored_databases(project):
    database, task = _stored_database(project)
    copy = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1))
    assert copy.parent == edited_dir(project.pk)
    assert run_select(copy, "SELECT code FROM codes_1").rows == [("1",)]
    storage = project_storage(project.pk)
    assert storage.stored == database.size_bytes
    assert storage.edited == copy.stat().st_size
    # Another project's storage is its own.
    assert project_storage(ProjectFactory().pk).stored == 0


def test_distinct_scripts_cannot_pass_the_projects_quota(project, settings):
    database, task = _stored_database(project)
    size = database.size_bytes
    # Room for the stored database and two copies, not three.
    settings.PROJECT_DATABASE_QUOTA_MB = (3 * size + size // 2) / 1_000_000
    edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1))
    edited_copy(project_id=project.pk, source=database.path, edit_script=_script(2))
    before = sorted(edited_dir(project.pk).iterdir())
    with pytest.raises(StorageFull) as refused:
        edited_copy(project_id=project.pk, source=database.path, edit_script=_script(3))
    message = str(refused.value)
    assert "No room for this task's edited database" in message
    assert "its stored databases take" in message and "edited copies in use" in message
    assert "HILBENCH_PROJECT_DATABASE_QUOTA_MB" in message
    assert str(django_settings.DATABASE_STORE) not in message  # no server paths
    # Nothing already made was lost, and nothing half-made was left.
    assert sorted(edited_dir(project.pk).iterdir()) == before
    total = sum(p.stat().st_size for p in edited_dir(project.pk).iterdir())
    assert size + total <= settings.PROJECT_DATABASE_QUOTA_MB * 1_000_000


def test_copies_nobody_used_lately_make_room_least_recently_used_first(project, settings):
    database, task = _stored_database(project)
    size = database.size_bytes
    settings.PROJECT_DATABASE_QUOTA_MB = (3 * size + size // 2) / 1_000_000
    old = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1))
    recent = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(2))
    _age(old, IN_USE_S + 120)
    _age(recent, IN_USE_S + 60)
    # Using a copy again marks it used: it is now the one kept.
    assert edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1)) == old
    new = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(3))
    assert sorted(p.name for p in edited_dir(project.pk).iterdir()) == sorted([old.name, new.name])
    # The evicted copy is rebuilt when it is needed again: it was only a cache.
    _age(old, IN_USE_S + 60)
    again = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(2))
    assert run_select(again, "SELECT code FROM codes_2").rows == [("2",)]


def test_a_database_bigger_than_the_quota_is_refused_before_copying(project, settings):
    database, task = _stored_database(project)
    settings.PROJECT_DATABASE_QUOTA_MB = (database.size_bytes + 1000) / 1_000_000
    with pytest.raises(StorageFull, match=r"the copy needs .* and only .* is free"):
        edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1))
    assert not edited_dir(project.pk).exists() or list(edited_dir(project.pk).iterdir()) == []


def test_the_sweep_deletes_copies_unused_for_the_ttl_and_abandoned_temp_files(project, settings):
    settings.EDITED_DATABASE_TTL_S = 3600
    database, task = _stored_database(project)
    stale = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1))
    fresh = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(2))
    _age(stale, 3600 + 60)
    abandoned = edited_dir(project.pk) / ".0123456789abcdef-x.building"
    abandoned.write_bytes(b"half a copy")
    _age(abandoned, 2 * 3600)
    building = edited_dir(project.pk) / ".fedcba9876543210-y.building"
    building.write_bytes(b"being built")

    assert edited_copies_sweep() == 2
    assert sorted(p.name for p in edited_dir(project.pk).iterdir()) == sorted(
        [fresh.name, building.name]
    )


def test_the_beat_runs_the_sweep(project, settings):
    import hilbench_annotate.tasks  # noqa: F401 - registers the task, as the worker does
    from hilbench_annotate.celery import app

    schedule = django_settings.CELERY_BEAT_SCHEDULE
    entry = next(e for e in schedule.values() if e["task"] == "databases.sweep")
    assert entry["schedule"] <= 3600
    database, task = _stored_database(project)
    stale = edited_copy(project_id=project.pk, source=database.path, edit_script=_script(1))
    _age(stale, settings.EDITED_DATABASE_TTL_S + 60)
    app.tasks["databases.sweep"].apply().get()
    assert not stale.exists()
