import time

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from hilbench_annotate.errors import Refused
from hilbench_annotate.models import Task
from validators.models import ValidationRun
from validators.registry import GROUPS
from validators.services import validation_run_execute, validation_run_start


class Command(BaseCommand):
    help = (
        "Run a task's structural checks. Queues a run for the workers; --wait waits for it, "
        "--here runs it in this process. Exits 1 when any check fails."
    )

    def add_arguments(self, parser):
        parser.add_argument("task_id", type=int)
        parser.add_argument("--checks", nargs="+", choices=sorted(GROUPS), help="Check groups")
        parser.add_argument("--wait", action="store_true", help="Wait for the workers to finish")
        parser.add_argument("--here", action="store_true", help="Run in this process, no worker")
        parser.add_argument("--timeout", type=float, default=3600, help="Seconds to wait at most")

    def handle(self, *args, task_id, checks, wait, here, timeout, **options):
        try:
            task = Task.objects.get(pk=task_id)
        except Task.DoesNotExist:
            raise CommandError(f"No task {task_id}.") from None
        try:
            with transaction.atomic():
                run = validation_run_start(task=task, actor=None, checks=checks)
        except Refused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Run {run.pk} on revision {run.revision.number}: {', '.join(run.checks)}"
        )
        if here:
            validation_run_execute(run_id=run.pk)
        elif not wait:
            self.stdout.write("Queued; a worker runs it (use --wait to wait, --here to run here).")
            return
        deadline = time.monotonic() + timeout
        while True:
            run.refresh_from_db()
            if run.is_finished:
                break
            if time.monotonic() > deadline:
                raise CommandError(
                    f"Run {run.pk} did not finish within {timeout:.0f} s ({run.status})."
                )
            time.sleep(1)
        for result in run.results.all():
            self.stdout.write(
                f"  {result.outcome:8} {result.group} · {result.check_name}: {result.message}"
            )
        self.stdout.write(f"Run {run.pk}: {run.status}")
        if run.status != ValidationRun.Status.PASSED:
            raise CommandError(f"Run {run.pk} {run.status}.", returncode=1)
