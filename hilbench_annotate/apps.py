import sys

from django.apps import AppConfig
from django.conf import settings


class CoreConfig(AppConfig):
    name = "hilbench_annotate"
    verbose_name = "HiL-Bench Annotate"

    def ready(self) -> None:
        # The mode in use is printed when a server starts, never a silent fallback.
        if len(sys.argv) > 1 and sys.argv[1] in {"runserver", "serve"}:
            print(settings.RUNTIME_MODE, flush=True)
