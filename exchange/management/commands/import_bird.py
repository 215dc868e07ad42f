from pathlib import Path

from exchange.importers import import_bird

from ._importing import ImportCommand


class Command(ImportCommand):
    help = "Import BIRD questions with their SQLite databases and description CSVs."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--questions", required=True, type=Path, help="BIRD JSON/JSONL file")
        parser.add_argument(
            "--databases",
            required=True,
            type=Path,
            help="DIR with <db_id>/<db_id>.sqlite and <db_id>/database_description/*.csv",
        )
        parser.add_argument("--db-id", help="Only the questions on this database")
        parser.add_argument("--limit", type=int, help="At most N questions")
        parser.add_argument(
            "--skip-missing-databases",
            action="store_true",
            help="Import questions whose database file is absent, noting it on the task",
        )

    def handle(self, *args, **options):
        project, actor = self.project_and_actor(options)
        self.run_import(
            import_bird,
            project=project,
            questions=options["questions"],
            databases=options["databases"],
            db_id=options["db_id"],
            limit=options["limit"],
            skip_missing_databases=options["skip_missing_databases"],
            actor=actor,
        )
