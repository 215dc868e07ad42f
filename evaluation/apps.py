from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Model runs and help-seeking metrics"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from hilbench_annotate.jobs import JobKind, register
        from hilbench_annotate.models import Project

        from . import gates  # models are loaded only now

        gates.register()
        # A project gets the default failure taxonomy when it is made, so that reading it
        # never writes.
        from .services.failures import taxonomy_ensure

        def project_made(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
            if created and not raw:
                taxonomy_ensure(instance)

        post_save.connect(
            project_made, sender=Project, weak=False, dispatch_uid="evaluation.taxonomy"
        )
        stale = "EVALUATION_STALE_S"  # runs beat from a thread while their worker lives
        register(JobKind("evaluation.EvaluationRun", "evaluation.run", "run_id", stale, "run"))
        stale = "STUDY_STALE_S"  # studies and labelling runs beat once per stored record
        register(
            JobKind("evaluation.SupportStudy", "evaluation.support", "study_id", stale, "study")
        )
        register(
            JobKind("evaluation.LabellingRun", "evaluation.label", "run_id", stale, "labelling run")
        )
