from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "judge"
    verbose_name = "ask_human judge"

    def ready(self) -> None:
        from hilbench_annotate.jobs import JobKind, register
        from hilbench_annotate.revision_hooks import register_revision_hook
        from hilbench_annotate.toolkit.heap import heap_release
        from hilbench_annotate.warmup import register_warmup

        from . import (
            encoder,
            gates,  # models are loaded only now
        )
        from .services import judge_preload
        from .tasks import revision_prepare_hook

        encoder.after_load = heap_release
        gates.register()
        register(
            JobKind(
                "judge.CalibrationJob",
                "judge.calibrate",
                "job_id",
                "VALIDATION_STALE_S",
                "judge calibration",
            )
        )
        register_warmup("judge", judge_preload, processes=("web",))
        register_revision_hook("judge_index", revision_prepare_hook)
