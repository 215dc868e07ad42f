"""Issue 45, item 6b: the task page says whether the task's environment is built — a SWE
task's build (built, building, failed, not built, with when) or a SQL task's database — and
offers the build to those who may start it."""

import json
import shutil
import uuid

import pytest
from django.utils import timezone

from hilbench_annotate.models import Repository, SqlDatabase
from tests.factories import TaskFactory
from validators.environments import MANIFEST, VERSION, environment_key, environments_root
from validators.models import EnvironmentBuild
from validators.panels import environment_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def swe(project, author, settings):
    # A sandbox root of this test's own (the fake built environment is no one else's), where
    # the sandbox user can reach it as it must (pytest's temporary folders are closed).
    root = settings.VAR_DIR / "sandbox-tests-panel" / uuid.uuid4().hex
    settings.SANDBOX_ROOT = root
    yield _swe_task(project, author)
    shutil.rmtree(root, ignore_errors=True)


def _swe_task(project, author):
    task = TaskFactory(project=project, author=author, swe=True)
    env = task.swe_environment
    env.repository = Repository.objects.create(
        name="demo/invoicing", origin="here", storage_path="demo-invoicing"
    )
    env.save()
    return task


def _build(task, **fields) -> EnvironmentBuild:
    return EnvironmentBuild.objects.create(
        key=environment_key(task.swe_environment), task=task, commit="0" * 40, **fields
    )


def _make_ready(key: str) -> None:
    root = environments_root()
    version = root / f"{VERSION}{key}-abc"
    version.mkdir()
    (version / MANIFEST).write_text(json.dumps({"ready": True}))
    (root / key).symlink_to(version.name)


def test_a_swe_environment_goes_from_not_built_to_building_built_and_a_failed_rebuild(swe):
    assert environment_state(swe)["state"] == "not_built"
    build = _build(swe, status=EnvironmentBuild.Status.RUNNING, step="install")
    state = environment_state(swe)
    assert state["state"] == "building" and state["build"] == build

    done = timezone.now()
    EnvironmentBuild.objects.filter(pk=build.pk).update(
        status=EnvironmentBuild.Status.SUCCEEDED, finished_at=done
    )
    _make_ready(state["key"])
    state = environment_state(swe)
    assert (state["state"], state["when"], state["built"]) == ("built", done, True)

    failed = _build(swe, status=EnvironmentBuild.Status.FAILED, step="install")
    state = environment_state(swe)
    assert state["state"] == "built" and state["build"] == failed  # the old one is still used


def test_a_failed_build_never_built_reads_failed(swe):
    _build(swe, status=EnvironmentBuild.Status.FAILED, step="clone", finished_at=timezone.now())
    assert environment_state(swe)["state"] == "failed"


def test_a_sql_database_is_ready_only_when_its_file_is_there(project, author, settings):
    task = TaskFactory(project=project, author=author)
    assert environment_state(task)["state"] == "absent"
    database = SqlDatabase.objects.create(
        db_id="retail_bank", sha256="a" * 64, size_bytes=3, storage_path="rb/retail_bank.sqlite"
    )
    task.sql_environment.database = database
    task.sql_environment.save()
    assert environment_state(task)["state"] == "absent"
    database.path.parent.mkdir(parents=True)
    database.path.write_bytes(b"abc")
    assert environment_state(task)["state"] == "ready"


def test_the_task_page_offers_the_build_to_its_editors_only(client, swe, author, reviewer):
    client.force_login(author)
    html = client.get(f"/tasks/{swe.pk}/").content.decode()
    assert 'id="environment-state"' in html and "Not built" in html
    assert f'action="/tasks/{swe.pk}/environment/build/"' in html and "Build now" in html
    client.force_login(reviewer)
    html = client.get(f"/tasks/{swe.pk}/").content.decode()
    assert "Not built" in html and "Build now" not in html
    assert "its author or a project lead starts them" in html
