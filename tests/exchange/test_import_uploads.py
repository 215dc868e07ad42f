"""Red-team findings on import uploads (issue 19, items 4b and 5b): uploads are temporary and
held to a per-project quota, decompression bombs are refused, and a database is checked whole
before it is imported."""

import html
import io
import json
import os
import tarfile
import time
import zipfile

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.models import EvaluationRun
from exchange.importers import import_bird
from exchange.models import ImportJob
from exchange.tasks import import_job, uploads_sweep_task
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import SqlDatabase, Task
from hilbench_annotate.toolkit.sqlconsole import amount
from hilbench_annotate.vocabulary import Role
from tests.factories import MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db

MiB = 1024**2


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _zeros_zip(name: str, size: int) -> bytes:
    """A zip holding ``size`` bytes of zeros: about a thousandth of that on the wire."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open(name, "w", force_zip64=True) as member,
    ):
        chunk = bytes(MiB)
        for _ in range(size // MiB):
            member.write(chunk)
    return buffer.getvalue()


def _databases_zip(demo_data, replace: dict[str, bytes] | None = None) -> bytes:
    databases = demo_data["sql"]["databases"]
    files = {
        str(p.relative_to(databases.parent)): p.read_bytes()
        for p in databases.rglob("*")
        if p.is_file()
    }
    files.update(replace or {})
    return _zip(files)


def _bird_post(client, project, demo_data, *, questions=None, databases: bytes, name="dbs.zip"):
    client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": SimpleUploadedFile(
                "dev.json", questions or demo_data["sql"]["questions"].read_bytes()
            ),
            "databases": SimpleUploadedFile(name, databases),
        },
    )
    job = ImportJob.objects.latest("pk")
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    return job


def _store_entries() -> list[str]:
    store = settings.UPLOAD_STORE
    return sorted(p.name for p in store.iterdir()) if store.exists() else []


# --- item 4b: uploads are temporary ------------------------------------------------------------


def test_the_upload_and_what_it_unpacked_are_deleted_when_the_job_ends(
    client, project, author, demo_data
):
    client.force_login(author)

    done = _bird_post(client, project, demo_data, databases=_databases_zip(demo_data))
    assert done.status == "succeeded", done.error
    assert _store_entries() == []

    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[0]["SQL"] = 42
    failed = _bird_post(
        client,
        project,
        demo_data,
        questions=json.dumps(records).encode(),
        databases=_databases_zip(demo_data),
    )
    assert failed.status == "failed" and "record 0" in failed.error
    assert _store_entries() == []


def test_a_decompression_bomb_is_refused_before_it_is_written(client, project, author, demo_data):
    """The finding: a 1 MB zip left a 1 GB file in the upload store. A zip of 100 MiB of
    zeros (about 100 KB) is refused from its headers, naming the upload."""
    client.force_login(author)
    bomb = _zeros_zip("retail_bank/retail_bank.sqlite", 100 * MiB)
    assert len(bomb) < MiB

    job = _bird_post(client, project, demo_data, databases=bomb, name="small-but-huge.zip")

    assert job.status == "failed"
    assert "small-but-huge.zip refused: unpacks to" in job.error
    assert "times the archive's" in job.error
    assert _store_entries() == [] and not Task.objects.exists()


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_a_member_1200_folders_deep_is_refused_by_the_import_job(
    client, project, author, demo_data, kind
):
    """Issue 24 (deep trees, in uploads): Python's tarfile and zipfile make folders one
    recursion a level; a member 1,200 folders deep was a RecursionError and the job an error."""
    client.force_login(author)
    name = "x/" + "a/" * 1200 + "retail_bank.sqlite"
    if kind == "zip":
        archive = _zip({name: b"x"})
    else:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
            info = tarfile.TarInfo(name)
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
        archive = buffer.getvalue()
    job = _bird_post(client, project, demo_data, databases=archive, name=f"deep.{kind}")
    assert job.status == "failed", job.error
    assert "1202 folders deep (at most 128)" in job.error, job.error
    assert _store_entries() == [] and not Task.objects.exists()


def test_the_unpacked_size_cap_comes_from_the_settings(
    client, settings, project, author, demo_data
):
    settings.UNPACK_MAX_BYTES = MiB
    client.force_login(author)
    incompressible = _zip({"retail_bank/retail_bank.sqlite": os.urandom(2 * MiB)})

    job = _bird_post(client, project, demo_data, databases=incompressible)

    assert job.status == "failed"
    assert f"dbs.zip refused: unpacks to {2 * MiB} bytes or more, more than {MiB}" in job.error


def _age(path, hours: float) -> None:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))


def test_the_sweep_deletes_old_leftovers_and_keeps_what_unfinished_jobs_need(
    project, author, settings
):
    store = settings.UPLOAD_STORE
    store.mkdir(parents=True)
    left = store / "20240101-deadworker"
    (left / "databases").mkdir(parents=True)
    (left / "databases.zip").write_bytes(b"x" * 1000)
    scratch = store / ".bundle-abc"
    scratch.mkdir()
    queued = store / "20240101-stillqueued"
    queued.mkdir()
    fresh = store / "20240101-justnow"
    fresh.mkdir()
    ImportJob.objects.create(
        project=project, kind="bird", created_by=author, upload_dir=queued.name
    )
    pending = store / "pending-results"
    pending.mkdir()
    (pending / "finished.jsonl").write_text("{}\n")
    (pending / "waiting.jsonl").write_text("{}\n")
    for file, status in (("finished.jsonl", "failed"), ("waiting.jsonl", "queued")):
        EvaluationRun.objects.create(
            project=project,
            source=EvaluationRun.Source.IMPORTED,
            model_name="m",
            created_by=author,
            status=status,
            pending={"file": f"pending-results/{file}"},
        )
    for path in (left, scratch, queued, pending / "finished.jsonl", pending / "waiting.jsonl"):
        _age(path, settings.UPLOAD_KEEP_HOURS + 1)

    uploads_sweep_task.apply()

    assert _store_entries() == ["20240101-justnow", "20240101-stillqueued", "pending-results"]
    assert sorted(p.name for p in pending.iterdir()) == ["waiting.jsonl"]
    sweeps = [e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()]
    assert "uploads.sweep" in sweeps


def _page_upload(client, project, questions: bytes, databases: bytes):
    """The Import page's BIRD upload, left queued (no worker runs it here)."""
    return client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": SimpleUploadedFile("dev.json", questions),
            "databases": SimpleUploadedFile("dbs.zip", databases),
        },
    )


