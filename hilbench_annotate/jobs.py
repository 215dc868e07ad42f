"""Re-sending jobs the broker lost.

Every long job is a row in our database (an import, an export, a model run…) whose status says
whether it is queued, running or finished; the broker only carries a message saying "run row
N". A message can be lost — Redis restarted without persistence, a send failed while it was
down — and a worker can die mid-job. The database, not the broker, is the truth: the beat's
reaper re-sends every job that is still queued after ``JOB_REDISPATCH_S``, and every running
job whose worker stopped reporting. Each job claims its row with a conditional update, so a
job sent twice runs once.

Apps register their kinds of job in ``AppConfig.ready`` (``register``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.apps import apps
from django.conf import settings
from django.db.models import Q
from django.utils import timezone


@dataclass(frozen=True)
class JobKind:
    model: str  # "app_label.ModelName"
    task: str  # the Celery task's name
    id_kwarg: str  # its keyword argument carrying the row id
    stale_running: Callable[[object], Q]  # now -> rows running with a dead worker


REAPABLE: list[JobKind] = []


def register(kind: JobKind) -> None:
    if all(k.model != kind.model for k in REAPABLE):
        REAPABLE.append(kind)


def jobs_reap() -> dict[str, int]:
    """Re-send lost jobs of every registered kind; returns how many, per kind."""
    from hilbench_annotate.celery import app

    app.loader.import_default_modules()  # the apps' tasks modules, in a web process too
    now = timezone.now()
    queued_before = now - timedelta(seconds=settings.JOB_REDISPATCH_S)
    sent = {}
    for kind in REAPABLE:
        model = apps.get_model(kind.model)
        lost = model.objects.filter(
            Q(status="queued", created_at__lt=queued_before) | kind.stale_running(now)
        ).values_list("pk", flat=True)
        ids = list(lost[:500])
        task = app.tasks[kind.task]
        for pk in ids:
            task.delay(**{kind.id_kwarg: pk})
        sent[kind.model] = len(ids)
    return sent
