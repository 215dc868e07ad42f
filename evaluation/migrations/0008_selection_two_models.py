"""The pass-rate gate asks for two distinct models by default (issue 43), and a lead who
lowers it below two records why.

Existing policies: every one at 1 becomes 2. Until now 1 was the default the form carried
over, and no reason could be recorded, so none of them was lowered on purpose in the sense
this change gives it; a lead who wants one model lowers it again, with the reason. Policies
asking for 2 or more are left as they are."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def two_models_where_one_was_the_default(apps, schema_editor) -> int:
    SelectionPolicy = apps.get_model("evaluation", "SelectionPolicy")
    return SelectionPolicy.objects.filter(min_models__lt=2).update(min_models=2)


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0007_harbor_run_internet"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="selectionpolicy",
            name="min_models_lowered_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="selectionpolicy",
            name="min_models_lowered_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="selectionpolicy",
            name="min_models_reason",
            field=models.TextField(blank=True),
        ),
        migrations.AlterField(
            model_name="modelendpoint",
            name="model",
            field=models.CharField(
                help_text="The model the server serves, by the name it expects (e.g. gpt-4o, "
                "meta-llama/Llama-3.3-70B-Instruct): its runs count in the pass-rate gate as "
                "this model",
                max_length=200,
            ),
        ),
        migrations.AlterField(
            model_name="selectionpolicy",
            name="min_models",
            field=models.PositiveSmallIntegerField(
                default=2,
                help_text="Distinct models (by the model each run's endpoint serves, or the "
                "name given at import) with k passes in both modes needed to decide; below 2 "
                "only with a reason",
            ),
        ),
        migrations.RunPython(two_models_where_one_was_the_default, migrations.RunPython.noop),
    ]
