from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Project


class ImportCommand(BaseCommand):
    """Shared options and error reporting of the import commands."""

    def add_arguments(self, parser):
        parser.add_argument(
            "--project",
            default="imports",
            help="Slug of the project to import into (made if absent; default: imports)",
        )
        parser.add_argument("--as-user", help="Username recorded as the tasks' author")

    def project_and_actor(self, options):
        slug = slugify(options["project"])
        if not slug:
            raise CommandError("--project must be a slug")
        project, created = Project.objects.get_or_create(
            slug=slug, defaults={"name": options["project"].replace("-", " ").title()}
        )
        if created:
            self.stdout.write(f"Made project {project.name} ({project.slug}).")
        actor = None
        if options.get("as_user"):
            try:
                actor = get_user_model().objects.get(username=options["as_user"])
            except get_user_model().DoesNotExist:
                raise CommandError(f"No user {options['as_user']!r}.") from None
        return project, actor

    def run_import(self, function, **kwargs):
        try:
            report = function(**kwargs)
        except ImportRefused as exc:
            raise CommandError(exc.render(limit=200)) from None
        self.stdout.write(self.style.SUCCESS(report.summary()))
        return report
