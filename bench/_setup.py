"""What the Django benchmarks share: their own database, made fresh, and the mode printed.

Import it before anything Django; call ``fresh_database()`` once arguments are parsed.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def configure(sqlite_name: str) -> None:
    """A database of the benchmark's own (SQLite under var/bench unless DATABASE_URL)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HILBENCH_VAR_DIR", str(ROOT / "var" / "bench"))
    os.environ.setdefault("HILBENCH_SQLITE_PATH", str(ROOT / "var" / "bench" / sqlite_name))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
    # A development run on a throwaway database (the app defaults to DEBUG off and then wants a
    # secret key); a bench that measures as deployed sets DJANGO_DEBUG=0 before this.
    os.environ.setdefault("DJANGO_DEBUG", "1")


def fresh_database(*, drop_broker: bool = False) -> None:
    """Set Django up on an empty, migrated database and print the mode in use.

    The SQLite file (and, with ``drop_broker``, the embedded broker) is deleted first; a
    PostgreSQL database named by DATABASE_URL is migrated as it is.
    """
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if not os.environ.get("DATABASE_URL"):
        Path(settings.DATABASES["default"]["NAME"]).unlink(missing_ok=True)
        if drop_broker:
            Path(settings.VAR_DIR / "celery-broker.sqlite").unlink(missing_ok=True)
    call_command("migrate", verbosity=0)
    print(settings.RUNTIME_MODE)


def start_worker(name: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A real Celery worker process (solo pool, quiet) named ``name``; the caller stops it."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "hilbench_annotate",
            "worker",
            "--pool=solo",
            "--loglevel=warning",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"{name}@%h",
        ],  # fmt: skip
        cwd=ROOT,
        env=env if env is not None else os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
