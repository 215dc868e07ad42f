import sys

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "hilbench_annotate"
    verbose_name = "HiL-Bench Annotate"

    def ready(self) -> None:
        from datetime import timedelta

        from django.db.models import Q

        from hilbench_annotate.jobs import JobKind, register

        # Imports and exports re-claim a running job after their own stale time.
        def started_before(minutes: int):
            return lambda now: Q(status="running", started_at__lt=now - timedelta(minutes=minutes))

        register(
            JobKind("hilbench_annotate.ImportJob", "imports.run", "job_id", started_before(15))
        )
        register(
            JobKind("hilbench_annotate.ExportJob", "bundles.export", "job_id", started_before(30))
        )

        # The mode in use is printed when a server starts, never a silent fallback.
        if len(sys.argv) > 1 and sys.argv[1] in {"runserver", "serve"}:
            from django.conf import settings

            print(settings.RUNTIME_MODE, flush=True)
