"""Imports started from the browser: the upload is stored, a worker runs the importer."""

import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from exchange.bundles.reader import import_bundle
from exchange.importers import import_bird, import_hilbench, import_swebench
from exchange.importers.hilbench import find_task_folders
from exchange.models import ImportJob
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.jobs import job_claim, job_fail, job_finish, job_send
from hilbench_annotate.models import Project
from hilbench_annotate.services import event_record
from hilbench_annotate.toolkit.archives import extract_archive

# The Import page's checkbox; a refusal for missing databases names it in these words.
SKIP_MISSING_DATABASES_LABEL = "Import questions whose database is absent (noted on the task)"
MISSING_DATABASES_ADVICE_PAGE = (
    f"tick “{SKIP_MISSING_DATABASES_LABEL}” to import its questions without it"
)


def _save_upload(upload, directory: Path, name: str) -> Path:
    if upload.size > settings.MAX_UPLOAD_BYTES:
        raise DomainError(
            f"{upload.name} is {upload.size} bytes; uploads are limited to "
            f"{settings.MAX_UPLOAD_BYTES} bytes."
        )
    path = directory / name
    with open(path, "wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    return path


def import_start(*, project: Project, actor, kind: str, files: dict, options: dict) -> ImportJob:
    """Store the uploaded files and schedule the import once this transaction commits."""
    if kind not in ImportJob.Kind.values:
        raise DomainError(f"Unknown import kind {kind!r}.")
    relative = f"{timezone.now():%Y%m%d}-{uuid.uuid4().hex[:12]}"
    directory = settings.UPLOAD_STORE / relative
    directory.mkdir(parents=True)
    try:
        saved = {}
        for role, upload in files.items():
            if upload is None:
                continue
            suffix = "".join(Path(upload.name).suffixes[-2:]) or ".bin"
            saved[role] = _save_upload(upload, directory, f"{role}{suffix}").name
    except Exception:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    job = ImportJob.objects.create(
        project=project,
        kind=kind,
        created_by=actor,
        upload_dir=relative,
        options={**options, "files": saved},
    )
    event_record(project_id=project.pk, task_id=None, actor=actor, kind="import_queued", job=job.pk)
    job_send(job)
    return job


def _databases_root(extracted: Path) -> Path:
    """The shallowest folder holding ``<db_id>/<db_id>.sqlite`` (or, in an archive of
    descriptions only, ``<db_id>/database_description/``) entries; else the archive's top,
    so each database the records name is reported missing with the records' problems."""
    candidates = sorted(
        [p.parent.parent for p in extracted.rglob("*.sqlite") if p.stem == p.parent.name]
        + [p.parent.parent for p in extracted.rglob("database_description") if p.is_dir()],
        key=lambda p: len(p.parts),
    )
    return candidates[0] if candidates else extracted


def _repository_root(extracted: Path) -> Path:
    for candidate in sorted(extracted.rglob(".git"), key=lambda p: len(p.parts)):
        return candidate.parent
    for candidate in sorted(extracted.rglob("HEAD"), key=lambda p: len(p.parts)):
        if (candidate.parent / "objects").is_dir():
            return candidate.parent
    raise DomainError("The repository archive holds no git repository.")


def _run_importer(job: ImportJob) -> dict:
    """Run the job's importer on its stored files; returns the report. Raises on refusal."""
    directory = settings.UPLOAD_STORE / job.upload_dir
    files = {role: directory / name for role, name in job.options.get("files", {}).items()}
    options = job.options
    if job.kind == ImportJob.Kind.BIRD:
        databases = directory / "databases"
        if "databases" in files and not databases.exists():
            extract_archive(files["databases"], databases)
        report = import_bird(
            project=job.project,
            questions=files["questions"],
            databases=_databases_root(databases) if databases.exists() else directory,
            db_id=options.get("db_id") or None,
            limit=options.get("limit") or None,
            skip_missing_databases=bool(options.get("skip_missing_databases")),
            missing_databases_advice=MISSING_DATABASES_ADVICE_PAGE,
            actor=job.created_by,
        )
    elif job.kind == ImportJob.Kind.SWEBENCH:
        repo = options.get("repo_url", "")
        if "repository" in files:
            extracted = directory / "repository"
            if not extracted.exists():
                extract_archive(files["repository"], extracted)
            repo = str(_repository_root(extracted))
        report = import_swebench(
            project=job.project, instances=files["instances"], repo=repo, actor=job.created_by
        )
    elif job.kind == ImportJob.Kind.BUNDLE:
        # The bundle reader checks the archive (limits, paths, links) and the manifest.
        report = import_bundle(project=job.project, path=files["archive"], actor=job.created_by)
    else:
        extracted = directory / "folders"
        if not extracted.exists():
            extract_archive(files["archive"], extracted)
        folders = find_task_folders(extracted)
        root = extracted
        if not folders:
            # One wrapping folder (e.g. "sql/") inside the archive: look one level deeper.
            children = [p for p in extracted.iterdir() if p.is_dir()]
            root = children[0] if len(children) == 1 else extracted
        report = import_hilbench(project=job.project, root=root, actor=job.created_by)
    return report.as_dict()


def import_execute(*, job_id: int) -> None:
    """Claim the job (queued, or running with a dead worker → running) and run it.

    A redelivered message for a job that is running normally or finished does nothing. A
    job taken over from a dead worker runs again safely: the importer writes in one
    transaction and skips records already present.
    """
    if not job_claim(ImportJob, job_id):
        return
    job = ImportJob.objects.select_related("project", "created_by").get(pk=job_id)
    try:
        report = _run_importer(job)
    except ImportRefused as exc:
        job_fail(ImportJob, job_id, exc.render(limit=200))
        return
    except DomainError as exc:
        job_fail(ImportJob, job_id, str(exc))
        return
    job_finish(ImportJob, job_id, report=report)
    event_record(
        project_id=job.project_id,
        task_id=None,
        actor=job.created_by,
        kind="import_finished",
        job=job_id,
        created=len(report["created"]),
        unchanged=len(report["unchanged"]),
    )
