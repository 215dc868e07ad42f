from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from hilbench_annotate.models import Project

        from . import bulk_actions, panels, search  # models are loaded only now

        panels.register()
        bulk_actions.register()
        search.register()
        # A project gets its default pipeline when it is made (by any path: the admin, an
        # import, a script), so that reading it never writes.
        from .services import pipeline_ensure

        def project_made(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
            if created and not raw:
                pipeline_ensure(instance)

        post_save.connect(project_made, sender=Project, weak=False, dispatch_uid="review.pipeline")