def _folder_bytes(job) -> int:
    folder = settings.UPLOAD_STORE / job.upload_dir
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_a_projects_unfinished_uploads_are_held_to_its_quota_on_the_import_page(
    client, settings, project, author, demo_data
):
    """The red-team's finding: pending uploads could fill the disk until swept. The upload
    folders of a project's unfinished imports share HILBENCH_PROJECT_UPLOAD_QUOTA_MB; an
    upload past it is refused on the page, naming the project's usage and the limit, and
    nothing of it is stored."""
    client.force_login(author)
    questions, databases = demo_data["sql"]["questions"].read_bytes(), _databases_zip(demo_data)
    incoming = len(questions) + len(databases)
    assert _page_upload(client, project, questions, databases).status_code == 302
    (pending,) = ImportJob.objects.all()
    used = _folder_bytes(pending)
    assert used == incoming
    settings.PROJECT_UPLOAD_QUOTA_MB = (used + incoming - 1) / 1_000_000
    entries = _store_entries()

    refused = _page_upload(client, project, questions, databases)

    assert refused.status_code == 200
    text = html.unescape(refused.content.decode())
    assert (
        f"Not stored: the unfinished imports of {project.name} hold {amount(used)} of uploads; "
        f"with these files ({amount(incoming)}) they would pass the project's limit of "
        f"{amount(used + incoming - 1)}." in text
    )
    assert ImportJob.objects.count() == 1 and _store_entries() == entries

    # Another project's uploads are its own.
    other = ProjectFactory(name="Other SQL", slug="other-sql")
    MembershipFactory(project=other, user=author, role=Role.AUTHOR)
    assert _page_upload(client, other, questions, databases).status_code == 302
    ImportJob.objects.filter(project=other).delete()
    # Up to the limit exactly, an upload is stored.
    settings.PROJECT_UPLOAD_QUOTA_MB = (used + incoming) / 1_000_000
    assert _page_upload(client, project, questions, databases).status_code == 302
    assert ImportJob.objects.filter(project=project).count() == 2
    # An import that ended deleted its folder, and its room is the project's again.
    for job in ImportJob.objects.filter(project=project):
        import_job.apply(kwargs={"job_id": job.pk})
    assert _page_upload(client, project, questions, databases).status_code == 302


