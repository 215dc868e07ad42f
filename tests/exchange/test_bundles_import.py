"""Importing bundles: ours and the release's; malicious archives are refused whole, with a
clear reason, and leave the database as it was."""

import io
import json
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from exchange.bundles import layout
from exchange.importers.bundle import import_bundle
from exchange.models import ImportJob
from exchange.services.imports import import_execute
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import TaskSource

from .bundle_helpers import export, manifest_files, manifest_relist, members, seed_demo, tar_of

pytestmark = pytest.mark.django_db


def _refused(project, path, match: str):
    before = Task.objects.count()
    with pytest.raises(ImportRefused) as caught:
        import_bundle(project=project, path=path)
    assert match in caught.value.render(limit=500), caught.value.render(limit=500)
    assert Task.objects.count() == before
    return caught.value


def _with_extra(bundle, tmp_path, name: str, info_changes=None, data=b"x") -> Path:
    """The good bundle plus one more member, written as an attacker would."""
    out = tmp_path / f"evil-{abs(hash(name))}.tar.gz"
    with tarfile.open(bundle) as good, tarfile.open(out, "w:gz") as evil:
        for member in good:
            evil.addfile(member, good.extractfile(member))
        info = tarfile.TarInfo(name)
        info.size = len(data)
        for key, value in (info_changes or {}).items():
            setattr(info, key, value)
        evil.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out


def test_our_bundle_imports_and_a_second_import_changes_nothing(demo_bundle, project):
    report = import_bundle(project=project, path=demo_bundle)
    assert report.created == ["sql_0"]
    task = Task.objects.get(project=project)
    assert task.source == TaskSource.BIRD and task.blocker_count == 3
    assert task.sql_environment.database is not None
    again = import_bundle(project=project, path=demo_bundle)
    assert again.created == [] and again.unchanged == ["sql_0"]


@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_release_folders_import_as_a_folder_and_as_an_archive(
    project, domain, tmp_path, release_examples
):
    root = release_examples / domain
    report = import_bundle(project=project, path=root)
    assert len(report.created) == len([p for p in root.iterdir() if p.is_dir()])
    assert set(Task.objects.values_list("source", flat=True)) == {TaskSource.HILBENCH}
    archive = tmp_path / "release.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(root, arcname=domain)
    again = import_bundle(project=project, path=archive)
    assert again.created == [] and len(again.unchanged) == len(report.created)


def test_a_dotdot_path_is_refused(demo_bundle, project, tmp_path):
    evil = _with_extra(demo_bundle, tmp_path, "../outside.txt")
    _refused(project, evil, "'../outside.txt' leaves the archive's folder")
    assert not (tmp_path / "store" / "outside.txt").exists()


def test_an_absolute_path_is_refused(demo_bundle, project, tmp_path):
    evil = _with_extra(demo_bundle, tmp_path, "/tmp/hilbench-evil.txt")
    _refused(project, evil, "'/tmp/hilbench-evil.txt' is an absolute path")


def test_a_symlink_to_etc_is_refused(demo_bundle, project, tmp_path):
    evil = _with_extra(
        demo_bundle,
        tmp_path,
        "sql_0/shared/etc",
        {"type": tarfile.SYMTYPE, "linkname": "/etc", "size": 0},
    )
    _refused(project, evil, "'sql_0/shared/etc' is a link or special file")


@pytest.mark.parametrize(
    "target", ["/etc/passwd", "../outside.txt", "sql_0/not-in-the-archive", "sql_0/later.txt"]
)
def test_a_hard_link_outside_the_files_before_it_is_refused(demo_bundle, project, tmp_path, target):
    evil = _with_extra(
        demo_bundle,
        tmp_path,
        "sql_0/shared/x",
        {"type": tarfile.LNKTYPE, "linkname": target, "size": 0},
    )
    _refused(project, evil, "'sql_0/shared/x' is a link or special file")


def test_a_device_file_is_refused(demo_bundle, project, tmp_path):
    evil = _with_extra(demo_bundle, tmp_path, "sql_0/null", {"type": tarfile.CHRTYPE, "size": 0})
    _refused(project, evil, "'sql_0/null' is a link or special file")


def test_a_10_gb_sparse_member_is_refused_from_its_header(project, tmp_path, settings):
    """GNU tar stores a sparse 10 GB file in a few KB; its header still says 10 GB."""
    settings.BUNDLE_MAX_BYTES = 1024**3
    sparse = tmp_path / "src" / "huge.bin"
    sparse.parent.mkdir()
    with open(sparse, "wb") as handle:
        handle.truncate(10 * 1024**3)  # a hole: nothing is written to disk
    archive = tmp_path / "sparse.tar.gz"
    subprocess.run(
        ["tar", "--sparse", "-czf", str(archive), "-C", str(tmp_path / "src"), "huge.bin"],
        check=True,
    )
    assert archive.stat().st_size < 1024**2
    _refused(project, archive, f"more than {settings.BUNDLE_MAX_BYTES}")

    # The same claim in a plain header, with no data behind it.
    crafted = tmp_path / "crafted.tar"
    info = tarfile.TarInfo("sql_0/shared/data/database.sqlite")
    info.size = 10 * 1024**3
    crafted.write_bytes(info.tobuf(format=tarfile.PAX_FORMAT) + b"\0" * 1024)
    _refused(project, crafted, "unpacks to 10737418240 bytes or more")


