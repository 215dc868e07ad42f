import os

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
)
from django.db import close_old_connections

from hilbench_annotate.toolkit.heap import heap_freeze, heap_release
from hilbench_annotate.toolkit.sqlitewal import start_checkpointer
from hilbench_annotate.warmup import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")

app = Celery("hilbench_annotate")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fixup closes every database connection before and after each job unless
# told to reuse them: each job then paid a new PostgreSQL backend (its start-up and its
# catalog caches, filled again), about 35 ms of PostgreSQL's CPU an export chunk. Jobs keep a
# web request's lifecycle instead (``_database_connections``); the fixup's own count of jobs
# before it closes is set past reach.
app.conf.update(CELERY_DB_REUSE_MAX=2**31)
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


def broker_warm_up() -> str:
    """The broker's client code imported before a web process serves: the first job each
    process sent paid for importing it (0.2 s for the embedded broker's SQLAlchemy and its
    SQLite dialect). No connection is opened: under ``gunicorn --preload`` this runs in the
    master, and each worker it forks connects on its own. A broker it cannot name (a
    misspelt URL, a missing client library) is reported, not raised: the server starts and
    the first job sent says what is wrong."""
    try:
        with app.connection_for_write() as connection:
            transport = connection.transport  # the transport's module and its client library
            if transport.driver_type == "sql":
                from sqlalchemy.engine import make_url

                make_url(connection.hostname).get_dialect()  # the SQLAlchemy URL, sqla+ dropped
    except Exception as exc:  # any failure is the line in the log
        return f"not loaded: {exc!r}"
    return f"{type(transport).__module__}"


@worker_ready.connect
def _print_mode(**_kwargs) -> None:
    from django.conf import settings

    print(settings.RUNTIME_MODE, flush=True)


@worker_ready.connect
def _checkpoint_embedded_database(**_kwargs) -> None:
    """On the embedded SQLite database, this worker's main process makes the checkpoints
    (toolkit/sqlitewal.py): no request or job commits waiting for one."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        start_checkpointer(database["NAME"])


@worker_init.connect
def _freeze_before_the_pool_forks(**_kwargs) -> None:
    """The main process has imported the app and every task module: frozen, so the pool's
    processes it forks never copy them in a collection (toolkit/heap.py)."""
    heap_freeze()


@worker_process_init.connect
def _preload(**_kwargs) -> None:
    # In each process that runs tasks (every prefork child; the solo pool's one process): what
    # is registered for workers. Not the judge: the jobs that judge load it on first use.
    warm_up("worker")


@task_prerun.connect
@task_postrun.connect
def _database_connections(task=None, **_kwargs) -> None:
    """Before and after each job, as Django does around each request: a connection that is
    broken, or older than ``CONN_MAX_AGE``, is closed (the next query opens another); one
    kept is checked before its first query (``CONN_HEALTH_CHECKS``). Not around a job run
    eagerly, in its caller's transaction (as the fixup, which leaves those alone too)."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    close_old_connections()


@task_postrun.connect
def _release_heap(**_kwargs) -> None:
    """What a job freed goes back to the system (toolkit/heap.py): a prefork process kept
    about 30 MB after an export for as long as it lived."""
    heap_release()
