import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from hilbench_annotate.warmup import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")

app = Celery("hilbench_annotate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _print_mode(**_kwargs) -> None:
    from django.conf import settings

    print(settings.RUNTIME_MODE, flush=True)


@worker_process_init.connect
def _preload(**_kwargs) -> None:
    # In each process that runs tasks (every prefork child; the solo pool's one process).
    warm_up()
