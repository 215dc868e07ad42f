from django.apps import AppConfig


class ValidatorsConfig(AppConfig):
    name = "validators"
    verbose_name = "Validators"
