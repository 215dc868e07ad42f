from django.apps import AppConfig


class ValidatorsConfig(AppConfig):
    name = "validators"
    verbose_name = "Validators"

    def ready(self) -> None:
        from hilbench_annotate.jobs import JobKind, register

        from . import bulk_actions, gates, panels  # models are loaded only now

        gates.register()
        panels.register()
        bulk_actions.register()
        register(
            JobKind(
                "validators.ValidationRun",
                "validators.run",
                "run_id",
                "VALIDATION_STALE_S",
                "validation run",
            )
        )
        register(
            JobKind(
                "validators.EnvironmentBuild",
                "validators.build_environment",
                "build_id",
                "ENVIRONMENT_STALE_S",
                "environment build",
            )
        )
