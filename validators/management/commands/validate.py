import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.http import Http404

from hilbench_annotate.errors import Refused
from hilbench_annotate.models import Membership, Task
from hilbench_annotate.vocabulary import Role
from validators.models import ValidationRun
from validators.registry import GROUPS
from validators.services import validation_run_execute, validation_run_start


class Command(BaseCommand):
    help = (
        "Run a task's structural checks. Queues a run for the workers; --wait waits for it, "
        "--here runs it in this process. Exits 1 when any check fails. The run is started "
        "as --as-user (default: the task's author, else the project's first lead), who must "
        "be allowed to change the task, as on the task page."
    )

    def add_arguments(self, parser):
        parser.add_argument("task_id", type=int)
        parser.add_argument("--checks", nargs="+", choices=sorted(GROUPS), help="Check groups")
        parser.add_argument("--wait", action="store_true", help="Wait for the workers to finish")
        parser.add_argument("--here", action="store_true", help="Run in this process, no worker")
        parser.add_argument("--timeout", type=float, default=3600, help="Seconds to wait at most")
        parser.add_argument(
            "--as-user",
            metavar="USERNAME",
            help="The user who starts the run: the task's author or a lead of its project "
            "(default: the task's author, else the project's first lead)",
        )

    def handle(self, *args, task_id, checks, wait, here, timeout, **options):
        try:
            task = Task.objects.select_related("project", "author").get(pk=task_id)
        except Task.DoesNotExist:
            raise CommandError(f"No task {task_id}.") from None
        actor = self._actor(task, options.get("as_user"))
        try:
            with transaction.atomic():
                run = validation_run_start(task=task, actor=actor, checks=checks)
        except Refused as exc:
            raise CommandError(str(exc)) from None
        except Http404:
            raise CommandError(f"{actor.username} cannot see task {task_id}.") from None
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

    def _actor(self, task, username):
        """The user named by --as-user, else the task's author, else the project's first
        lead; the service decides whether they may start the run."""
        if username:
            try:
                return get_user_model().objects.get(username=username)
            except get_user_model().DoesNotExist:
                raise CommandError(f"No user {username!r}.") from None
        if task.author is not None:
            return task.author
        lead = (
            Membership.objects.filter(project_id=task.project_id, role=Role.LEAD)
            .select_related("user")
            .order_by("pk")
            .first()
        )
        if lead is None:
            raise CommandError(
                f"Task {task.pk} has no author and {task.project.slug} no lead: pass --as-user "
                "with a user who may change the task."
            )
        return lead.user
