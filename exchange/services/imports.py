"""Imports started from the browser: the upload is stored, a worker runs the importer.

The upload and what it unpacks to are temporary: the job deletes them when it ends, and
``uploads_sweep`` (the beat) deletes whatever a dead worker left. Until then they count
against the project's upload quota (``PROJECT_UPLOAD_QUOTA_MB``): an upload that would pass
it is refused and nothing of it stored. Messages name an upload by the file name it was sent
as, never by where the server keeps it.
"""

import os
import re
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation.models import EvaluationRun
from exchange.importers import import_bird, import_hilbench, import_swebench
from exchange.importers.bundle import import_bundle
from exchange.importers.hilbench import find_task_folders
from exchange.models import ImportJob
from hilbench_annotate.access import access_project
from hilbench_annotate.errors import AccessDenied, DomainError, ImportRefused
from hilbench_annotate.jobs import (
    job_claim,
    job_fail,
    job_finish,
    job_heartbeat,
    job_heartbeat_while,
    job_send,
)
from hilbench_annotate.models import Project
from hilbench_annotate.repositories import borrowed_objects, origin_allowed
from hilbench_annotate.services import (
    bulk_connection_release,
    event_record,
    task_statistics_refresh,
)
from hilbench_annotate.toolkit.archives import extract_archive
from hilbench_annotate.toolkit.sqlconsole import amount
from hilbench_annotate.vocabulary import Role

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


