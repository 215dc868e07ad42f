from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    name = "authoring"
    verbose_name = "Authoring workspace"

    def ready(self) -> None:
        from . import gates  # models are loaded only now

        gates.register()
