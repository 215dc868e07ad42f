"""Reads of the exchange app that pages show."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from exchange.access import export_projects
from exchange.bundles import release
from exchange.bundles.release_runtime import data_note, verifier_files
from exchange.bundles.trial_files import tests_fingerprint
from exchange.models import ExportChunk, ExportJob, ImportJob, VerifierAcceptance
from exchange.services.verifiers import MAX_REVIEWED_BYTES, task_uploaded_tests, unreviewable
from hilbench_annotate.access import has_role
from hilbench_annotate.instructions import MODES
from hilbench_annotate.models import Project
from hilbench_annotate.services.tasks import task_snapshot
from hilbench_annotate.vocabulary import Role

MAX_SHOWN = MAX_REVIEWED_BYTES  # of each file, in the panel (a larger one cannot be accepted)


def _text(content: bytes) -> str:
    return content[:MAX_SHOWN].decode("utf-8", "replace")


def _line(line: str) -> dict:
    kind = {"+": "diff-add", "-": "diff-del", "@": "diff-hunk"}.get(line[:1], "")
    return {"text": line, "class": kind}


def uploaded_verifier(*, user, task) -> dict | None:
    """The task's own verifier beside the one the app generates, per mode (a unified diff of
    each file against the generated file of the same name), and who accepted it, if anyone.
    None when the task carries no verifier of its own."""
    tests = task_uploaded_tests(task)
    if not tests:
        return None
    snapshot = task_snapshot(task)
    files = release.export_files(task, snapshot)
    generated = verifier_files(snapshot, data_note(files, snapshot.get("domain")))
    modes = []
    for mode in MODES:
        prefix = f"{mode}/tests/"
        own = {p[len(prefix) :]: c for p, c in tests.items() if p.startswith(prefix)}
        if not own:
            continue
        diffs = []
        for name in sorted(own):  # the upload's files, against the generated file of its name
            old = _text(generated.get(name, b"")).splitlines()
            new = _text(own[name]).splitlines()
            lines = list(difflib.unified_diff(old, new, f"generated/{name}", f"uploaded/{name}"))
            kind = "same" if not lines else ("changed" if name in generated else "added")
            diffs.append({"name": name, "lines": [_line(x) for x in lines[2:]], "kind": kind})
        only_generated = sorted(generated.keys() - own.keys())
        modes.append({"mode": mode, "files": diffs, "only_generated": only_generated})
    fingerprint = tests_fingerprint(tests)
    acceptance = (
        VerifierAcceptance.objects.filter(task=task, fingerprint=fingerprint)
        .select_related("accepted_by")
        .first()
    )
    may_accept = has_role(user, task.project_id, Role.AUDITOR, Role.LEAD)
    return {
        "modes": modes,
        "acceptance": acceptance,
        "fingerprint": fingerprint,
        "unreviewable": unreviewable(tests),
        "may_accept": may_accept and task.author_id != user.pk,
    }


def import_jobs_recent(*, user, limit: int = 20):
    """The latest imports into the projects ``user`` reads, newest first."""
    return (
        ImportJob.objects.filter(project__in=Project.objects.visible_to(user))
        .select_related("project", "created_by")
        .defer("report")[:limit]
    )


def export_jobs_recent(*, user, limit: int = 20):
    """The latest exports of the projects ``user`` leads, newest first."""
    return (
        ExportJob.objects.filter(project__in=export_projects(user))
        .select_related("project", "created_by")
        .defer("report")[:limit]
    )


def export_written(*, job: ExportJob) -> Iterator[dict]:
    """The results of an export's write step (``writer.chunk_write``'s: the chunk's record,
    its tasks written and left out), in bundle order, read one chunk at a time: an export
    of 50,000 tasks is never held whole."""
    ids = list(
        job.chunks.filter(phase=ExportChunk.Phase.WRITE)
        .order_by("number")
        .values_list("pk", flat=True)
    )
    for pk in ids:
        yield ExportChunk.objects.values_list("result", flat=True).get(pk=pk)


def export_entries(*, job: ExportJob) -> Iterator[dict]:
    """Each task a finished export wrote, in bundle order: its report entry (folder, task
    id, revision, whether validated, the oracle's line …), as ``manifest.json`` lists it with
    the task id. From the write step's chunks; a job finished before its report stopped
    listing them (issue 46) from that report."""
    if "exported" in job.report:
        yield from job.report["exported"]
        return
    for result in export_written(job=job):
        yield from result.get("exported", [])
