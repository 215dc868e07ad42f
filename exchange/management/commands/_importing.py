from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Project
from hilbench_annotate.services import task_statistics_refresh


class ImportCommand(BaseCommand):
    """Shared options and error reporting of the import commands."""

    # Django's system checks import every view and URL pattern first: 0.4 s of a 10,000
    # question import's 3.5 s. An import needs the models only; ``manage.py check`` (run by
    # ``make test`` and at deployment) still checks the project.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--project",
            help="Slug of the project to import into (required; its members see the tasks)",
        )
        parser.add_argument("--as-user", help="Username recorded as the tasks' author")

    def project_and_actor(self, options):
        project = self._project(options.get("project"))
        actor = None
        if options.get("as_user"):
            try:
                actor = get_user_model().objects.get(username=options["as_user"])
            except get_user_model().DoesNotExist:
                raise CommandError(f"No user {options['as_user']!r}.") from None
        return project, actor

    @staticmethod
    def _project(slug: str | None) -> Project:
        """The project named by ``--project``. Never made here: a project made by an import
        has no members, so nobody would see the tasks."""
        found = Project.objects.filter(slug=slug).first() if slug else None
        if found is not None:
            return found
        projects = list(Project.objects.order_by("slug").values_list("slug", "name"))
        listing = (
            "Existing projects: " + ", ".join(f"{s} ({n})" for s, n in projects) + "."
            if projects
            else "There is no project yet."
        )
        problem = f"No project {slug!r}." if slug else "Name the project to import into."
        raise CommandError(
            f"{problem} Give --project SLUG. {listing} Make a new one with its members, so the "
            "people who work on the tasks can see them: `manage.py create_project --name NAME "
            "--member USER:lead --member USER:author` (or in the admin, /admin/)."
        )

    def run_import(self, function, **kwargs):
        try:
            report = function(**kwargs)
        except ImportRefused as exc:
            raise CommandError(exc.render(limit=200)) from None
        self.stdout.write(self.style.SUCCESS(report.summary()))
        task_statistics_refresh(len(report.created))
        return report
