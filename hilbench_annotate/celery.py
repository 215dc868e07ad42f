import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")

app = Celery("hilbench_annotate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _print_mode(**_kwargs) -> None:
    from django.conf import settings

    print(settings.RUNTIME_MODE, flush=True)
