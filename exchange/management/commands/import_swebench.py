from pathlib import Path

from exchange.importers import import_swebench

from ._importing import ImportCommand


class Command(ImportCommand):
    help = "Import SWE-bench / SWE-Bench Pro instances and mirror their repository."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--instances", required=True, type=Path, help="JSON or JSONL file")
        parser.add_argument(
            "--repo", required=True, help="Local path or https/ssh URL of the repository"
        )
        parser.add_argument("--limit", type=int, help="At most N instances")

    def handle(self, *args, **options):
        project, actor = self.project_and_actor(options)
        self.run_import(
            import_swebench,
            project=project,
            instances=options["instances"],
            repo=options["repo"],
            limit=options["limit"],
            actor=actor,
        )
