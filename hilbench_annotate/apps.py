import sys

from django.apps import AppConfig
from django.conf import settings


class CoreConfig(AppConfig):
    name = "hilbench_annotate"
    verbose_name = "HiL-Bench Annotate"

    def ready(self) -> None:
        from hilbench_annotate import databases, tag_actions
        from hilbench_annotate.toolkit import sqlconsole

        # The task list's bulk actions of core's own (review and validators add theirs).
        tag_actions.register()

        # Every query on a task database gets the settings' limits, whoever runs it.
        sqlconsole.set_limits_source(databases.query_limits)
        # The mode in use is printed when a server starts, never a silent fallback.
        if len(sys.argv) > 1 and sys.argv[1] in {"runserver", "serve"}:
            print(settings.RUNTIME_MODE, flush=True)
