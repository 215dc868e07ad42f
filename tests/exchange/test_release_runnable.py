"""Issue 28: a task imported from the HiL-Bench release exports runnable.

The release publishes no verifier and names sidecar images it builds elsewhere; its data
lives outside its repository. The export keeps the release's files byte for byte and adds a
verifier in every mode, the sidecars' build contexts, the ask-human judge's settings and, when
the data is not in the bundle, what to fetch and where it goes — all listed in
``provenance/generated.json``. (In real containers: ``test_harbor_trials.py``.)
"""

import json
import re
import shutil
import subprocess

import pytest
from django.core.management import call_command

from exchange.bundles import layout
from exchange.bundles.oracle import RELEASE_DATA, RELEASE_IMAGE
from exchange.bundles.release_runtime import FETCH, GENERATED, JUDGE, SIDECAR_DIR
from hilbench_annotate.models import Task

from .bundle_helpers import members, release_shaped_sql, spider_database

pytestmark = pytest.mark.django_db
MODES = ("baseline", "ask_human", "full_info")


def _export(project, out, tasks=None):
    tasks = tasks if tasks is not None else Task.objects.filter(project=project)
    call_command(
        "export_bundle", project=project.slug, out=str(out),
        tasks=[t.pk for t in tasks], draft=True,
    )  # fmt: skip
    return members(out)


def _import(project, root):
    for domain in ("sql", "swe"):
        if (root / domain).is_dir():
            call_command("import_hilbench", str(root / domain), project=project.slug)


def test_every_release_task_gets_a_verifier_sidecar_contexts_and_says_what_data_it_lacks(
    project, lead, tmp_path, release_examples
):
    _import(project, release_examples)
    files = _export(project, tmp_path / "b.tar.gz")
    # The task folders (the bundle's top also carries hilbench_harbor/, for Harbor).
    folders = sorted({n.split("/", 1)[0] for n in files if re.match(r"(sql|swe)_\d+/", n)})
    assert folders
    for folder in folders:
        generated = json.loads(files[f"{folder}/{GENERATED}"])["generated"]
        domain = folder.split("_")[0]
        for mode in MODES:
            test = files[f"{folder}/{mode}/tests/test.sh"].decode()
            assert f"{mode}/tests/test.sh" in generated
            assert "grade.py" in test and f"{folder}/{mode}/tests/grade.py" in files
        composes = [files[f"{folder}/{m}/environment/docker-compose.yaml"].decode() for m in MODES]
        named = {
            line.split("hil-bench-harbor/")[1].split(":")[0]
            for text in composes
            for line in text.splitlines()
            if "image: hil-bench-harbor/" in line
        }
        assert named, folder  # the release's compose files name its sidecar images
        for name in named:
            assert f"{SIDECAR_DIR}/{name}/Dockerfile" in generated, (folder, name)
            dockerfile = files[f"{folder}/{SIDECAR_DIR}/{name}/Dockerfile"].decode()
            assert "EXPOSE 8000" in dockerfile  # where the release's compose file looks
        build = files[f"{folder}/{SIDECAR_DIR}/build.sh"].decode()
        # Built under the app's own tag, then given the release's name only where it is free.
        assert all(f"-t hilbench-sidecar/{n}:release {n}" in build for n in named)
        assert all(f"docker tag hilbench-sidecar/{n}:release hil-bench-harbor/{n}:latest" in build
                   for n in named)  # fmt: skip
        if "ask-human" in named:
            judge = json.loads(files[f"{folder}/{JUDGE}"])
            assert judge["context"]  # the task's own text, which the judge reads
        # The data the release keeps elsewhere, and the oracle's reason for not running.
        validation = json.loads(files[f"{folder}/{layout.VALIDATION}"])
        if f"{folder}/{layout.SQL_DATABASE}" in files:  # the app holds it: the oracle runs
            assert f"{folder}/{FETCH}" not in files
            assert validation["oracle"]["oracle"]["reward"] == 1, validation["oracle"]
            assert validation["oracle"]["noop"]["reward"] == 0, validation["oracle"]
            continue
        fetch = files[f"{folder}/{FETCH}"].decode()
        if domain == "sql":
            archive = json.loads(files[f"{folder}/shared/data_archive.json"])
            assert archive["db_artifact_path"] in fetch
            assert "shared/data/database.sqlite" in fetch
            assert validation["oracle"] == {"not_run": RELEASE_DATA}
            assert "prebuilt image" not in validation["oracle"]["not_run"]
        else:
            image = files[f"{folder}/shared/image_ref.txt"].decode().strip()
            assert image in fetch and "docker load" in fetch
            assert validation["oracle"] == {"not_run": RELEASE_IMAGE}
        # Nothing the export added replaces a release file.
        assert not any(
            p.startswith(("annotate/", "provenance/")) and p != GENERATED for p in generated
        )


