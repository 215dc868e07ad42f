"""Importing results the way a harness would, for tests of what reads them."""

import json
import tempfile
from pathlib import Path

from django.contrib.auth import get_user_model

from evaluation.services import evaluation_run_execute, results_import_start


def import_results(*, project, actor, records: list[dict], model: str = "model-a"):
    """Write ``records`` as a JSONL file, import it and let the job store it."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "results.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        runs = results_import_start(project=project, actor=actor, path=path, model_name=model)
    for run in runs:
        evaluation_run_execute(run_id=run.pk)
        run.refresh_from_db()
    return runs


def keep_by_pass_rate(
    task, *, model: str = "gpt-4o", beside: tuple[str, ...] = ("claude-sonnet-4",)
):
    """Evidence that keeps ``task`` under the default policy (two distinct models): ``model``
    and each model of ``beside`` solved it 3/3 with full information, 0/3 without
    (``beside=()``: ``model`` alone, which the default policy does not keep). Returns
    ``model``'s runs."""
    lead = (
        get_user_model()
        .objects.filter(memberships__project=task.project, memberships__role="lead")
        .first()
    )
    records = [
        {"task": task.pk, "mode": mode, "pass": i, "resolved": mode == "full_info"}
        for mode in ("baseline", "full_info")
        for i in (1, 2, 3)
    ]
    runs = import_results(project=task.project, actor=lead, records=records, model=model)
    for other in beside:
        import_results(project=task.project, actor=lead, records=records, model=other)
    return runs
