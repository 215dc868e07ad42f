"""Harbor trials the release leaves out of every figure, stored with why (issue 44, item 6)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0008_selection_two_models"),
        ("hilbench_annotate", "0010_revision_sessions_and_summaries"),
    ]

    operations = [
        migrations.CreateModel(
            name="ExcludedTry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "mode",
                    models.CharField(
                        choices=[
                            ("baseline", "baseline (blocked task)"),
                            ("full_info", "full_info (blocked task + resolutions)"),
                            ("ask_human", "ask_human (blocked task + ask_human tool)"),
                        ],
                        max_length=10,
                    ),
                ),
                (
                    "trial",
                    models.CharField(help_text="The Harbor trial's folder name", max_length=200),
                ),
                (
                    "reason",
                    models.CharField(
                        choices=[("agent_error", "agent error"), ("infra_error", "infra error")],
                        max_length=12,
                    ),
                ),
                (
                    "exception",
                    models.CharField(
                        blank=True, help_text="Harbor's exception type", max_length=200
                    ),
                ),
                ("message", models.TextField(blank=True)),
                (
                    "reward",
                    models.FloatField(
                        blank=True, help_text="The verifier's, not counted", null=True
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="excluded_tries",
                        to="evaluation.evaluationrun",
                    ),
                ),
                (
                    "task",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="excluded_tries",
                        to="hilbench_annotate.task",
                    ),
                ),
            ],
            options={
                "ordering": ["run", "task", "mode", "id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "trial"), name="one_excluded_try_per_trial"
                    )
                ],
            },
        ),
    ]