def _folder_bytes(directory: Path) -> int:
    """Bytes of the files under ``directory`` (links counted as links, never followed)."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # deleted meanwhile by the job that owned it
                continue
    return total


def project_upload_usage(project_id: int) -> int:
    """Bytes the upload folders of the project's unfinished imports hold now, what they
    unpacked included (a finished import's folder is deleted when it ends)."""
    folders = (
        ImportJob.objects.filter(project_id=project_id)
        .exclude(status__in=ImportJob.FINISHED)
        .values_list("upload_dir", flat=True)
    )
    return sum(_folder_bytes(d) for d in filter(None, map(_store_folder, folders)))


def _uploads_locked(project: Project) -> int:
    """The project's upload usage, with its row locked until the caller's transaction ends,
    so that two uploads of one project at once cannot both pass the quota (``no_key``: tasks
    and jobs referring to the project are still written meanwhile)."""
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()
    return project_upload_usage(project.pk)


def _quota_bytes() -> int:
    return round(settings.PROJECT_UPLOAD_QUOTA_MB * 1_000_000)


def _refuse_past_quota(project: Project, *, used: int, incoming: str) -> None:
    quota = _quota_bytes()
    raise DomainError(
        f"Not stored: the unfinished imports of {project.name} hold {amount(used)} of uploads; "
        f"with {incoming} they would pass the project's limit of {amount(quota)}. An "
        "import's upload is deleted when the import ends: wait for those to finish, or ask an "
        "operator to raise HILBENCH_PROJECT_UPLOAD_QUOTA_MB."
    )


def _upload_folder() -> tuple[str, Path]:
    relative = f"{timezone.now():%Y%m%d}-{uuid.uuid4().hex[:12]}"
    directory = settings.UPLOAD_STORE / relative
    directory.mkdir(parents=True)
    return relative, directory


def _require_importer(*, actor, project: Project) -> None:
    """Authors and leads of ``project`` import into it: a project ``actor`` cannot see is
    absent (404), one they see with neither role an ``AccessDenied`` (403), as is an import
    without a user (the importers write its tasks as that user)."""
    if actor is None:
        raise AccessDenied("An import needs the author or lead who makes it.")
    access_project(actor, project.pk, roles=(Role.AUTHOR, Role.LEAD))


def _import_job_create(
    *, project: Project, actor, kind: str, relative: str, options: dict
) -> ImportJob:
    job = ImportJob.objects.create(
        project=project, kind=kind, created_by=actor, upload_dir=relative, options=options
    )
    event_record(project_id=project.pk, task_id=None, actor=actor, kind="import_queued", job=job.pk)
    job_send(job)
    return job


@transaction.atomic
def import_start(*, project: Project, actor, kind: str, files: dict, options: dict) -> ImportJob:
    """Store the uploaded files and schedule the import once this transaction commits."""
    _require_importer(actor=actor, project=project)
    if kind not in ImportJob.Kind.values:
        raise DomainError(f"Unknown import kind {kind!r}.")
    if kind == ImportJob.Kind.SWEBENCH and files.get("repository") is None:
        # Refused here, with the form, rather than by the worker later.
        origin_allowed(options.get("repo_url") or "")
    with transaction.atomic():
        used = _uploads_locked(project)
        incoming = sum(upload.size for upload in files.values() if upload is not None)
        if used + incoming > _quota_bytes():
            _refuse_past_quota(project, used=used, incoming=f"these files ({amount(incoming)})")
        relative, directory = _upload_folder()
        try:
            saved, names = {}, {}
            for role, upload in files.items():
                if upload is None:
                    continue
                suffix = "".join(Path(upload.name).suffixes[-2:]) or ".bin"
                saved[role] = _save_upload(upload, directory, f"{role}{suffix}").name
                names[role] = Path(upload.name).name[:200]
        except Exception:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return _import_job_create(
            project=project,
            actor=actor,
            kind=kind,
            relative=relative,
            options={**options, "files": saved, "names": names},
        )


# The API's BIRD records name databases the project's tasks already have (job option).
STORED_DATABASES = "project"
API_MISSING_DATABASES_ADVICE = "send skip_missing_databases=true to import its questions without it"


@transaction.atomic
def import_start_records(
    *, project: Project, actor, kind: str, body, json_lines: bool, options: dict
) -> ImportJob:
    """The bulk import API: store the request's body (a JSON array or JSON lines of BIRD
    or SWE-bench records, read in chunks, never whole) and schedule the import as the
    Import page does. BIRD records name databases the project already has; SWE-bench
    records a repository its site allows (``repo_url``)."""
    _require_importer(actor=actor, project=project)
    if kind not in RECORD_KINDS:
        raise DomainError(f"Records of kind {kind!r} cannot be sent; use bird or swebench.")
    if kind == ImportJob.Kind.SWEBENCH:
        origin_allowed(options.get("repo_url") or "")
    role = RECORD_KINDS[kind]
    name = f"{role}.jsonl" if json_lines else f"{role}.json"
    with transaction.atomic():
        relative = _store_records(project=project, body=body, name=name)
        return _import_job_create(
            project=project,
            actor=actor,
            kind=kind,
            relative=relative,
            options={
                **options,
                "databases": STORED_DATABASES,
                "advice": API_MISSING_DATABASES_ADVICE,
                "files": {role: name},
                "names": {role: "the request's records"},
            },
        )


def _store_records(*, project: Project, body, name: str) -> str:
    """Stream ``body`` into a new upload folder (its name returned); refused, with nothing
    left, past ``MAX_UPLOAD_BYTES`` or past the project's upload quota.

    The project's row is locked only once the body is in (a slow client must not hold it
    while it sends): the room read before is a first bound, checked again under the lock."""
    used = project_upload_usage(project.pk)
    room = _quota_bytes() - used
    relative, directory = _upload_folder()
    try:
        size = 0
        with open(directory / name, "wb") as handle:
            while chunk := body.read(1 << 20):
                size += len(chunk)
                if size > settings.MAX_UPLOAD_BYTES:
                    raise DomainError(
                        f"The records are more than {settings.MAX_UPLOAD_BYTES} bytes; "
                        "send them in several requests."
                    )
                if size > room:
                    _refuse_past_quota(
                        project, used=used, incoming=f"these records (at least {amount(size)})"
                    )
                handle.write(chunk)
        if not size:
            raise DomainError("The request has no records: send a JSON array or JSON lines.")
        used = _uploads_locked(project)  # held until the job is made, in the same transaction
        if used + size > _quota_bytes():
            _refuse_past_quota(project, used=used, incoming=f"these records ({amount(size)})")
    except Exception:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return relative


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
    """The uploaded repository: a work tree with its ``.git`` folder, or a bare repository,
    holding every object itself (a link to a repository elsewhere on the server is refused)."""
    root = next(
        (c.parent for c in sorted(extracted.rglob(".git"), key=lambda p: len(p.parts))), None
    )
    if root is None:
        root = next(
            (
                c.parent
                for c in sorted(extracted.rglob("HEAD"), key=lambda p: len(p.parts))
                if (c.parent / "objects").is_dir()
            ),
            None,
        )
    if root is None:
        raise DomainError("The repository archive holds no git repository.")
    problem = borrowed_objects(root)
    if problem:
        raise DomainError(f"The repository archive is refused: {problem}.")
    return root


def _store_folder(upload_dir: str) -> Path | None:
    """A job's own folder in the upload store; None if the row names none (or names a
    folder outside the store, which is never deleted nor counted)."""
    if not upload_dir:
        return None
    store = settings.UPLOAD_STORE.resolve()
    directory = (settings.UPLOAD_STORE / upload_dir).resolve()
    return directory if directory.parent == store else None


def _upload_dir(job: ImportJob) -> Path | None:
    return _store_folder(job.upload_dir)


def _label(job: ImportJob, role: str) -> str | None:
    """The name the user knows the file of ``role`` by: the name it was uploaded as (the
    upload is stored as ``<role><suffix>``, a name they never saw)."""
    return job.options.get("names", {}).get(role)


def _unpack(job: ImportJob, files: dict, role: str, target: Path) -> Path:
    if not target.exists():
        extract_archive(
            files[role],
            target,
            max_bytes=settings.UNPACK_MAX_BYTES,
            max_ratio=settings.UNPACK_MAX_RATIO,
            label=_label(job, role),
        )
    return target


def _progress(job_id: int):
    """The job page's progress: records handled of the file's, with a heartbeat."""

    def progress(done: int, total: int) -> None:
        job_heartbeat(ImportJob, job_id, done=done, total=total)

    return progress


def _run_bird(job: ImportJob, files: dict[str, Path], directory: Path):
    options = job.options
    databases = directory / "databases"
    if "databases" in files:
        _unpack(job, files, "databases", databases)
    if options.get("databases") == STORED_DATABASES:
        root = None  # records sent to the API name the databases the project already has
    else:
        root = _databases_root(databases) if databases.exists() else directory
    return import_bird(
        project=job.project,
        questions=files["questions"],
        databases=root,
        db_id=options.get("db_id") or None,
        limit=options.get("limit") or None,
        skip_missing_databases=bool(options.get("skip_missing_databases")),
        missing_databases_advice=options.get("advice") or MISSING_DATABASES_ADVICE_PAGE,
        actor=job.created_by,
        progress=_progress(job.pk),
        label=_label(job, "questions"),
    )


def _run_swebench(job: ImportJob, files: dict[str, Path], directory: Path):
    if "repository" in files:
        extracted = _unpack(job, files, "repository", directory / "repository")
        repo = str(_repository_root(extracted))
    else:
        # Checked again: the job may have been queued before the site's rules changed.
        repo = origin_allowed(job.options.get("repo_url") or "")
    return import_swebench(
        project=job.project,
        instances=files["instances"],
        repo=repo,
        actor=job.created_by,
        progress=_progress(job.pk),
        label=_label(job, "instances"),
    )


def _run_bundle(job: ImportJob, files: dict[str, Path], directory: Path):
    # The bundle reader checks the archive (limits, paths, links) and the manifest.
    return import_bundle(
        project=job.project,
        path=files["archive"],
        actor=job.created_by,
        label=_label(job, "archive"),
    )


def _run_hilbench(job: ImportJob, files: dict[str, Path], directory: Path):
    extracted = _unpack(job, files, "archive", directory / "folders")
    root = extracted
    if not find_task_folders(extracted):
        # One wrapping folder (e.g. "sql/") inside the archive: look one level deeper.
        children = [p for p in extracted.iterdir() if p.is_dir()]
        root = children[0] if len(children) == 1 else extracted
    label = _label(job, "archive") or "the archive"
    if root != extracted:
        label = f"{label} ({root.name}/)"
    return import_hilbench(project=job.project, root=root, actor=job.created_by, label=label)


@dataclass(frozen=True)
class Importer:
    """One kind of import: the fields of the Import page it shows (its JavaScript hides the
    others), the files it cannot go without, the file records sent to the bulk API are
    stored as (None: the API does not take this kind), and what runs it in the worker."""

    fields: tuple[str, ...]
    needs: tuple[str, ...]
    run: Callable[[ImportJob, dict[str, Path], Path], Any]
    records: str | None = None


IMPORTERS: dict[str, Importer] = {
    ImportJob.Kind.BIRD: Importer(
        fields=("questions", "databases", "skip_missing_databases"),
        needs=("questions",),
        run=_run_bird,
        records="questions",
    ),
    ImportJob.Kind.SWEBENCH: Importer(
        fields=("instances", "repository", "repo_url"),
        needs=("instances",),
        run=_run_swebench,
        records="instances",
    ),
    ImportJob.Kind.HILBENCH: Importer(fields=("archive",), needs=("archive",), run=_run_hilbench),
    ImportJob.Kind.BUNDLE: Importer(fields=("archive",), needs=("archive",), run=_run_bundle),
}
# Kinds the bulk records API takes, and the file their records are stored as.
RECORD_KINDS = {kind: i.records for kind, i in IMPORTERS.items() if i.records is not None}


def _run_importer(job: ImportJob) -> dict:
    """Run the job's importer on its stored files; returns the report. Raises on refusal."""
    directory = settings.UPLOAD_STORE / job.upload_dir
    files = {role: directory / name for role, name in job.options.get("files", {}).items()}
    return IMPORTERS[job.kind].run(job, files, directory).as_dict()


def _without_server_paths(text: str, job: ImportJob) -> str:
    """``text`` with every server path replaced by what the user knows: an uploaded file by
    its name, a folder unpacked from it by that name, the app's stores by "…"."""
    directory = settings.UPLOAD_STORE / job.upload_dir
    names = job.options.get("names", {})
    replacements: dict[str, str] = {}
    unpacked = {"databases": "databases", "repository": "repository", "archive": "folders"}
    for role, stored in job.options.get("files", {}).items():
        label = names.get(role) or role
        replacements[str(directory / stored)] = label
        if role in unpacked:
            replacements[str(directory / unpacked[role])] = label
    replacements[str(directory)] = "the upload"
    for own in (
        settings.UPLOAD_STORE,
        settings.REPOSITORY_STORE,
        settings.DATABASE_STORE,
        settings.BUNDLE_STORE,
        settings.VAR_DIR,
        settings.BASE_DIR,
    ):
        replacements[str(own)] = "…"
    # A path may have been resolved on the way (symbolic links in the store's path).
    for path, label in list(replacements.items()):
        replacements.setdefault(str(Path(path).resolve()), label)
    # Whole paths only: BASE_DIR "/app" must not eat the "/app" of "…/org/apple".
    pattern = re.compile(
        r"(?<![\w./-])("
        + "|".join(re.escape(p) for p in sorted(replacements, key=len, reverse=True))
        + r")(?![\w.-])"
    )
    return pattern.sub(lambda m: replacements[m.group(1)], text)


def _public_report(report: dict, job: ImportJob) -> dict:
    return {**report, "notes": [_without_server_paths(n, job) for n in report.get("notes", [])]}


def import_execute(*, job_id: int) -> None:
    """Claim the job (queued, or running with a dead worker → running) and run it.

    A redelivered message for a job that is running normally or finished does nothing. A
    job taken over from a dead worker runs again safely: the importer writes in one
    transaction and skips records already present. Whatever the outcome, the upload is
    deleted when the job ends.
    """
    if not job_claim(ImportJob, job_id):
        return
    job = ImportJob.objects.select_related("project", "created_by").get(pk=job_id)
    try:
        # A long import is not a dead one: without heartbeats the reaper would hand it to a
        # second worker, and the first one's clean-up would delete the files it reads.
        with job_heartbeat_while(ImportJob, job_id):
            report = _run_importer(job)
    except ImportRefused as exc:
        job_fail(ImportJob, job_id, _without_server_paths(exc.render(limit=200), job))
        return
    except DomainError as exc:
        job_fail(ImportJob, job_id, _without_server_paths(str(exc), job))
        return
    except Exception as exc:
        # Failed here, without the paths an OSError's text carries; JobTask then finds the
        # row finished. The exception still reaches the worker's log in full.
        job_fail(ImportJob, job_id, _without_server_paths(f"The import crashed: {exc!r}", job))
        raise
    finally:
        _upload_delete(job)
    report = _public_report(report, job)
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
    # After the job is seen finished: the list of the tasks just made is planned with
    # their statistics, not autovacuum's next turn.
    task_statistics_refresh(len(report["created"]))
    if report["created"]:
        bulk_connection_release()


def _upload_delete(job: ImportJob) -> None:
    directory = _upload_dir(job)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def uploads_sweep(*, older_than: timedelta | None = None) -> int:
    """Delete what lies in the upload store for longer than ``older_than`` (default
    ``UPLOAD_KEEP_HOURS``) and no unfinished job still needs; returns how many entries went.

    A job deletes its own upload when it ends; this catches what a worker that died for
    good left, and the scratch folders of imports that never ended. An unfinished import's
    folder and an unfinished results import's pending file are kept whatever their age.
    """
    store = settings.UPLOAD_STORE
    if not store.is_dir():
        return 0
    limit = older_than if older_than is not None else timedelta(hours=settings.UPLOAD_KEEP_HOURS)
    cutoff = time.time() - limit.total_seconds()
    in_use = {
        str(store / d)
        for d in ImportJob.objects.exclude(status__in=ImportJob.FINISHED).values_list(
            "upload_dir", flat=True
        )
    }
    pending = EvaluationRun.objects.exclude(status__in=EvaluationRun.FINISHED).values_list(
        "pending", flat=True
    )
    in_use |= {str(store / p["file"]) for p in pending if isinstance(p, dict) and p.get("file")}
    removed = 0
    for entry in sorted(store.iterdir()):
        children = (
            list(entry.iterdir()) if entry.is_dir() and entry.name == "pending-results" else [entry]
        )
        for path in children:
            try:
                if str(path) in in_use or path.lstat().st_mtime > cutoff:
                    continue
            except FileNotFoundError:  # deleted meanwhile by the job that owned it
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed += 1
    return removed
