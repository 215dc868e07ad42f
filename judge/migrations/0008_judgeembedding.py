from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("judge", "0007_validationquestion_retired_at")]

    operations = [
        migrations.CreateModel(
            name="JudgeEmbedding",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(max_length=60)),
                ("digest", models.CharField(help_text="sha256 of the text", max_length=64)),
                ("vector", models.BinaryField(help_text="float32, normalised")),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("model", "digest"), name="judge_embedding_unique")
                ],
            },
        ),
    ]
