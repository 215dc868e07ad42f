"""An export a Harbor run made of its own tasks names the run (issue 45, item 6c).

Exports made so before this field are found by where they were written: a Harbor run
exports to ``HARBOR_RUNS_DIR/<run>/bundle.tar.gz`` (``exchange.services.harbor_runs``).
"""

from pathlib import Path

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def mark_harbor_exports(apps, schema_editor):
    ExportJob = apps.get_model("exchange", "ExportJob")
    EvaluationRun = apps.get_model("evaluation", "EvaluationRun")
    runs_dir = getattr(settings, "HARBOR_RUNS_DIR", None)
    if not runs_dir:
        return
    runs_dir = Path(runs_dir)
    for pk, out_path in ExportJob.objects.exclude(out_path="").values_list("pk", "out_path"):
        path = Path(out_path)
        folder = path.parent
        if path.name != "bundle.tar.gz" or folder.parent != runs_dir or not folder.name.isdigit():
            continue
        if EvaluationRun.objects.filter(pk=int(folder.name)).exists():
            ExportJob.objects.filter(pk=pk).update(harbor_run_id=int(folder.name))


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0009_excluded_tries"),
        ("exchange", "0007_export_llm_judge"),
    ]

    operations = [
        migrations.AddField(
            model_name="exportjob",
            name="harbor_run",
            field=models.ForeignKey(
                blank=True,
                help_text="The Harbor run that exported its own tasks (internally), if any",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="evaluation.evaluationrun",
            ),
        ),
        migrations.RunPython(mark_harbor_exports, migrations.RunPython.noop),
    ]
