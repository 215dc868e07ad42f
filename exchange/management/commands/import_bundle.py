from pathlib import Path

from exchange.importers.bundle import import_bundle

from ._importing import ImportCommand


class Command(ImportCommand):
    help = (
        "Import an export bundle (.tar.gz, .tar, .zip or folder; ours or the HiL-Bench "
        "release's). The archive is checked entry by entry and against its manifest's "
        "checksums first; one bad entry imports nothing."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("path", type=Path, help="The bundle file or folder")

    def handle(self, *args, **options):
        project, actor = self.project_and_actor(options)
        self.run_import(import_bundle, project=project, path=options["path"], actor=actor)