# --- item 5b: a database is checked whole ------------------------------------------------------


def _random_behind_the_header(size: int = 16384) -> bytes:
    return b"SQLite format 3\x00" + os.urandom(size)


def test_a_database_with_the_header_and_random_bytes_is_refused_naming_it(
    project, demo_data, tmp_path
):
    databases = tmp_path / "databases"
    (databases / "retail_bank").mkdir(parents=True)
    (databases / "retail_bank" / "retail_bank.sqlite").write_bytes(_random_behind_the_header())

    with pytest.raises(ImportRefused) as refused:
        import_bird(
            project=project,
            questions=demo_data["sql"]["questions"],
            databases=databases,
            db_id="retail_bank",
        )

    assert refused.value.problems == [
        (
            "database retail_bank",
            "retail_bank.sqlite is damaged or not a SQLite database (file is not a database)",
        )
    ]
    assert not Task.objects.exists() and not SqlDatabase.objects.exists()


def test_a_database_damaged_inside_is_refused_too(project, demo_data, tmp_path):
    """A valid first page, then garbage: the header and the schema read fine."""
    original = next(demo_data["sql"]["databases"].rglob("retail_bank.sqlite")).read_bytes()
    page_size = int.from_bytes(original[16:18], "big")
    damaged = original[: page_size * 2] + os.urandom(len(original) - page_size * 2)
    databases = tmp_path / "databases"
    (databases / "retail_bank").mkdir(parents=True)
    (databases / "retail_bank" / "retail_bank.sqlite").write_bytes(damaged)

    with pytest.raises(ImportRefused) as refused:
        import_bird(
            project=project,
            questions=demo_data["sql"]["questions"],
            databases=databases,
            db_id="retail_bank",
        )

    ((where, reason),) = refused.value.problems
    assert where == "database retail_bank" and reason.startswith("retail_bank.sqlite is damaged")


def test_a_web_import_of_a_corrupt_database_fails_naming_the_file(
    client, project, author, demo_data
):
    client.force_login(author)
    corrupt = {"databases/retail_bank/retail_bank.sqlite": _random_behind_the_header()}

    job = _bird_post(client, project, demo_data, databases=_databases_zip(demo_data, corrupt))

    assert job.status == "failed"
    assert "retail_bank.sqlite is damaged or not a SQLite database" in job.error
    page = client.get(reverse("import-detail", args=[job.pk])).content.decode()
    assert "retail_bank.sqlite is damaged" in page and str(settings.UPLOAD_STORE) not in page
    assert not Task.objects.exists()


def test_a_missing_database_is_reported_without_the_servers_paths(
    client, project, author, demo_data
):
    """BIRD's refusal names what is missing inside the databases the user sent, never where
    the server unpacked them."""
    client.force_login(author)
    other = _zip({"databases/elsewhere/elsewhere.sqlite": b""})

    job = _bird_post(client, project, demo_data, databases=other, name="my-dbs.zip")

    assert job.status == "failed" and "retail_bank/retail_bank.sqlite is missing" in job.error
    for server_path in (settings.UPLOAD_STORE, settings.VAR_DIR, settings.BASE_DIR):
        assert str(server_path) not in job.error
