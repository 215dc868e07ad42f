"""The task list's search words (``TaskSearchText``), filled for the tasks there are.

Comments and decisions (review's) are not read here: a migration of core does not depend on
review's; ``manage.py search_text_rebuild`` adds them (docs/operator-guide.md)."""

import django.db.models.deletion
from django.db import migrations, models

from hilbench_annotate.search_sources import search_words


def _spec_texts(spec):
    return [v for v in spec.values() if isinstance(v, str)] if isinstance(spec, dict) else []


def backfill(apps, schema_editor):
    Task = apps.get_model("hilbench_annotate", "Task")
    Blocker = apps.get_model("hilbench_annotate", "Blocker")
    TriggerQuestion = apps.get_model("hilbench_annotate", "TriggerQuestion")
    TaskSearchText = apps.get_model("hilbench_annotate", "TaskSearchText")
    ids = list(Task.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        texts = {}
        for pk, title, source_id, db_id, repo, blocked, original in Task.objects.filter(
            pk__in=chunk
        ).values_list(
            "pk",
            "title",
            "source_id",
            "sql_environment__db_id",
            "swe_environment__repo_name",
            "blocked_spec",
            "original_spec",
        ):
            texts[pk] = [title, source_id, db_id or "", repo or ""]
            texts[pk] += _spec_texts(blocked) + _spec_texts(original)
        for task_id, key, description, resolution in Blocker.objects.filter(
            task_id__in=chunk
        ).values_list("task_id", "key", "description", "resolution"):
            texts[task_id] += [key, description, resolution]
        for task_id, text in TriggerQuestion.objects.filter(blocker__task_id__in=chunk).values_list(
            "blocker__task_id", "text"
        ):
            texts[task_id].append(text)
        TaskSearchText.objects.bulk_create(
            TaskSearchText(task_id=pk, text=search_words(t)) for pk, t in texts.items()
        )


class Migration(migrations.Migration):
    dependencies = [
        ("hilbench_annotate", "0011_description_encodings"),
    ]

    operations = [
        migrations.CreateModel(
            name="TaskSearchText",
            fields=[
                (
                    "task",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="search_text",
                        serialize=False,
                        to="hilbench_annotate.task",
                    ),
                ),
                ("text", models.TextField(blank=True)),
            ],
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
