"""When a held-out question was retired (its wording became a trigger question): the recall
counts it as a miss until a question written after that replaces it (judge.floor). Questions
retired before this column existed get the time of the upgrade: only questions written from
then on replace them."""

from django.db import migrations, models
from django.utils import timezone


def retired_now(apps, schema_editor):
    ValidationQuestion = apps.get_model("judge", "ValidationQuestion")
    ValidationQuestion.objects.filter(split="retired", retired_at=None).update(
        retired_at=timezone.now()
    )


class Migration(migrations.Migration):
    dependencies = [("judge", "0006_issue19_ask_human_session")]

    operations = [
        migrations.AddField(
            model_name="validationquestion",
            name="retired_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(retired_now, migrations.RunPython.noop),
    ]
