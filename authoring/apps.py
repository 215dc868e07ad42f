from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    name = "authoring"
    verbose_name = "Authoring workspace"

    def ready(self) -> None:
        from . import gates  # noqa: PLC0415 - models are loaded only now

        gates.register()
