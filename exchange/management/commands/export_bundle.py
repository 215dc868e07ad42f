from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from exchange.models import ExportJob
from exchange.selectors import export_entries
from exchange.services.exports import bundle_export_create, bundle_export_execute
from hilbench_annotate.access import has_role
from hilbench_annotate.errors import Refused
from hilbench_annotate.models import Membership, Project
from hilbench_annotate.vocabulary import Role


def export_line(entry: dict) -> str:
    """One exported task as the command prints it: its folder, its oracle and no-op rewards
    (or why they were not run) and whether the bundle calls it validated."""
    verdict = "validated" if entry.get("validated") else f"not validated: {entry.get('reason')}"
    oracle = entry.get("oracle") or "oracle not recorded"
    return f"  {entry['folder']} (task {entry['task']}): {oracle} — {verdict}"


class Command(BaseCommand):
    help = (
        "Export a project's validated tasks as a HiL-Bench bundle (.tar.gz), the same code "
        "path as the export page. Exits 1 when nothing could be exported."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug")
        parser.add_argument("--out", required=True, type=Path, help="PATH.tar.gz to write")
        parser.add_argument("--tasks", nargs="*", type=int, default=[], help="Task ids")
        parser.add_argument("--states", nargs="*", default=[], help="Task states to include")
        parser.add_argument("--domain", default="", choices=["", "sql", "swe"])
        parser.add_argument("--tags", nargs="*", default=[], help="Tasks with any of these tags")
        parser.add_argument(
            "--draft", action="store_true", help="Include tasks that did not pass every gate"
        )
        parser.add_argument(
            "--reveal-reviewers", action="store_true", help="Name reviewers in review.json"
        )
        parser.add_argument(
            "--allow-internet",
            action="store_true",
            help="Let the tasks' containers reach the internet (default: allow_internet = false)",
        )
        parser.add_argument(
            "--judge-endpoint",
            default="",
            help="With --judge-model: the release's own ask-human sidecar judges the ask_human of "
            "tasks kept from the release, calling this OpenAI-compatible endpoint (default: the "
            "app's embedded judge)",
        )
        parser.add_argument("--judge-model", default="", help="The model of --judge-endpoint")
        parser.add_argument(
            "--as-user", help="A lead of the project recorded on the export (default: first lead)"
        )

    def handle(self, *args, **options):
        try:
            project = Project.objects.get(slug=options["project"])
        except Project.DoesNotExist:
            raise CommandError(f"No project {options['project']!r}.") from None
        actor = self._actor(project, options.get("as_user"))
        try:
            job = bundle_export_create(
                project=project,
                actor=actor,
                selection={
                    "tasks": options["tasks"],
                    "states": options["states"],
                    "domain": options["domain"],
                    "tags": options["tags"],
                },
                draft=options["draft"],
                reveal_reviewers=options["reveal_reviewers"],
                allow_internet=options["allow_internet"],
                llm_judge={"endpoint": options["judge_endpoint"], "model": options["judge_model"]},
            )
            job = bundle_export_execute(job_id=job.pk, out=Path(options["out"]).resolve())
        except Refused as exc:
            raise CommandError(str(exc)) from None
        if job.status != ExportJob.Status.SUCCEEDED:
            raise CommandError(job.error)
        report = job.report
        for entry in export_entries(job=job):
            self.stdout.write(export_line(entry))
        for skipped in report["skipped"]:
            self.stdout.write(
                f"  left out task {skipped['task']} ({skipped['title']}): {skipped['reason']}"
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"{report['exported_count']} task(s) written to {options['out']} "
                f"({job.size_bytes} bytes, {report['files']} files, sha256 {job.sha256})"
                + (" — draft bundle" if job.draft else "")
            )
        )

    def _actor(self, project, username):
        User = get_user_model()
        if username:
            try:
                user = User.objects.get(username=username)
            except User.DoesNotExist:
                raise CommandError(f"No user {username!r}.") from None
            if not has_role(user, project.pk, Role.LEAD):
                raise CommandError(f"{username} is not a lead of {project.slug}.")
            return user
        lead = (
            Membership.objects.filter(project=project, role=Role.LEAD)
            .select_related("user")
            .order_by("pk")
            .first()
        )
        if lead is None:
            raise CommandError(f"{project.slug} has no lead; pass --as-user with a superuser.")
        return lead.user
