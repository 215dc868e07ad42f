"""A finished export keeps a summary of its report (issue 46): a read of the job shows it and
never decodes the report's list of every task written (20 MB for 50,000 tasks)."""

from django.db import migrations, models


HEAD = 200  # exchange.models.REPORT_HEAD when this was written


def summary(report: dict) -> dict:
    """exchange.models.export_report_summary as it was, frozen here."""
    exported, skipped = report.get("exported") or [], report.get("skipped") or []
    return {
        **report,
        "exported": exported[:HEAD],
        "skipped": skipped[:HEAD],
        "exported_count": len(exported),
        "skipped_count": len(skipped),
    }


def summarize(apps, schema_editor):
    ExportJob = apps.get_model("exchange", "ExportJob")
    for job in ExportJob.objects.filter(status="succeeded").only("pk", "report").iterator():
        ExportJob.objects.filter(pk=job.pk).update(summary=summary(job.report))


class Migration(migrations.Migration):
    dependencies = [("exchange", "0008_export_made_by_harbor_run")]

    operations = [
        migrations.AddField(
            model_name="exportjob",
            name="summary",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(summarize, migrations.RunPython.noop),
    ]
