from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Model runs and help-seeking metrics"

    def ready(self) -> None:
        from hilbench_annotate.jobs import JobKind, register

        from . import gates  # models are loaded only now

        gates.register()
        stale = "EVALUATION_STALE_S"
        register(JobKind("evaluation.EvaluationRun", "evaluation.run", "run_id", stale, "run"))
        register(
            JobKind("evaluation.SupportStudy", "evaluation.support", "study_id", stale, "study")
        )
        register(
            JobKind("evaluation.LabellingRun", "evaluation.label", "run_id", stale, "labelling run")
        )
