from pathlib import Path

from exchange.importers import import_hilbench

from ._importing import ImportCommand


class Command(ImportCommand):
    help = "Import HiL-Bench release task folders with their blocker registries."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("root", type=Path, help="A task folder or a folder of them")

    def handle(self, *args, **options):
        project, actor = self.project_and_actor(options)
        self.run_import(import_hilbench, project=project, root=options["root"], actor=actor)
