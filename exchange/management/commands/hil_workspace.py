from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exchange.bundles.hil import hil_workspace
from hilbench_annotate.errors import DomainError


class Command(BaseCommand):
    help = (
        "Write the workspace the release's `hil` CLI runs (instances.json and one folder per "
        "task, as run_hil_bench.py prepares them) from an export bundle, with build_images.sh "
        "and build_chroma.py. See docs/bundle/README.md, 'Running a bundle with hil'."
    )

    def add_arguments(self, parser):
        parser.add_argument("bundle", type=Path, help="The bundle (.tar.gz) or its folder")
        parser.add_argument("--out", type=Path, required=True, help="A new folder to write")

    def handle(self, *args, **options):
        out = Path(options["out"]).resolve()
        try:
            report = hil_workspace(Path(options["bundle"]), out)
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        for domain in ("sql", "swe"):
            if report[domain]:
                self.stdout.write(
                    f"{len(report[domain])} {domain.upper()} task(s): "
                    f"{out / f'{domain}_tasks' / 'instances.json'}"
                )
        for skipped in report["skipped"]:
            self.stderr.write(f"skipped {skipped['folder']}: {skipped['reason']}")
        if not report["sql"] and not report["swe"]:
            raise CommandError("No task of the bundle can run under hil.")
