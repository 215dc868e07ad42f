"""Export → import into an empty database → export again: the same task files, byte for byte.

"Task files" are everything but ``manifest.json`` (it carries the export's time) and
``provenance/`` (the history of the copy that exported it: an imported task starts a new
history as a draft)."""

import json
import shutil

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from exchange.bundles import layout
from hilbench_annotate.models import Membership, Project, Repository, SqlDatabase, Task
from hilbench_annotate.services import task_snapshot

from .bundle_helpers import export, members, plant_swe, seed_demo, sql_task

pytestmark = pytest.mark.django_db


def _task_files(bundle) -> dict[str, bytes]:
    return {
        name: data
        for name, data in members(bundle).items()
        if name != layout.MANIFEST and not any(name.endswith(p) for p in layout.PROVENANCE)
    }


def _empty_the_database(settings) -> None:
    """Every task, database and repository — rows and stored files — is gone."""
    Task.objects.all().delete()
    Project.objects.all().delete()
    SqlDatabase.objects.all().delete()
    Repository.objects.all().delete()
    shutil.rmtree(settings.REPOSITORY_STORE)
    shutil.rmtree(settings.DATABASE_STORE)


def test_sql_and_swe_demo_tasks_survive_a_round_trip_byte_for_byte(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    tasks = [sql_task(project), plant_swe(project, tmp_path)]
    before = {t.source_id: task_snapshot(t) for t in tasks}
    first = export(project, tmp_path / "first.tar.gz", tasks=tasks)
    first_files = _task_files(first)
    assert "sql_0/shared/data/database.sqlite" in first_files
    assert "swe_0/shared/repository.fast-export" in first_files

    _empty_the_database(settings)
    again = Project.objects.create(name="Again", slug="again")
    Membership.objects.create(
        project=again, user=get_user_model().objects.get(username="lead"), role="lead"
    )
    call_command("import_bundle", str(first), project="again")
    imported = {t.source_id: t for t in Task.objects.filter(project=again)}
    assert set(imported) == set(before)
    for source_id, snapshot in before.items():
        after = task_snapshot(imported[source_id])
        assert after["status"] == "draft"
        for key in ("title", "domain", "original_spec", "blocked_spec", "blockers"):
            assert after[key] == snapshot[key], (source_id, key)
        environment = dict(snapshot["environment"])
        if after["domain"] == "swe":
            # The bundle ships the base tree as one orphan commit (no upstream history), so
            # the imported task's base commit is that commit; the setup patch is unchanged.
            from exchange.bundles.repository import sanitized_base

            task = tasks[1]
            environment["base_commit"] = sanitized_base(
                mirror=tmp_path / "demo-data" / "swe" / "repo",
                base_commit=task.swe_environment.base_commit,
            )
            assert imported[source_id].swe_environment.repository is not None
        assert after["environment"] == environment, source_id

    second = export(again, tmp_path / "second.tar.gz", tasks=list(imported.values()))
    second_files = _task_files(second)
    assert sorted(second_files) == sorted(first_files)
    assert [name for name in first_files if first_files[name] != second_files[name]] == []
    assert json.loads(members(second)[layout.MANIFEST])["draft"] is True
