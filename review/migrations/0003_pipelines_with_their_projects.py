"""Every project without a pipeline gets the default one now: a project's pipeline is made
with the project (``review.apps``), no longer the first time a page reads it."""

from django.db import migrations

from review.models import DEFAULT_REJECT_REASONS
from review.pipeline import DEFAULT_LAYERS


def pipelines_for_every_project(apps, schema_editor) -> int:
    Project = apps.get_model("hilbench_annotate", "Project")
    ReviewLayer = apps.get_model("review", "ReviewLayer")
    ReviewPolicy = apps.get_model("review", "ReviewPolicy")
    made = 0
    for project in Project.objects.exclude(pk__in=ReviewLayer.objects.values("project_id")):
        ReviewPolicy.objects.get_or_create(
            project=project, defaults={"reject_reasons": DEFAULT_REJECT_REASONS}
        )
        for position, layer in enumerate(DEFAULT_LAYERS, start=1):
            ReviewLayer.objects.create(project=project, position=position, **layer)
        made += 1
    return made


class Migration(migrations.Migration):
    dependencies = [("review", "0002_final_sign_off_judge_recall")]

    operations = [migrations.RunPython(pipelines_for_every_project, migrations.RunPython.noop)]
