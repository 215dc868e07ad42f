"""Import model-run results from any harness, or need-for-help scores, into a project.

    python manage.py import_results --project SLUG --as LEAD PATH [--model NAME] [--scores]

PATH is a ``.jsonl`` file (``--model`` names the model), a HiL-Bench results folder holding
``pass_level_metrics.csv`` (it names its models), or that folder as ``.zip`` / ``.tar.gz``,
or a Harbor jobs folder (``harbor run -o FOLDER``: one pass per trial the release scores —
one that ran out of time too, on what it left — the ask-human sidecar's log of an
``ask_human`` trial as its questions; a trial whose agent process, environment, verifier or
harness failed is a try left out, stored with why and counted after the passes).
With ``--scores`` the JSONL lines are ``{task, score, correct, correct_with_support}``.
Every line is checked first; with any bad line nothing is imported and the lines are named.
Runs are queued for the worker (``--wait`` stores them here instead).
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluation.services import evaluation_run_execute, results_import_start, support_import
from evaluation.tries import exclusions_text
from hilbench_annotate.errors import Refused
from hilbench_annotate.models import Project


class Command(BaseCommand):
    help = (
        "Import evaluation results (JSONL, a HiL-Bench results folder, or a Harbor jobs "
        "folder) into a project."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--project", required=True, help="Project slug")
        parser.add_argument("--as", dest="username", required=True, help="A lead of the project")
        parser.add_argument("--model", default="", help="Model name (needed for .jsonl)")
        parser.add_argument("--scores", action="store_true", help="Need-for-help scores")
        parser.add_argument("--wait", action="store_true", help="Store here, not in a worker")

    def handle(self, *args, path, project, username, model, scores, wait, **options):
        try:
            project = Project.objects.get(slug=project)
            actor = get_user_model().objects.get(username=username)
        except (Project.DoesNotExist, get_user_model().DoesNotExist) as error:
            raise CommandError(str(error)) from None
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        try:
            with transaction.atomic():
                if scores:
                    study = support_import(
                        project=project, actor=actor, path=path, model_name=model
                    )
                    self.stdout.write(f"{study.total} scores imported for {study.model_name}.")
                    return
                runs = results_import_start(
                    project=project, actor=actor, path=path, model_name=model
                )
        except Refused as error:
            raise CommandError(str(error)) from None
        for run in runs:
            if wait:
                evaluation_run_execute(run_id=run.pk)
                run.refresh_from_db()
            excluded = exclusions_text(run.excluded_tries.values_list("reason", "exception"))
            self.stdout.write(
                f"run {run.pk}: {run.model_name}, {run.total} passes, {run.status}"
                + (f"; {excluded}" if excluded else "")
            )
