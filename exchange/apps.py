from django.apps import AppConfig


class ExchangeConfig(AppConfig):
    name = "exchange"
    verbose_name = "Import and export"

    def ready(self) -> None:
        from hilbench_annotate.jobs import JobKind, register

        from . import panels

        panels.register()

        register(JobKind("exchange.ImportJob", "imports.run", "job_id", "IMPORT_STALE_S", "import"))
        register(
            JobKind("exchange.ExportJob", "bundles.export", "job_id", "EXPORT_STALE_S", "export")
        )
        register(
            JobKind(
                "exchange.ExportChunk",
                "bundles.export_chunk",
                "chunk_id",
                "EXPORT_CHUNK_STALE_S",
                "export step",
            )
        )
        # Agent runs in Harbor export bundles: their worker half is ours (evaluation queues).
        from evaluation.services.runs import RUN_EXECUTORS

        from .services.harbor_runs import harbor_run_execute

        RUN_EXECUTORS["harbor"] = harbor_run_execute
