"""The support-seeking study (second paper): built-in runs and imported scores."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from hilbench_annotate.access import require_role
from hilbench_annotate.chat import ChatError
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_claim, job_fail, job_finish, job_heartbeat, job_send
from hilbench_annotate.models import Project, Task
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.vocabulary import Role

from ..models import EvaluationRun, ModelEndpoint, SupportRecord, SupportStudy
from ..results import parse_support_jsonl
from ..support import METHODS as SUPPORT_METHODS
from ..support import run_support
from .common import current_revision, project_tasks, stored_upload, task_resolver
from .runs import sql_task_context


@transaction.atomic
def support_study_start(
    *, project: Project, actor, endpoint: ModelEndpoint, method: str, task_ids: list[int]
) -> SupportStudy:
    require_role(actor, project, Role.LEAD, action="do this")
    if method not in SUPPORT_METHODS:
        raise DomainError(f"The method must be one of {', '.join(SUPPORT_METHODS)}.")
    if endpoint.project_id != project.pk:
        raise DomainError("The endpoint belongs to another project.")
    if not task_ids:
        raise DomainError("Choose at least one task.")
    tasks = project_tasks(project, task_ids, domain="sql")
    study = SupportStudy.objects.create(
        project=project,
        model_name=endpoint.name,
        method=method,
        endpoint=endpoint,
        task_ids=[t.pk for t in tasks],
        total=len(tasks),
        created_by=actor,
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="support_study_queued",
        study=study.pk,
    )
    job_send(study)
    return study


def support_study_execute(*, study_id: int) -> None:
    if not job_claim(SupportStudy, study_id):
        return
    study = SupportStudy.objects.select_related("endpoint").get(pk=study_id)
    if study.endpoint is None:
        job_fail(SupportStudy, study.pk, "The study's endpoint was deleted.")
        return
    endpoint = study.endpoint.client()
    failures = []
    done = set(study.records.values_list("task_id", flat=True))
    for task in Task.objects.filter(pk__in=study.task_ids).exclude(pk__in=done).order_by("pk"):
        revision = current_revision(task)
        try:
            context = sql_task_context(task, revision)
            blockers = revision.snapshot.get("blockers", [])
            outcome = run_support(
                endpoint=endpoint,
                context=context,
                question=revision.snapshot["blocked_spec"].get("question", ""),
                hints=[b.get("resolution", "") for b in blockers],
                method=study.method,
            )
        except (DomainError, ChatError) as error:
            failures.append(f"task {task.pk}: {error}")
            continue
        with transaction.atomic():
            SupportRecord.objects.create(
                study=study,
                task=task,
                score=outcome.score,
                score_source=outcome.score_source,
                correct=outcome.correct,
                correct_with_support=outcome.correct_with_support,
                detail={**outcome.detail, "revision": revision.number},
            )
            job_heartbeat(SupportStudy, study.pk, done=F("done") + 1)
    job_finish(
        SupportStudy,
        study.pk,
        error="\n".join(failures)[:4000],
    )


def support_import(
    *, project: Project, actor, path: Path, model_name: str, method: str = "imported"
) -> SupportStudy:
    """Records ``{task, score, correct, correct_with_support}`` per JSONL line, all or none."""
    require_role(actor, project, Role.LEAD, action="do this")
    if not model_name.strip():
        raise DomainError("Name the model whose scores these are.")
    if method not in SupportStudy.Method.values:
        raise DomainError(f"The method must be one of {', '.join(SupportStudy.Method.values)}.")
    resolve = task_resolver(project)
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        records = parse_support_jsonl(handle, resolve, name=Path(path).name)
    study = SupportStudy.objects.create(
        project=project,
        model_name=model_name.strip()[:200],
        method=method,
        task_ids=sorted({r["task_id"] for r in records}),
        status=EvaluationRun.Status.SUCCEEDED,
        done=len(records),
        total=len(records),
        created_by=actor,
        finished_at=timezone.now(),
    )
    SupportRecord.objects.bulk_create(
        SupportRecord(study=study, score_source="imported", **record) for record in records
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="support_scores_imported",
        study=study.pk,
        records=len(records),
    )
    return study


@transaction.atomic
def support_upload(*, project: Project, actor, upload, model_name: str) -> SupportStudy:
    """``support_import`` on a browser upload."""
    require_role(actor, project, Role.LEAD, action="do this")
    with stored_upload(upload) as path:
        return support_import(project=project, actor=actor, path=path, model_name=model_name)
