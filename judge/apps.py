from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "judge"
    verbose_name = "ask_human judge"

    def ready(self) -> None:
        from . import gates  # models are loaded only now

        gates.register()
