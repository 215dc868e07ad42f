from django.apps import AppConfig


class ValidatorsConfig(AppConfig):
    name = "validators"
    verbose_name = "Validators"

    def ready(self) -> None:
        from . import gates  # noqa: PLC0415 - models are loaded only now

        gates.register()