def test_100000_tiny_files_are_refused(project, tmp_path, settings):
    """The real 100,000 members, against the default limit (50,000): refused in seconds."""
    assert settings.BUNDLE_MAX_FILES < 100_000
    archive = tmp_path / "many.tar.gz"
    started = time.monotonic()
    with tarfile.open(archive, "w:gz", compresslevel=1) as tf:
        info = tarfile.TarInfo()
        for n in range(100_000):
            info.name = f"many/f{n}"
            tf.addfile(info, io.BytesIO(b""))
    _refused(project, archive, f"more than {settings.BUNDLE_MAX_FILES} members")
    assert time.monotonic() - started < 60


def test_a_wrong_checksum_is_refused(demo_bundle, project, tmp_path):
    files = members(demo_bundle)
    files["sql_0/shared/ground_truth.sql"] = b"SELECT 'tampered';\n"
    tampered = tmp_path / "tampered.tar.gz"
    tampered.write_bytes(tar_of(files))
    _refused(
        project,
        tampered,
        "sql_0/shared/ground_truth.sql: sha256 does not match the manifest",
    )


def test_a_file_missing_from_the_manifest_is_refused(demo_bundle, project, tmp_path):
    files = members(demo_bundle)
    files["sql_0/shared/extra.txt"] = b"smuggled\n"
    del files["sql_0/shared/golden_output.csv"]
    tampered = tmp_path / "extra.tar.gz"
    tampered.write_bytes(tar_of(files))
    error = _refused(project, tampered, "sql_0/shared/extra.txt: present but not listed")
    assert "sql_0/shared/golden_output.csv: listed in the manifest but absent" in error.render()


def test_a_path_listed_under_two_contents_is_refused(demo_bundle, project, tmp_path):
    """Format 2 names each content once with its paths: a path under two contents is refused."""
    files = members(demo_bundle)
    manifest = json.loads(files[layout.MANIFEST])
    contents = manifest["contents"]
    own = [sha for sha, names in contents.items() if "sql_0/shared/ground_truth.sql" in names]
    other = next(sha for sha in contents if sha not in own)
    contents[other].append("sql_0/shared/ground_truth.sql")
    files[layout.MANIFEST] = layout.dumps(manifest)
    twice = tmp_path / "twice.tar.gz"
    twice.write_bytes(tar_of(files))
    _refused(project, twice, "sql_0/shared/ground_truth.sql: listed twice in the manifest")


def test_a_format_1_bundle_is_still_read(demo_bundle, project, tmp_path):
    """Bundles written before issue 46 list every path's sha256 (``files``) and store each file
    in its folder (here every member a regular file): the importer reads them as before."""
    files = {n: c for n, c in members(demo_bundle).items() if not n.startswith("_shared/")}
    manifest = json.loads(files[layout.MANIFEST])
    listed = manifest_files(manifest)
    manifest["files"] = {n: sha for n, sha in listed.items() if not n.startswith("_shared/")}
    del manifest["contents"]
    manifest["format_version"] = 1
    files[layout.MANIFEST] = layout.dumps(manifest)
    old = tmp_path / "format-1.tar.gz"
    old.write_bytes(tar_of(files))
    report = import_bundle(project=project, path=old)
    assert report.created == ["sql_0"]


def test_one_bad_task_folder_imports_nothing(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    bundle = export(
        project,
        tmp_path / "two.tar.gz",
        tasks=list(
            Task.objects.filter(
                project=project, domain="sql", source_id__in=["retail_bank/4", "retail_bank/1"]
            )
        ),
    )
    files = members(bundle)
    # A consistent manifest, but sql_1's instruction no longer matches its registry.
    import hashlib
    import json

    name = "sql_1/baseline/instruction.md"
    files[name] = files[name].replace(b"Answer the following question:", b"Answer this:")
    manifest = json.loads(files[layout.MANIFEST])
    manifest_relist(manifest, name, hashlib.sha256(files[name]).hexdigest())
    files[layout.MANIFEST] = layout.dumps(manifest)
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(tar_of(files))
    target = type(project).objects.create(name="Target", slug="target")
    refusal = _refused(target, broken, "record sql_1")
    assert not Task.objects.filter(project=target).exists()
    # The message itself names the task folder and the file, not only the record list.
    assert "1 bad task folder(s) under bundle/ (sql_1; sql_1: baseline/instruction.md" in str(
        refusal
    ), str(refusal)


def test_import_command_reports_a_refusal(demo_bundle, tmp_path, project):
    evil = _with_extra(demo_bundle, tmp_path, "../x")
    with pytest.raises(CommandError, match="leaves the archive's folder"):
        call_command("import_bundle", str(evil), project=project.slug)


def test_bundle_upload_on_the_import_page(client, demo_bundle, project, author):
    client.force_login(author)
    with open(demo_bundle, "rb") as handle:
        response = client.post(
            reverse("import-list"),
            {"kind": "bundle", "project": project.pk, "archive": handle},
        )
    job = ImportJob.objects.get()
    assert response.status_code == 302 and job.kind == "bundle"
    import_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert job.report["created"] == ["sql_0"]