@pytest.mark.shared_data
def test_a_release_sql_task_with_its_database_scores_oracle_1_and_noop_0_in_the_sandbox(
    project, lead, tmp_path
):
    """A release-shaped task over a real Spider database; the database supplied where the
    release's fetch puts it (shared/data/database.sqlite): the app runs the generated
    verifier and records oracle 1, no-op 0 in provenance/validation.json."""
    root = release_shaped_sql(tmp_path / "release")
    shutil.copyfile(
        spider_database("concert_singer"), root / "sql/sql_10/shared/data/database.sqlite"
    )
    _import(project, root)
    task = Task.objects.get(project=project)
    assert task.sql_environment.database is not None
    files = _export(project, tmp_path / "b.tar.gz")
    validation = json.loads(files[f"sql_10/{layout.VALIDATION}"])
    assert validation["oracle"]["oracle"]["reward"] == 1, validation["oracle"]
    assert validation["oracle"]["noop"]["reward"] == 0, validation["oracle"]
    generated = json.loads(files[f"sql_10/{GENERATED}"])
    assert FETCH not in generated["generated"] and generated["data_outside_bundle"] is False


@pytest.mark.shared_data
def test_the_generated_verifier_says_what_to_fetch_when_the_database_is_missing(
    project, lead, tmp_path
):
    root = release_shaped_sql(tmp_path / "release")
    _import(project, root)
    files = _export(project, tmp_path / "b.tar.gz")
    test = tmp_path / "test.sh"
    test.write_bytes(files["sql_10/full_info/tests/test.sh"])
    done = subprocess.run(
        ["bash", str(test)], capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "HILBENCH_DATABASE": str(tmp_path / "absent.sqlite")},
    )  # fmt: skip
    assert done.returncode == 1
    assert "public_sql_10/concert_singer.sqlite" in done.stderr
    assert "Fetch it to shared/data/database.sqlite" in done.stderr


def test_a_partial_release_folder_is_said_plainly_at_import_and_in_the_bundle(
    project, lead, tmp_path
):
    """Some release folders ship without environment/ or solve.sh (49 of the 98 calibration
    tasks): the import notes say which parts are missing, and the bundle lists them."""
    from ..conftest import FIXTURES

    root = tmp_path / "release"
    shutil.copytree(FIXTURES / "hilbench" / "sql" / "sql_0", root / "sql" / "sql_0")
    for mode in MODES:
        shutil.rmtree(root / f"sql/sql_0/{mode}/environment")
        (root / f"sql/sql_0/{mode}/solution/solve.sh").unlink()
    _import(project, root)
    task = Task.objects.get(project=project)
    assert "The release folder lacks baseline/environment/, baseline/solution/solve.sh" in (
        task.import_notes
    )
    out = tmp_path / "b.tar.gz"
    files = _export(project, out)
    generated = json.loads(files[f"sql_0/{GENERATED}"])
    assert generated["incomplete"] == [
        f"{mode}/{part}" for mode in MODES for part in ("environment/", "solution/solve.sh")
    ]
    [entry] = json.loads(files[layout.MANIFEST])["tasks"]
    assert entry["incomplete"] == generated["incomplete"]
    assert entry["allow_internet"] is True  # the release's task.toml says so
