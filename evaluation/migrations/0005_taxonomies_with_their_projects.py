"""Every project without a failure taxonomy gets the default one now: it is made with the
project (``evaluation.apps``), no longer the first time a page reads it."""

from django.db import migrations

from evaluation.services.failures import DEFAULT_TAXONOMY


def taxonomies_for_every_project(apps, schema_editor) -> int:
    Project = apps.get_model("hilbench_annotate", "Project")
    TaxonomyEntry = apps.get_model("evaluation", "TaxonomyEntry")
    made = 0
    for project in Project.objects.exclude(pk__in=TaxonomyEntry.objects.values("project_id")):
        TaxonomyEntry.objects.bulk_create(
            TaxonomyEntry(
                project=project,
                axis=axis,
                key=key,
                name=name,
                definition=definition,
                examples=examples,
                position=position,
            )
            for position, (axis, key, name, definition, examples) in enumerate(DEFAULT_TAXONOMY)
        )
        made += 1
    return made


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0004_job_kit")]

    operations = [migrations.RunPython(taxonomies_for_every_project, migrations.RunPython.noop)]
