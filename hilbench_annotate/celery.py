import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from hilbench_annotate.warmup import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")

app = Celery("hilbench_annotate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _poll_embedded_broker(**_kwargs) -> None:
    """The embedded broker (SQLAlchemy on a SQLite file) is looked at every
    ``BROKER_POLL_S``, not kombu's 1 s. Set on the transport's class (once the settings are
    read, before any connection): the transport passes its options on to SQLAlchemy's
    ``create_engine``, which refuses ``polling_interval``."""
    from django.conf import settings
    from kombu.transport import sqlalchemy

    sqlalchemy.Transport.polling_interval = settings.BROKER_POLL_S


@worker_ready.connect
def _print_mode(**_kwargs) -> None:
    from django.conf import settings

    print(settings.RUNTIME_MODE, flush=True)


@worker_process_init.connect
def _preload(**_kwargs) -> None:
    # In each process that runs tasks (every prefork child; the solo pool's one process).
    warm_up()
