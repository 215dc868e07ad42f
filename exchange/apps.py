from datetime import timedelta

from django.apps import AppConfig


class ExchangeConfig(AppConfig):
    name = "exchange"
    verbose_name = "Import and export"

    def ready(self) -> None:
        from django.db.models import Q

        from hilbench_annotate.jobs import JobKind, register

        # Imports and exports re-claim a running job after their own stale time.
        def started_before(minutes: int):
            return lambda now: Q(status="running", started_at__lt=now - timedelta(minutes=minutes))

        register(JobKind("exchange.ImportJob", "imports.run", "job_id", started_before(15)))
        register(JobKind("exchange.ExportJob", "bundles.export", "job_id", started_before(30)))
