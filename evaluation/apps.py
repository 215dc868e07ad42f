from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Model runs and help-seeking metrics"

    def ready(self) -> None:
        from . import gates  # noqa: PLC0415 - models are loaded only now

        gates.register()
        from datetime import timedelta

        from django.conf import settings
        from django.db.models import Q

        from hilbench_annotate.jobs import JobKind, register

        def silent(now):
            stale = now - timedelta(seconds=settings.EVALUATION_STALE_S)
            return Q(status="running", heartbeat_at__lt=stale)

        register(JobKind("evaluation.EvaluationRun", "evaluation.run", "run_id", silent))
        register(JobKind("evaluation.SupportStudy", "evaluation.support", "study_id", silent))
        register(JobKind("evaluation.LabellingRun", "evaluation.label", "run_id", silent))
